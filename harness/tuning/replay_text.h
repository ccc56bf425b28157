// replay_text.h: the words and numbers replay's errors, notes and tables are made of (replay.h): a
// number as a stream writes it, a list of them, a workload's name, the GPU a power trace measured,
// and a table cell's number or saving (null where there is none).
#pragma once

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "common/text.h"

namespace balerbench {

// `v` as an ostream writes it by default: 0.6, 250, 1e-05.
inline std::string num_text(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// "cifar100/shufflenetv2/adadelta".
inline std::string workload_name(const std::string& dataset, const std::string& network, const std::string& optimizer) {
  return dataset + "/" + network + "/" + optimizer;
}

// The GPU a power trace measured: "v100" from summary_power_v100.csv, else the file's stem.
inline std::string gpu_of(const std::string& power_file) {
  const std::string stem = std::filesystem::path(power_file).stem().string();
  const std::string prefix = "summary_power_";
  return stem.rfind(prefix, 0) == 0 && stem.size() > prefix.size() ? stem.substr(prefix.size()) : stem;
}

// A table cell's number: null when it is not finite.
inline nlohmann::json num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }
// 100 x (1 - a / b): what a saves against b, in percent (null without a b).
inline nlohmann::json saving(double a, double b) {
  return b > 0 ? num(100.0 * (1.0 - a / b)) : nlohmann::json(nullptr);
}

}  // namespace balerbench
