// pareto.h: the time-energy Pareto frontier of a set of runs, and the frontier in any number of
// figures (energy, error, compressed size), each to be made smaller.
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

// The indices of `points` (each the same number of figures, all to be minimised) that no other point
// dominates (at most as large in every figure and smaller in one), in `points`' order. Equal points
// are all kept.
std::vector<std::size_t> pareto_front(const std::vector<std::vector<double>>& points);

}  // namespace balerbench
