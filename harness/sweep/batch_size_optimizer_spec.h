// batch_size_optimizer_spec.h: an experiment's /batch_size_optimizer, Zeus's batch-size optimiser
// over the job's recurrences (tuning/recurrence_tuner.h), with Zeus's defaults.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace balerbench {

// The batch sizes are /sweep/batch_size, each attempt trains for at most /sweep/epochs and stops at
// the target. The power limit is chosen just in time by /power_limit_optimizer when it is enabled
// (GPUs whose limits NVML can set); otherwise the attempts run at the limit in force ("no power
// limit": a CPU).
struct BatchSizeOptimizerSpec {
  bool enabled = false;
  int64_t default_batch_size = 0;      // the job's batch size without the optimiser: the first attempt's
  std::optional<int64_t> recurrences;  // else 2 x |batch sizes| x |power limits| (the paper)
  double eta = 0.5, beta = 2.0;        // the cost's weight of energy; early stop at beta x the cheapest
  int64_t seed = 1;
  int64_t max_attempts = 20;  // per recurrence
  int64_t pruning_rounds = 2;
  int64_t window = 0;  // observations per arm (0: all)
  nlohmann::json to_json() const;
};

// /batch_size_optimizer of `source`: each key alone (beta a number above 1 or "inf"); each absent
// key keeps its default. InputError naming the JSON path otherwise. What it must agree with elsewhere
// in the file (the sweep's axes, the target, energy) is checked by experiment_rules.h, once every section is read.
BatchSizeOptimizerSpec parse_batch_size_optimizer_spec(const nlohmann::json& j, const std::string& source);

}  // namespace balerbench
