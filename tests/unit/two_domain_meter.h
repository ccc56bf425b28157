// two_domain_meter.h: a meter of two CPU domains and snapshots of it at chosen powers, for the tests of
// the sampler's listeners, live metrics, the line protocol and the Prometheus text.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "harness/energy/sampler.h"

namespace balerbench {

// Two domains: "pkg" (counted in totals) and "core" inside it (not counted).
class TwoDomainMeter : public EnergyMeter {
 public:
  explicit TwoDomainMeter(double update_period_s = 0.001) : period_(update_period_s) {
    domains_ = {{"pkg", DomainCategory::kCpu, true, ""}, {"core", DomainCategory::kCpu, false, "inside pkg"}};
  }
  std::string name() const override { return "two"; }
  MeterKind kind() const override { return MeterKind::kMeasured; }
  const std::vector<Domain>& domains() const override { return domains_; }
  double update_period_s() const override { return period_; }
  MeterReading read() override { return {SteadyClock::now(), {0, 0}}; }

 private:
  double period_;
  std::vector<Domain> domains_;
};

inline std::vector<std::unique_ptr<EnergyMeter>> two_domain_meters(double period_s = 0.001) {
  std::vector<std::unique_ptr<EnergyMeter>> v;
  v.push_back(std::make_unique<TwoDomainMeter>(period_s));
  return v;
}

// A snapshot at t0 + t_s with pkg at pkg_w and core at core_w since t0 (energy = power x time + 1000 J).
inline Snapshot snap(SteadyClock::time_point t0, double t_s, double pkg_w, double core_w) {
  Snapshot s;
  s.time = t0 + std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(t_s));
  s.unix_s = 1.7e9 + t_s;
  s.readings.push_back({s.time, {1000 + pkg_w * t_s, 500 + core_w * t_s}});
  return s;
}

}  // namespace balerbench
