// group_cost.h: what Zeus's cost of one configuration is made of: its mean time and energy (to the
// target when the experiment has one, else of the whole training) and its MaxPower, or why it has
// no cost. The axis tables give each configuration's cost; the cost table picks the cheapest. Also
// the configurations the time-energy Pareto frontier is drawn from (the cost_pareto table and the
// HTML report's time-energy figure).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "harness/base/pareto.h"

#include "harness/report/trial_groups.h"

namespace balerbench::report {

struct CostInputs {
  bool ok = false;
  double time_s = 0, energy_j = 0, max_power_w = 0;
  std::string max_power_source;  // where MaxPower came from (max_power_source_of), "-" when not recorded
  std::string why;  // when not ok: "target not reached", "no MaxPower (set cost.max_power_w)", ...
};
CostInputs cost_inputs(const Group& g, bool target);

// Where a trial's MaxPower came from (result.max_power.source), in words: "the GPU's maximum power
// limit (NVML)", "cost.max_power_w", "the simulated GPU's maximum limit", "the power-limit optimiser's
// highest limit"; "-" when not recorded (a trial from before it was).
std::string max_power_source_of(const TrialRecord& r);

// A trial's time and energy for the frontier: to the target when the experiment has one (none when
// this trial missed it), else of the whole training.
std::optional<double> pareto_time_s(const TrialRecord& r, bool target);
std::optional<double> pareto_energy_j(const TrialRecord& r, bool target);
// Every configuration (index into `groups`) whose repeats all have that time and energy, at their
// means; unlike the cost, the frontier needs no MaxPower.
std::vector<ParetoPoint> pareto_candidates(const std::vector<Group>& groups, bool target);

}  // namespace balerbench::report
