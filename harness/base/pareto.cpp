// pareto.cpp: see pareto.h.
#include "harness/base/pareto.h"

#include <algorithm>
#include <cmath>

namespace balerbench {

std::vector<ParetoPoint> pareto_frontier(const std::vector<ParetoPoint>& points) {
  std::vector<ParetoPoint> sorted = points;
  std::sort(sorted.begin(), sorted.end(), [](const ParetoPoint& a, const ParetoPoint& b) {
    return a.time_s != b.time_s ? a.time_s < b.time_s : a.energy_j < b.energy_j;
  });
  std::vector<ParetoPoint> out;
  double best_energy = INFINITY;
  for (const auto& p : sorted) {
    if (p.energy_j < best_energy) {
      out.push_back(p);
      best_energy = p.energy_j;
    }
  }
  return out;
}

}  // namespace balerbench
