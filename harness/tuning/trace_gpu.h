// trace_gpu.h: the just-in-time power-limit profile of one batch size in a replay (replay.h): the
// power-limit optimiser (power/optimizer.h), driven through its live interface on a GPU made of the
// batch size's trace rows, and the check beside it (the limit whose row costs least per epoch).
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "harness/tuning/replay.h"

namespace balerbench {

// What the profile chose, and the profiling epoch's time and energy (an equal share at each limit).
struct Profile {
  double chosen_w = 0, epoch_time_s = 0, epoch_energy_j = 0;
  nlohmann::json optimizer;  // PowerLimitOptimizer::to_json()
};

// The power-limit optimiser, on a GPU made of `points` (highest limit first), profiles every limit
// for an equal share of one epoch (no wait, no warm-up: the trace has no warm-up effects), highest
// first, and chooses the cheapest at `eta`.
Profile profile_limits(const std::vector<PowerPoint>& points, double eta);

// The limit whose row costs least per epoch (ties: the highest), at the batch size's MaxPower (its
// highest limit).
double trace_optimum(const std::vector<PowerPoint>& points, double eta);

}  // namespace balerbench
