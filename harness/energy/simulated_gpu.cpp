// simulated_gpu.cpp: see simulated_gpu.h.
#include "harness/energy/simulated_gpu.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "harness/energy/meter_registry.h"

namespace balerbench {

double SimulatedGpuModel::power_w(double load) const {
  const double demand_w = spec.idle_power_w + (spec.max_power_w - spec.idle_power_w) * std::clamp(load, 0.0, 1.0);
  return std::min(demand_w, spec.power_limit_w);
}

double SimulatedGpuModel::throughput(double load) const {
  const double dynamic_w = (spec.max_power_w - spec.idle_power_w) * std::clamp(load, 0.0, 1.0);
  const double allowed_w = spec.power_limit_w - spec.idle_power_w;
  if (dynamic_w <= allowed_w) return 1.0;
  return std::cbrt(std::max(allowed_w, 1e-3) / dynamic_w);
}

void SimulatedGpuModel::set_power_limit_w(double limit_w) {
  if (limit_w < spec.min_limit_w || limit_w > spec.max_limit_w)
    throw InputError("power limit " + nlohmann::json(limit_w).dump() + " W is outside the simulated GPU's range [" +
                         nlohmann::json(spec.min_limit_w).dump() + ", " + nlohmann::json(spec.max_limit_w).dump() +
                         "] W",
                     "choose a limit inside the constraints");
  spec.power_limit_w = limit_w;
}

MeterProbe SimulatedGpuMeter::open(const EnergySettings& s, TimeSource& clock) {
  MeterProbe probe;
  probe.meter.reset(new SimulatedGpuMeter(s.simulated_gpu, clock));
  return probe;
}

SimulatedGpuMeter::SimulatedGpuMeter(const SimulatedGpuSpec& spec, TimeSource& clock)
    : clock_(clock), model_{spec}, last_read_(clock.now()) {
  Domain d;
  d.name = "gpu0";
  d.category = DomainCategory::kGpu;
  d.note = "simulated: " + spec.name;
  domains_.push_back(d);
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (!spec.load) tree_.emplace("/proc", static_cast<int>(getpid()), cpus > 0 ? static_cast<int>(cpus) : 1);
}

double SimulatedGpuMeter::load_since_last(double dt_s) {
  if (model_.spec.load) return *model_.spec.load;
  return tree_->share(dt_s);  // this process tree's share of the CPUs stands in for the GPU's load
}

MeterReading SimulatedGpuMeter::read() {
  MeterReading r;
  r.time = clock_.now();
  const double dt_s = std::chrono::duration<double>(r.time - last_read_).count();
  last_read_ = r.time;
  const double load = load_since_last(dt_s);
  // Power at the interval's load, held over the interval (exact for a fixed load).
  total_j_ += model_.power_w(load) * dt_s;
  last_load_ = load;
  r.energy_j = {total_j_};
  return r;
}

nlohmann::json SimulatedGpuMeter::describe() const {
  const SimulatedGpuSpec& s = model_.spec;
  return {{"name", s.name}, {"simulated", true}, {"idle_power_w", s.idle_power_w}, {"max_power_w", s.max_power_w},
          {"power_limit_w", s.power_limit_w}, {"min_power_limit_w", s.min_limit_w},
          {"max_power_limit_w", s.max_limit_w},
          {"load_source", s.load ? "config (fixed " + nlohmann::json(*s.load).dump() + ")"
                                 : std::string("this process tree's CPU utilisation")},
          {"throughput_at_full_load", model_.throughput(1.0)},
          {"model", "power = min(idle + (max - idle) x load, limit); throughput = cbrt(allowed / demanded dynamic "
                    "power) under the cap"}};
}

// This meter in the registry (meter_registry.cpp lists it).
const MeterEntry& simulated_gpu_meter_entry() {
  static const MeterEntry entry = {"simulated_gpu", MeterKind::kSimulated, "a modelled GPU, for demonstrations and tests",
                                   [](const EnergySettings& s, TimeSource& clock) { return SimulatedGpuMeter::open(s, clock); }};
  return entry;
}

}  // namespace balerbench
