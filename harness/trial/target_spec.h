// target_spec.h: an experiment's /target, the metric and value that time to accuracy (TTA) and
// energy to accuracy (ETA) are measured to, and whether a trial stops once it reaches it.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace balerbench {

struct TargetSpec {
  std::string metric;  // "" (none) | "val_loss" | "relative_error"
  double value = 0;
  bool stop_when_reached = false;
  bool enabled() const { return !metric.empty(); }
  nlohmann::json to_json() const;
};

// /target of `source`: exactly one of "val_loss" and "relative_error" (a number >= 0), and
// "stop_when_reached". InputError naming the JSON path otherwise.
TargetSpec parse_target_spec(const nlohmann::json& j, const std::string& source);

}  // namespace balerbench
