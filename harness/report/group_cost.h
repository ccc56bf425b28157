// group_cost.h: what Zeus's cost of one configuration is made of: its mean time and energy (to the
// target when the experiment has one, else of the whole training) and its MaxPower, or why it has
// no cost. The axis tables give each configuration's cost; the cost table picks the cheapest.
#pragma once

#include <string>

#include "harness/report/trial_groups.h"

namespace balerbench::report {

struct CostInputs {
  bool ok = false;
  double time_s = 0, energy_j = 0, max_power_w = 0;
  std::string why;  // when not ok: "target not reached", "no MaxPower (set cost.max_power_w)", ...
};
CostInputs cost_inputs(const Group& g, bool target);

}  // namespace balerbench::report
