// baler_log.h: Baler's own timings, read from its console output.
//
// Baler writes no log file; it prints, and a user keeps that with `| tee`:
//   training:    "<t> minutes"                      (after the last epoch: the epochs' loop only)
//   compress:    "Compression took: <t> minutes"    (loading, normalizing, the model, encoding; not the write)
//   decompress:  "Decompression took: <t> minutes"  (loading, the model, decoding, de-normalizing; not the write)
// each to three significant digits (f"{t:.3}"). tqdm's bars on the same stream (2>&1) are skipped.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace balerbench {

struct BalerTiming {
  double duration_s = 0;
  std::string log;  // the file it came from
};

struct BalerTimings {
  std::optional<BalerTiming> train, compress, decompress;
  nlohmann::json to_json() const;
};

// The timings in one log's text (the last of each kind).
BalerTimings parse_baler_log(const std::string& text, const std::string& log_name);
// Over several logs, the newest file (by modification time) that has each timing wins.
BalerTimings read_baler_timings(const std::vector<std::filesystem::path>& logs);
// The project's own logs: every *.log in output/, by name.
std::vector<std::filesystem::path> project_logs(const std::filesystem::path& output_dir);

}  // namespace balerbench
