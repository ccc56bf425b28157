// analysis.cpp: see analysis.h.
#include "harness/base/analysis.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace balerbench {

double zeus_cost(double eta, double energy_j, double time_s, double max_power_w) {
  if (!(eta >= 0 && eta <= 1)) throw std::invalid_argument("zeus_cost: eta must be in [0, 1]");
  return eta * energy_j + (1 - eta) * max_power_w * time_s;
}

double student_t95(std::size_t dof) {
  static const double kTable[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                  2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                                  2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (dof == 0) return 0;
  if (dof <= 30) return kTable[dof - 1];
  if (dof <= 60) return 2.042 - 0.042 * (static_cast<double>(dof) - 30) / 30;   // to 2.000 at 60
  if (dof <= 120) return 2.000 - 0.020 * (static_cast<double>(dof) - 60) / 60;  // to 1.980 at 120
  return 1.960;
}

Summary summarize(std::vector<double> v) {
  Summary s;
  s.n = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.max = v.back();
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(s.n);
  s.median = s.n % 2 ? v[s.n / 2] : 0.5 * (v[s.n / 2 - 1] + v[s.n / 2]);
  if (s.n > 1) {
    double ss = 0;
    for (double x : v) ss += (x - s.mean) * (x - s.mean);
    s.stddev = std::sqrt(ss / static_cast<double>(s.n - 1));
    s.ci95_half_width = student_t95(s.n - 1) * s.stddev / std::sqrt(static_cast<double>(s.n));
  }
  return s;
}

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
