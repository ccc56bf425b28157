// energy_cross_check.cpp: the wall meter against the component meters (CrossCheck, energy_window.h):
// their ratio, what the wall sees that the components do not, whether the difference is resolved
// by their ±, and that in words. WindowResult::cross_check (energy_window.cpp) fills it.
#include <cmath>
#include <cstdio>

#include "harness/energy/energy_window.h"

namespace balerbench {

using nlohmann::json;

std::optional<double> CrossCheck::ratio() const {
  if (!(wall_j > 0)) return std::nullopt;
  return components_j / wall_j;
}

std::optional<double> CrossCheck::unseen_fraction() const {
  if (!(wall_j > 0)) return std::nullopt;
  return unseen_j() / wall_j;
}

std::optional<bool> CrossCheck::resolved() const {
  if (!wall_uncertainty_j || !components_uncertainty_j) return std::nullopt;
  return std::fabs(unseen_j()) > *wall_uncertainty_j + *components_uncertainty_j;
}

std::string CrossCheck::reading() const {
  char buf[400];
  const auto r = resolved();
  const double pct = unseen_fraction().value_or(0) * 100;
  if (r && !*r) {
    std::snprintf(buf, sizeof buf,
                  "the wall and the components agree within their ± (difference %.4g J, %.2g%% of the wall)",
                  unseen_j(), pct);
  } else if (unseen_j() >= 0) {
    std::snprintf(buf, sizeof buf,
                  "the wall meter sees %.4g J (%.3g%% of it) that the component meters do not: fans, disks, "
                  "network, the rest of the board and the power supply's loss%s",
                  unseen_j(), pct, r ? "" : " (± not quantified for both, so the difference is not judged)");
  } else {
    std::snprintf(buf, sizeof buf,
                  "the component meters read %.4g J (%.3g%%) more than the wall meter: check that the wattmeter "
                  "measures this machine's supply and that its clock matches (energy.wattmeter_offset_s)",
                  -unseen_j(), -pct);
  }
  return buf;
}

nlohmann::json CrossCheck::to_json() const {
  const auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  const auto r = resolved();
  return {{"wall_j", wall_j},
          {"wall_uncertainty_j", opt(wall_uncertainty_j)},
          {"components", components},
          {"components_j", components_j},
          {"components_uncertainty_j", opt(components_uncertainty_j)},
          {"ratio", opt(ratio())},
          {"unseen_j", unseen_j()},
          {"unseen_pct", unseen_fraction() ? json(100 * *unseen_fraction()) : json(nullptr)},
          {"resolved", r ? json(*r) : json(nullptr)},
          {"left_out", left_out},
          {"reading", reading()}};
}

}  // namespace balerbench
