// baler_log.cpp: see baler_log.h.
#include "harness/baler/baler_log.h"

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>

#include "common/error.h"

namespace balerbench {
namespace {

namespace fs = std::filesystem;

nlohmann::json timing_json(const std::optional<BalerTiming>& t) {
  if (!t) return nullptr;
  return {{"duration_s", t->duration_s}, {"log", t->log}};
}

}  // namespace

nlohmann::json BalerTimings::to_json() const {
  return {{"train", timing_json(train)}, {"compress", timing_json(compress)}, {"decompress", timing_json(decompress)}};
}

BalerTimings parse_baler_log(const std::string& text, const std::string& log_name) {
  static const std::regex kNumber("[0-9]+(\\.[0-9]*)?([eE][-+]?[0-9]+)?");
  static const std::regex kTrain("^\\s*([0-9][0-9.eE+-]*) minutes\\s*$");
  static const std::regex kCodec("^\\s*(Compression|Decompression) took: ([0-9][0-9.eE+-]*) minutes\\s*$");
  BalerTimings t;
  std::string line;
  std::istringstream in(text);
  while (std::getline(in, line)) {
    // A tqdm bar redraws with \r on the same line: the text after the last \r is what was left.
    std::string last = line.substr(line.find_last_of('\r') == std::string::npos ? 0 : line.find_last_of('\r') + 1);
    std::smatch m;
    if (std::regex_match(last, m, kTrain) && std::regex_match(m[1].str(), kNumber)) {
      t.train = BalerTiming{60.0 * std::stod(m[1].str()), log_name};
    } else if (std::regex_match(last, m, kCodec) && std::regex_match(m[2].str(), kNumber)) {
      (m[1] == "Compression" ? t.compress : t.decompress) = BalerTiming{60.0 * std::stod(m[2].str()), log_name};
    }
  }
  return t;
}

BalerTimings read_baler_timings(const std::vector<fs::path>& logs) {
  std::vector<std::pair<fs::file_time_type, fs::path>> by_time;
  for (const fs::path& p : logs) {
    std::error_code ec;
    const auto t = fs::last_write_time(p, ec);
    if (ec) throw InputError(p.string() + ": cannot read Baler's log: " + ec.message(), "check --baler-log");
    by_time.emplace_back(t, p);
  }
  std::stable_sort(by_time.begin(), by_time.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  BalerTimings out;
  for (const auto& [t, p] : by_time) {  // oldest first: a newer log's timing replaces an older one's
    std::ifstream in(p, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    const BalerTimings one = parse_baler_log(text.str(), p.string());
    if (one.train) out.train = one.train;
    if (one.compress) out.compress = one.compress;
    if (one.decompress) out.decompress = one.decompress;
  }
  return out;
}

std::vector<fs::path> project_logs(const fs::path& output_dir) {
  std::vector<fs::path> logs;
  std::error_code ec;
  for (fs::directory_iterator it(output_dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file() && it->path().extension() == ".log") logs.push_back(it->path());
  std::sort(logs.begin(), logs.end());
  return logs;
}

}  // namespace balerbench
