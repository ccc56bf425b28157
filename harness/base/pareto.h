// pareto.h: the time-energy Pareto frontier of a set of runs.
#pragma once

#include <cstddef>
#include <vector>

namespace balerbench {

struct ParetoPoint {
  double time_s = 0, energy_j = 0;
  std::size_t id = 0;  // caller's index
};
// Points not dominated by any other (no other is at least as fast and as
// frugal and strictly better in one), sorted by time.
std::vector<ParetoPoint> pareto_frontier(const std::vector<ParetoPoint>& points);

}  // namespace balerbench
