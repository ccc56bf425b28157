// baler_energy.cpp: see baler_energy.h.
#include "harness/baler/baler_energy.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <system_error>

#include "common/error.h"

namespace balerbench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr char kHint[] =
    "write it with balerbench measure --json FILE -- python3 -m baler --mode MODE --project WS P";

json read_json(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return json(nullptr);
  return json::parse(in, nullptr, false);
}

// The --mode of a Baler command line, "" when it has none.
std::string mode_of(const json& command) {
  if (!command.is_array()) return "";
  for (std::size_t i = 0; i < command.size(); ++i) {
    if (!command[i].is_string()) continue;
    const std::string arg = command[i].get<std::string>();
    if (arg == "--mode" && i + 1 < command.size() && command[i + 1].is_string()) return command[i + 1].get<std::string>();
    if (arg.rfind("--mode=", 0) == 0) return arg.substr(7);
  }
  return "";
}

bool names_baler(const json& command) {
  return command.is_array() && std::any_of(command.begin(), command.end(), [](const json& a) {
           return a.is_string() && a.get<std::string>().find("baler") != std::string::npos;
         });
}

// One measure --json file: its mode and energy, or why it is not a measurement of Baler.
json measured(const fs::path& path, std::string& why) {
  const json j = read_json(path);
  const json& total = j.is_object() ? j.value("total", json()) : json();
  if (!total.is_object() || !total.value("total_energy_j", json()).is_number() || !j.contains("command")) {
    why = "not a file of balerbench measure --json";
    return nullptr;
  }
  const std::string mode = mode_of(j["command"]);
  if (!names_baler(j["command"]) || (mode != "train" && mode != "compress" && mode != "decompress")) {
    why = "a measurement of '" + j.value("command_line", std::string("?")) +
          "', not of Baler's train, compress or decompress";
    return nullptr;
  }
  if (j.value("exit_code", json()) != json(0)) {
    why = "Baler's " + mode + " did not end with exit code 0 there";
    return nullptr;
  }
  return {{"mode", mode}, {"energy_j", total["total_energy_j"]}, {"energy_kind", total.value("energy_kind", "?")},
          {"duration_s", total.value("duration_s", json())}, {"end_unix_s", total.value("end_unix_s", 0.0)},
          {"file", path.string()}};
}

}  // namespace

json baler_measured_energy(const std::vector<fs::path>& files, bool explicit_files) {
  json out = {{"notes", json::array()}};
  for (const fs::path& f : files) {
    std::string why;
    json m = measured(f, why);
    if (m.is_null()) {
      if (explicit_files) throw InputError("--baler-measure " + f.string() + ": " + why, kHint);
      out["notes"].push_back(f.string() + ": left out, " + why);
      continue;
    }
    const std::string mode = m["mode"].get<std::string>();
    if (out.contains(mode)) {
      const bool newer = m["end_unix_s"].get<double>() > out[mode]["end_unix_s"].get<double>();
      out["notes"].push_back("two measurements of Baler's " + mode + ": " +
                             (newer ? out[mode]["file"] : m["file"]).get<std::string>() + " left out, " +
                             (newer ? m["file"] : out[mode]["file"]).get<std::string>() + " kept (the newer)");
      if (!newer) continue;
    }
    m.erase("mode");
    out[mode] = m;
  }
  return out;
}

std::vector<fs::path> project_measures(const fs::path& output) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (fs::directory_iterator it(output, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (it->is_regular_file() && name.size() > 13 && name.compare(name.size() - 13, 13, ".measure.json") == 0)
      files.push_back(it->path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

json report_energy(const fs::path& report) {
  const json j = read_json(report);
  if (!j.is_object() || !j.contains("energy") || !j["energy"].is_object()) return nullptr;
  const json& total = j["energy"].value("total", json());
  if (!total.is_object() || !total.value("total_energy_j", json()).is_number()) return nullptr;
  return {{"energy_j", total["total_energy_j"]}, {"energy_kind", total.value("energy_kind", "?")}};
}

}  // namespace balerbench
