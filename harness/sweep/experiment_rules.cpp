// experiment_rules.cpp: see experiment_rules.h.
#include "harness/sweep/experiment_rules.h"

#include <algorithm>

#include "common/error.h"

namespace balerbench {

void check_power_limit_rules(const Experiment& e, const std::string& source) {
  const bool sets_limits =
      std::any_of(e.power_limits_w.begin(), e.power_limits_w.end(), [](const auto& w) { return w.has_value(); });
  if ((sets_limits || e.optimizer.enabled) && !e.allow_power_limit_changes)
    throw InputError(source + ": /allow_power_limit_changes: the experiment " +
                         (sets_limits ? std::string("lists power limits in /sweep/power_limit_w")
                                      : std::string("enables /power_limit_optimizer")) +
                         " but does not allow changing them",
                     "add \"allow_power_limit_changes\": true (the original limits are restored after every trial), "
                     "or use [null] to run at the limit in force");
  if (e.optimizer.enabled && !e.base.energy.enabled)
    throw InputError(source + ": /power_limit_optimizer: the optimiser weighs measured energy against time, "
                              "but /energy/enabled is false",
                     "remove \"enabled\": false from /energy, or disable the optimiser");
  if (e.optimizer.enabled && sets_limits)
    throw InputError(source + ": /power_limit_optimizer: the optimiser chooses the limit itself",
                     "set /sweep/power_limit_w to [null] when the optimiser is enabled");
}

// Each attempt trains at most /sweep/epochs, to the target.
void check_batch_size_optimizer_rules(Experiment& e, const std::string& source) {
  const BatchSizeOptimizerSpec& s = e.batch_size_optimizer;
  if (!s.enabled) return;
  const std::string at = source + ": /batch_size_optimizer: ";
  auto refuse = [&](const std::string& what, const std::string& hint) { throw InputError(at + what, hint); };
  if (s.default_batch_size == 0)
    refuse("needs the job's default batch size",
           "add \"default_batch_size\": one of /sweep/batch_size, the batch size the job runs without the optimiser");
  if (std::find(e.batch_sizes.begin(), e.batch_sizes.end(), s.default_batch_size) == e.batch_sizes.end())
    refuse("default_batch_size " + std::to_string(s.default_batch_size) + " is not in /sweep/batch_size",
           "the batch sizes the optimiser chooses from include the default");
  if (!e.target.enabled())
    refuse("the recurrences need a target: each attempt trains until it reaches it",
           "add a /target, e.g. {\"relative_error\": 0.05}");
  if (e.raw.contains("target") && e.raw["target"].contains("stop_when_reached") && !e.target.stop_when_reached)
    refuse("each attempt stops at the target, but /target/stop_when_reached is false", "remove it, or set it to true");
  e.target.stop_when_reached = true;
  if (!e.base.energy.enabled)
    refuse("the optimiser weighs measured energy against time, but /energy/enabled is false",
           "remove \"enabled\": false from /energy");
  if (e.precisions.size() != 1 || e.engines.size() != 1 || e.epochs.size() != 1)
    refuse("/sweep lists several precisions, engines or epoch counts",
           "the recurrences vary the batch size only: one precision, one engine, and one epochs value (the most a "
           "recurrence's attempt trains)");
  if (e.models.size() != 1 || e.compression_ratios.size() != 1)
    refuse("/sweep lists several models or compression ratios",
           "the recurrences vary the batch size only: run one experiment per model and compression ratio");
  if (e.repeats != 1) refuse("/sweep/repeats is " + std::to_string(e.repeats), "the recurrences are the repeats: remove it");
  if (e.power_limits_w.size() != 1 || e.power_limits_w.front())
    refuse("/sweep/power_limit_w lists limits",
           "the power limit is chosen just in time by /power_limit_optimizer (enable it on GPUs), or left as it is: "
           "use [null]");
  if (e.order == "shuffled")
    refuse("/sweep/order is shuffled", "the recurrences run in their own order, one after another: remove it");
  if (e.warmup_trials != 0)
    refuse("/sweep/warmup_trials is not run with the batch-size optimiser",
           "run a warm-up experiment first, or remove it (the first recurrence starts at the default batch size)");
}

}  // namespace balerbench
