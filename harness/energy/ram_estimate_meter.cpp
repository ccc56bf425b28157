// ram_estimate_meter.cpp: see ram_estimate_meter.h.
#include "harness/energy/ram_estimate_meter.h"

#include <sys/utsname.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "harness/energy/meter_registry.h"

namespace balerbench {

int estimate_dimm_count(double total_gb) {
  if (total_gb <= 2) return 1;
  if (total_gb <= 16) return 2;   // 2 x 2, 4 or 8 GB
  if (total_gb <= 32) return 4;   // 4 x 8 GB
  if (total_gb <= 64) return 4;   // 4 x 16 GB
  if (total_gb <= 128) return 8;  // 8 x 16 GB
  // Large servers: the largest common module that still gives 8 or more, at most 32 modules.
  for (double module_gb : {128.0, 64.0, 32.0, 16.0, 8.0, 4.0})
    if (module_gb <= total_gb / 8) return std::min(32, static_cast<int>(std::ceil(total_gb / module_gb)));
  return 8;
}

double ram_power_v3_w(double total_gb, bool arm) {
  const double per_dimm_w = arm ? 1.5 : 5.0;
  const int n = estimate_dimm_count(total_gb);
  double w = per_dimm_w * std::min(n, 4);
  if (n > 4) w += per_dimm_w * 0.9 * (std::min(n, 8) - 4);
  if (n > 8) w += per_dimm_w * 0.8 * (std::min(n, 16) - 8);
  if (n > 16) w += per_dimm_w * 0.7 * (n - 16);
  return std::max(w, arm ? 3.0 : 2 * per_dimm_w);
}

MeterProbe RamEstimateMeter::open(const EnergySettings& s, const std::string& proc_root, TimeSource& clock) {
  MeterProbe probe;
  const HostInfo host = read_host_info(proc_root);
  const std::optional<double> power_w = s.meter_knobs.optional_number(kRamPowerKey);
  const std::optional<double> power_w_per_gb = s.meter_knobs.optional_number(kRamPowerPerGbKey);
  if (power_w) {
    probe.meter.reset(new RamEstimateMeter(*power_w, "config: ram_power_w", host.ram_total_gb, clock));
    return probe;
  }
  if (host.ram_total_gb <= 0) {
    probe.unavailable_reason = "cannot read MemTotal from " + proc_root + "/meminfo (set energy.ram_power_w)";
    return probe;
  }
  if (power_w_per_gb) {
    probe.meter.reset(new RamEstimateMeter(*power_w_per_gb * host.ram_total_gb,
                                           "config: ram_power_w_per_gb " + nlohmann::json(*power_w_per_gb).dump() +
                                               " W x " + nlohmann::json(host.ram_total_gb).dump() + " GB",
                                           host.ram_total_gb, clock));
    return probe;
  }
  utsname u{};
  const bool arm = uname(&u) == 0 && (std::strstr(u.machine, "arm") || std::strstr(u.machine, "aarch"));
  const int dimms = estimate_dimm_count(host.ram_total_gb);
  probe.meter.reset(new RamEstimateMeter(ram_power_v3_w(host.ram_total_gb, arm),
                                         "CodeCarbon v3 rule: " + std::to_string(dimms) + " DIMMs guessed for " +
                                             nlohmann::json(std::round(host.ram_total_gb * 10) / 10).dump() + " GB, " +
                                             (arm ? "1.5" : "5") + " W each",
                                         host.ram_total_gb, clock));
  return probe;
}

RamEstimateMeter::RamEstimateMeter(double power_w, std::string rule, double total_gb, TimeSource& clock)
    : clock_(clock), power_w_(power_w), rule_(std::move(rule)), total_gb_(total_gb), start_(clock.now()) {
  Domain d;
  d.name = "ram";
  d.category = DomainCategory::kRam;
  d.note = "constant " + nlohmann::json(power_w_).dump() + " W";
  domains_.push_back(d);
}

MeterReading RamEstimateMeter::read() {
  MeterReading r;
  r.time = clock_.now();
  r.energy_j = {power_w_ * std::chrono::duration<double>(r.time - start_).count()};
  return r;
}

nlohmann::json RamEstimateMeter::describe() const {
  return {{"method", "constant power model"}, {"power_w", power_w_}, {"rule", rule_}, {"ram_total_gb", total_gb_}};
}

// This meter in the registry (meter_registry.cpp lists it).
namespace {

// Its own keys, energy.ram_power_w and energy.ram_power_w_per_gb: absent (null) = CodeCarbon v3's rule.
const KnobSection kRamEstimateKnobs{
    [](Knobs& k) {
      k.set(kRamPowerKey, nullptr);
      k.set(kRamPowerPerGbKey, nullptr);
    },
    [](StrictReader& r, Knobs& k) {
      read_optional_number_in(r, k, kRamPowerKey, 0, 5000);
      read_optional_number_in(r, k, kRamPowerPerGbKey, 0, 100);
    },
    [] {
      return std::vector<ConfigKeyDoc>{
          {"/energy/ram_power_w", "`ram_estimate`: constant RAM power", "CodeCarbon v3's rule"},
          {"/energy/ram_power_w_per_gb", "`ram_estimate`: power per installed GB", "CodeCarbon v3's rule"}};
    }};

}  // namespace

const MeterEntry& ram_estimate_meter_entry() {
  static const MeterEntry entry = {"ram_estimate", MeterKind::kEstimated, "DRAM: constant power model",
                                   [](const EnergySettings& s, TimeSource& clock) {
                                     return RamEstimateMeter::open(s, "/proc", clock);
                                   },
                                   &kRamEstimateKnobs};
  return entry;
}

}  // namespace balerbench
