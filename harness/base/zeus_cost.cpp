// zeus_cost.cpp: see zeus_cost.h.
#include "harness/base/zeus_cost.h"

#include <stdexcept>

namespace balerbench {

double zeus_cost(double eta, double energy_j, double time_s, double max_power_w) {
  if (!(eta >= 0 && eta <= 1)) throw std::invalid_argument("zeus_cost: eta must be in [0, 1]");
  return eta * energy_j + (1 - eta) * max_power_w * time_s;
}

}  // namespace balerbench
