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

namespace {

bool dominates(const std::vector<double>& a, const std::vector<double>& b) {
  bool smaller = false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] > b[i]) return false;
    smaller = smaller || a[i] < b[i];
  }
  return smaller;
}

}  // namespace

std::vector<std::size_t> pareto_front(const std::vector<std::vector<double>>& points) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < points.size(); ++i) {
    bool dominated = false;
    for (std::size_t j = 0; j < points.size() && !dominated; ++j) dominated = j != i && dominates(points[j], points[i]);
    if (!dominated) out.push_back(i);
  }
  return out;
}

}  // namespace balerbench
