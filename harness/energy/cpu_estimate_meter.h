// cpu_estimate_meter.h: CPU power estimated as TDP x utilisation, for machines
// without readable RAPL. Labelled estimated everywhere.
//
// Each read integrates P = TDP_total x u over the interval since the last
// read, where u is
//   machine mode: busy / total jiffies of /proc/stat (user, nice, system,
//                 irq, softirq, steal count as busy; idle and iowait do not);
//   process mode: CPU seconds of this process and its descendants (live ones
//                 and reaped ones, through cutime/cstime) / (interval x CPUs).
// TDP_total = cpu_tdp_w (per socket, from the config) x sockets, else the
// built-in table (cpu_tdp_table()) x sockets, else the documented fallback
// for an unknown CPU: 4 W per logical CPU (CodeCarbon's rule). An idle CPU
// thus estimates 0 W: a lower bound, like every TDP model. The intervals are read on the
// TimeSource open() is given.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "harness/energy/energy_meter.h"
#include "harness/energy/energy_settings.h"
#include "harness/energy/host_info.h"
#include "harness/energy/process_tree.h"

namespace balerbench {

// Its own key in the config's energy section (its section: meter_knobs): the TDP per socket, W, or
// null.
inline constexpr char kCpuTdpKey[] = "cpu_tdp_w";

struct CpuTdp {
  double total_w = 0;  // all sockets
  std::string source;  // "config", "built-in table (Intel Xeon Gold 6248: 150 W x 2 sockets)", "fallback: ..."
};

// (model name fragment, TDP per socket in W), matched case-sensitively as a substring.
const std::vector<std::pair<std::string, double>>& cpu_tdp_table();
CpuTdp resolve_cpu_tdp(const HostInfo& host, const std::optional<double>& configured_w);

class CpuEstimateMeter : public EnergyMeter {
 public:
  // `pid` 0 = this process (process mode only).
  static MeterProbe open(const EnergySettings& settings, const std::string& proc_root = "/proc", int pid = 0,
                         TimeSource& clock = real_clock());

  std::string name() const override { return "cpu_estimate"; }
  MeterKind kind() const override { return MeterKind::kEstimated; }
  const std::vector<Domain>& domains() const override { return domains_; }
  MeterReading read() override;
  double update_period_s() const override { return 0.01; }  // one scheduler tick (USER_HZ = 100)
  nlohmann::json describe() const override;

  double last_utilisation() const { return last_utilisation_; }

 private:
  CpuEstimateMeter(std::string proc_root, int pid, bool process_mode, HostInfo host, CpuTdp tdp, TimeSource& clock);
  double utilisation_since_last(double dt_s);
  TimeSource& clock_;
  std::string proc_root_;
  int pid_;
  bool process_mode_;
  HostInfo host_;
  CpuTdp tdp_;
  std::vector<Domain> domains_;
  CpuTimes last_times_;
  std::optional<ProcessTreeUsage> tree_;  // process mode
  SteadyClock::time_point last_read_;
  double total_j_ = 0;
  double last_utilisation_ = 0;
};

}  // namespace balerbench
