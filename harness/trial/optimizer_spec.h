// optimizer_spec.h: an experiment's /power_limit_optimizer, Zeus's GlobalPowerLimitOptimizer (the
// power limit chosen while a trial trains, from profiled steps), with Zeus's defaults.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace balerbench {

struct OptimizerSpec {  // Zeus' GlobalPowerLimitOptimizer defaults
  bool enabled = false;
  double eta = 0.5;
  int64_t wait_steps = 1, warmup_steps = 10, profile_steps = 40;
  double pl_step_w = 25;
  nlohmann::json to_json() const;
};

// /power_limit_optimizer of `source`: enabled, eta in [0, 1], wait_steps, warmup_steps,
// profile_steps and pl_step_w (W); each absent key keeps its default. InputError naming the JSON
// path otherwise. What it must agree with elsewhere in the file is checked by experiment_rules.h, once every section is read.
OptimizerSpec parse_optimizer_spec(const nlohmann::json& j, const std::string& source);

}  // namespace balerbench
