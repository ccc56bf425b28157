// ram_estimate_meter.h: DRAM power from a model, for machines without a RAPL
// dram domain. Labelled estimated. Power is constant (DRAM power depends on
// the modules far more than on load):
//   ram_power_w set:        that value (CodeCarbon's force_ram_power);
//   ram_power_w_per_gb set: that x installed GB (CodeCarbon v2 was 3 W per 8 GB = 0.375);
//   else CodeCarbon v3's rule: a DIMM count guessed from the installed size,
//   5 W per DIMM on x86 (1.5 W on ARM), DIMMs 5-8 at 90 %, 9-16 at 80 %,
//   17 and more at 70 %, at least two DIMMs' worth.
// Energy is that power x the time since open() on the TimeSource it is given.
#pragma once

#include "harness/energy/energy_meter.h"
#include "harness/energy/energy_settings.h"
#include "harness/energy/host_info.h"

namespace balerbench {

// Its own keys in the config's energy section (its section: meter_knobs), W and W per GB, or null.
inline constexpr char kRamPowerKey[] = "ram_power_w";
inline constexpr char kRamPowerPerGbKey[] = "ram_power_w_per_gb";

// CodeCarbon v3's guess of the DIMM count for `total_gb` GiB of RAM.
int estimate_dimm_count(double total_gb);
// CodeCarbon v3's RAM power for `total_gb` (W).
double ram_power_v3_w(double total_gb, bool arm);

class RamEstimateMeter : public EnergyMeter {
 public:
  static MeterProbe open(const EnergySettings& settings, const std::string& proc_root = "/proc",
                         TimeSource& clock = real_clock());

  std::string name() const override { return "ram_estimate"; }
  MeterKind kind() const override { return MeterKind::kEstimated; }
  const std::vector<Domain>& domains() const override { return domains_; }
  MeterReading read() override;
  double update_period_s() const override { return 0; }  // a model: any window is as good as its inputs
  nlohmann::json describe() const override;
  double power_w() const { return power_w_; }

 private:
  RamEstimateMeter(double power_w, std::string rule, double total_gb, TimeSource& clock);
  TimeSource& clock_;
  double power_w_;
  std::string rule_;
  double total_gb_;
  std::vector<Domain> domains_;
  SteadyClock::time_point start_;
};

}  // namespace balerbench
