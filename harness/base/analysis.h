// analysis.h: the arithmetic behind the reports: Zeus' cost, statistics over
// repeats, and the time-energy Pareto frontier.
//
// Zeus (ENERGY_METHODS.md): cost = eta * ETA + (1 - eta) * MaxPower * TTA, with
// ETA in J, TTA in s and MaxPower in W (the GPUs' maximum power limit x their
// count: it only converts seconds into joules), eta in [0, 1]; small eta
// favours time, large eta energy.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace balerbench {

double zeus_cost(double eta, double energy_j, double time_s, double max_power_w);

struct Summary {
  std::size_t n = 0;
  double mean = 0, median = 0, stddev = 0, min = 0, max = 0;
  double ci95_half_width = 0;  // Student t, two-sided 95%; 0 when n < 2
  double relative_spread() const { return mean != 0 ? (max - min) / mean : 0; }
};
Summary summarize(std::vector<double> values);

// Two-sided 95% Student t quantile for `dof` degrees of freedom (dof >= 1).
double student_t95(std::size_t dof);

struct ParetoPoint {
  double time_s = 0, energy_j = 0;
  std::size_t id = 0;  // caller's index
};
// Points not dominated by any other (no other is at least as fast and as
// frugal and strictly better in one), sorted by time.
std::vector<ParetoPoint> pareto_frontier(const std::vector<ParetoPoint>& points);

}  // namespace balerbench
