// simulated_gpu.h: a deterministic model of a GPU, for demonstrations and
// tests without hardware. Every table that uses it says "simulated".
//
// Power rises linearly with load from idle to the board's maximum and is
// capped by the power limit:
//     demand_w = idle_w + (max_w - idle_w) * load,   power_w = min(demand_w, limit_w)
// Under a cap the clocks drop; with dynamic power ~ f^3 (P ~ f V^2, V ~ f)
// throughput falls as the cube root of the dynamic power allowed:
//     throughput = ((limit_w - idle_w) / (demand_w - idle_w))^(1/3)   when demand_w > limit_w, else 1
// so work that took t at full power takes t / throughput under the cap.
// The meter integrates that power over the intervals between reads on the TimeSource open() is given.
#pragma once

#include <optional>
#include <string>

#include "harness/energy/process_tree.h"
#include "harness/energy/energy_meter.h"
#include "harness/energy/energy_settings.h"

namespace balerbench {

struct SimulatedGpuModel {
  SimulatedGpuSpec spec;
  double power_w(double load) const;
  double throughput(double load) const;  // in (0, 1]
  // Sets the limit within [min_limit_w, max_limit_w]; InputError outside.
  void set_power_limit_w(double limit_w);
};

class SimulatedGpuMeter : public EnergyMeter {
 public:
  static MeterProbe open(const EnergySettings& settings, TimeSource& clock = real_clock());

  std::string name() const override { return "simulated_gpu"; }
  MeterKind kind() const override { return MeterKind::kSimulated; }
  const std::vector<Domain>& domains() const override { return domains_; }
  MeterReading read() override;
  double update_period_s() const override { return 0; }
  nlohmann::json describe() const override;

  SimulatedGpuModel& model() { return model_; }
  double last_load() const { return last_load_; }

 private:
  SimulatedGpuMeter(const SimulatedGpuSpec& spec, TimeSource& clock);
  double load_since_last(double dt_s);
  TimeSource& clock_;
  SimulatedGpuModel model_;
  std::vector<Domain> domains_;
  SteadyClock::time_point last_read_;
  std::optional<ProcessTreeUsage> tree_;  // when the load follows this process tree
  double total_j_ = 0;
  double last_load_ = 0;
};

}  // namespace balerbench
