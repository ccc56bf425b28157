// side_by_side.cpp: see side_by_side.h.
#include "harness/baler/side_by_side.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "datasets/dataset.h"
#include "common/error.h"
#include "datasets/npz.h"
#include "harness/baler/baler_energy.h"
#include "harness/baler/baler_log.h"
#include "harness/baler/project_outputs.h"
#include "harness/run/result_sections.h"

namespace balerbench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const char* kModel = "compressed_output/model.pt";
const char* kCompressed = "compressed_output/compressed.npz";
const char* kDecompressed = "decompressed_output/decompressed.npz";
const char* kLoss = "training/loss_data.npy";
const char* kNorm = "training/normalization_features.npy";

// Backup folders, newest first (their names are UTC times).
std::vector<fs::path> backups_newest_first(const fs::path& output) {
  std::vector<fs::path> dirs;
  std::error_code ec;
  for (fs::directory_iterator it(output / "backup", ec), end; !ec && it != end; it.increment(ec))
    if (it->is_directory()) dirs.push_back(it->path());
  std::sort(dirs.rbegin(), dirs.rend());
  return dirs;
}

// rel -> the file holding Baler's (or balerbench's) version; absent when there is none.
std::map<std::string, fs::path> files_of(const fs::path& output, bool balerbench) {
  std::map<std::string, fs::path> found;
  const auto backups = balerbench ? std::vector<fs::path>{} : backups_newest_first(output);
  for (const std::string& rel : baler_cycle_files()) {
    const fs::path here = output / rel;
    const bool ours = written_by_balerbench(output, rel);
    if (balerbench) {
      if (ours) found[rel] = here;
      continue;
    }
    if (fs::is_regular_file(here) && !ours) {
      found[rel] = here;
      continue;
    }
    for (const fs::path& b : backups)
      if (fs::is_regular_file(b / rel)) {
        found[rel] = b / rel;
        break;
      }
  }
  return found;
}

json report_value(const fs::path& report, const char* key) {
  std::ifstream in(report);
  if (!in) return nullptr;
  const json j = json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains(key)) return nullptr;
  return j[key];
}

json side_json(const std::map<std::string, fs::path>& files, const Dataset& input, int64_t input_bytes) {
  json s = {{"files", json::object()}};
  for (const auto& [rel, p] : files) s["files"][rel] = p.string();
  auto bytes = [&](const char* rel) -> int64_t {
    auto it = files.find(rel);
    return it == files.end() ? -1 : static_cast<int64_t>(fs::file_size(it->second));
  };
  if (const int64_t compressed = bytes(kCompressed); compressed > 0) {
    int64_t meta = 0;
    for (const char* rel : {kModel, kLoss, kNorm}) meta += std::max<int64_t>(bytes(rel), 0);
    s["compressed_bytes"] = compressed;
    s["compression_ratio"] = static_cast<double>(input_bytes) / static_cast<double>(compressed);
    s["actual_compression_ratio"] = static_cast<double>(input_bytes) / static_cast<double>(compressed + meta);
    // The latent array's own bytes: what the model sets; the file adds its container (zip entries,
    // .npy headers, the other members), which Baler's NumPy and balerbench write differently.
    const NpzMembers members = read_npz(files.at(kCompressed).string());
    if (auto data = members.find("data"); data != members.end() && data->second.numel() > 0) {
      const auto latent = static_cast<double>(data->second.bytes.size());
      s["latent_bytes"] = latent;
      s["latent_compression_ratio"] = static_cast<double>(input_bytes) / latent;
      s["container_bytes"] = static_cast<double>(compressed) - latent;
    }
  }
  if (auto d = files.find(kDecompressed); d != files.end()) {
    const NpzMembers out = read_npz(d->second.string());
    auto data = out.find("data");
    if (data == out.end() || data->second.shape != input.original_shape)
      throw InputError(d->second.string() + ": its 'data' does not have the shape of the input file",
                       "was it decompressed from this project's input?");
    const at::Tensor y = npy_to_tensor(data->second).to(at::kDouble).reshape({input.rows(), input.features()});
    s["reconstruction"] = reconstruction_json(input, y);
  }
  return s;
}

double num(const json& j, const char* key) { return j.contains(key) && j[key].is_number() ? j[key].get<double>() : -1; }

std::string cell(double v, const char* fmt) {
  if (v < 0) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

// "12.3 J (estimated)", or "-".
std::string energy_cell(const json& e) {
  if (!e.is_object() || !e.value("energy_j", json()).is_number()) return "-";
  return cell(e["energy_j"].get<double>(), "%.4g") + " (" + e.value("energy_kind", std::string("?")) + ")";
}

// Each command's energy, Baler's as `balerbench measure` measured it, balerbench's from its report; the
// ratio only between two of the same kind (a measurement against an estimate says nothing).
std::string energy_rows(const json& baler, const json& ours) {
  std::string text;
  for (const char* mode : {"train", "compress", "decompress"}) {
    const json& b = baler.contains("energy") ? baler["energy"].value(mode, json()) : json();
    const json& t = ours["timings"][mode];
    const json& o = t.is_object() ? t.value("energy", json()) : json();
    const bool comparable = b.is_object() && o.is_object() && b.value("energy_kind", "") == o.value("energy_kind", "") &&
                            b["energy_j"].get<double>() > 0;
    text += std::string("| ") + mode + ", the whole command (J) | " + energy_cell(b) + " | " + energy_cell(o) + " | " +
            (comparable ? cell(o["energy_j"].get<double>() / b["energy_j"].get<double>(), "%.3g") : "-") + " |\n";
  }
  return text;
}

std::string energy_notes(const json& baler) {
  std::string text = "Energy: each side's whole command (Python's start and the files' reading and writing "
                     "included) with the meters this machine has, and whether measured or estimated; the ratio "
                     "only where both are of one kind. Baler's from `balerbench measure --json "
                     "output/baler_MODE.measure.json -- python3 -m baler --mode MODE --project WS P` (or "
                     "--baler-measure FILE).\n";
  if (baler.contains("energy"))
    for (const auto& n : baler["energy"]["notes"]) text += "  " + n.get<std::string>() + "\n";
  return text;
}

}  // namespace

const std::vector<std::string>& baler_cycle_files() {
  static const std::vector<std::string> f = {kModel, kCompressed, kDecompressed, kLoss, kNorm};
  return f;
}

json side_by_side(const BalerProject& p, const RunConfig& c, const std::vector<fs::path>& logs,
                  const std::vector<fs::path>& measures) {
  if (!fs::is_regular_file(c.input_path)) throw InputError(c.input_path + ": no such file", "check input_path");
  const Dataset input = load_dataset(c.input_path);
  const auto input_bytes = static_cast<int64_t>(fs::file_size(c.input_path));
  json baler = side_json(files_of(p.output, false), input, input_bytes);
  json ours = side_json(files_of(p.output, true), input, input_bytes);
  const BalerTimings t = read_baler_timings(logs.empty() ? project_logs(p.output) : logs);
  baler["timings"] = t.to_json();
  // balerbench's timings, from the reports beside its files (a report beside Baler's file is stale):
  // duration_s the span nearest Baler's logged one, command_s the whole command.
  json ours_t = {{"train", nullptr}, {"compress", nullptr}, {"decompress", nullptr}};
  const auto& f = ours["files"];
  auto timing = [&](const char* report, const char* span) -> json {
    const fs::path path = p.output / report;
    return {{"duration_s", report_value(path, span)}, {"command_s", report_value(path, "total_duration_s")},
            {"energy", report_energy(path)}, {"report", path.string()}};
  };
  baler["energy"] = baler_measured_energy(measures.empty() ? project_measures(p.output) : measures, !measures.empty());
  if (f.contains(kModel)) ours_t["train"] = timing("training/training_report.json", "train_s");
  if (f.contains(kCompressed)) ours_t["compress"] = timing("compressed_output/compress_report.json", "encode_duration_s");
  if (f.contains(kDecompressed))
    ours_t["decompress"] = timing("decompressed_output/decompress_report.json", "decode_duration_s");
  ours["timings"] = ours_t;
  return {{"command", "info"},
          {"project", p.dir.string()},
          {"input_path", c.input_path},
          {"input_bytes", input_bytes},
          {"baler", baler},
          {"balerbench", ours},
          {"logs", logs.empty() ? json(project_logs(p.output)) : json(logs)}};
}

std::string format_side_by_side(const json& r) {
  const json& b = r["baler"];
  const json& o = r["balerbench"];
  auto rec = [](const json& s, const char* key) {
    return s.contains("reconstruction") ? num(s["reconstruction"], key) : -1.0;
  };
  auto time_s = [](const json& s, const char* phase, const char* key = "duration_s") {
    const json& t = s["timings"][phase];
    return t.is_object() && t.contains(key) && t[key].is_number() ? t[key].get<double>() : -1.0;
  };
  auto mb = [](const json& s) { return num(s, "compressed_bytes") < 0 ? -1 : num(s, "compressed_bytes") / 1e6; };
  auto row = [](const char* name, double baler, double ours, const char* fmt, bool ratio = true) {
    return std::string("| ") + name + " | " + cell(baler, fmt) + " | " + cell(ours, fmt) + " | " +
           (ratio && baler > 0 && ours >= 0 ? cell(ours / baler, "%.3g") : "-") + " |\n";
  };
  // Baler logs one span per codec command; balerbench's report has the coding and the whole command.
  auto codec_row = [&](const char* name, const char* phase, const char* what) {
    std::string ours = cell(time_s(o, phase), "%.3g");
    if (time_s(o, phase, "command_s") >= 0) ours += " (" + std::string(what) + "), " + cell(time_s(o, phase, "command_s"), "%.3g") + " (command)";
    return std::string("| ") + name + " | " + cell(time_s(b, phase), "%.3g") + " | " + ours + " | - |\n";
  };
  std::string text = "Baler project " + r["project"].get<std::string>() + ": Baler beside balerbench, input " +
                     r["input_path"].get<std::string>() + "\n\n| | Baler | balerbench | balerbench / Baler |\n" +
                     "|---|---:|---:|---:|\n";
  text += row("compressed.npz (MB)", mb(b), mb(o), "%.4f");
  text += row("compression ratio", num(b, "compression_ratio"), num(o, "compression_ratio"), "%.3f");
  text += row("actual compression ratio", num(b, "actual_compression_ratio"), num(o, "actual_compression_ratio"), "%.3f");
  text += row("ratio of the latent array", num(b, "latent_compression_ratio"), num(o, "latent_compression_ratio"),
              "%.3f");
  text += row("compressed.npz besides it (bytes)", num(b, "container_bytes"), num(o, "container_bytes"), "%.0f");
  text += row("reconstruction RMSE", rec(b, "rmse"), rec(o, "rmse"), "%.4g");
  text += row("normalized RMSE", rec(b, "normalized_rmse"), rec(o, "normalized_rmse"), "%.4g");
  text += row("max abs error", rec(b, "max_abs_error"), rec(o, "max_abs_error"), "%.4g");
  text += row("train, the epochs (s)", time_s(b, "train"), time_s(o, "train"), "%.3g");
  text += codec_row("compress (s)", "compress", "encode");
  text += codec_row("decompress (s)", "decompress", "decode");
  text += energy_rows(b, o);
  text += "\nRatios: the input file's bytes over compressed.npz's (actual: with model.pt, the loss and the "
          "normalization file too). Where the two ratios differ while the latent arrays' agree, the difference is the "
          "file around the array (zip entries, .npy headers, the names and other members each side stores).\n";
  text += "Times: Baler's from its console logs, 3 significant digits; its compress and decompress span loading the "
          "data and the model, (de)normalizing and coding, not writing the file. balerbench's from its reports: the "
          "coding alone, and the whole command (loading, writing, energy meters).\n";
  text += energy_notes(b);
  if (b["files"].empty())
    text += "No files of Baler's in output/ or output/backup/: run Baler on this project first, e.g. "
            "`python3 -m baler --mode train --project WS P | tee workspaces/WS/P/output/baler_train.log`.\n";
  if (r["logs"].empty()) text += "No Baler logs (output/*.log, or --baler-log FILE): Baler's times are unknown.\n";
  for (const auto& [rel, path] : b["files"].items()) text += "Baler's " + rel + ": " + path.get<std::string>() + "\n";
  return text;
}

}  // namespace balerbench
