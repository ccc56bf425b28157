// rapl_meter.h: CPU and DRAM energy from Linux powercap (Intel RAPL, and AMD
// through the same interface).
//
// Zones under the root (default /sys/class/powercap, override
// BALERBENCH_POWERCAP_ROOT): intel-rapl:S is socket S's package, with
// subzones intel-rapl:S:N named core, uncore or dram; a top-level zone named
// psys is the platform. Domains: package-S, core-S, uncore-S, dram-S, psys.
// Totals count package + dram only: core and uncore lie inside the package,
// and psys contains package and dram (it is counted only when no package
// zone exists). intel-rapl-mmio zones duplicate the MSR package counters
// and are skipped when an MSR zone of the same name exists.
//
// energy_uj wraps at max_energy_range_uj (about 262 kJ on Intel packages,
// 65 kJ on AMD and DRAM): each read adds the wrap-aware difference to a
// 64-bit total. A counter can wrap at most once between reads without being
// noticed, so reads must come faster than max_read_interval_s(), the wrap
// time at kMaxDomainPowerW; the Sampler's 10 Hz default is thousands of
// times faster. Reads and the start-up probe of the update interval take their time from the
// TimeSource open() is given.
#pragma once

#include <string>
#include <vector>

#include "harness/energy/energy_meter.h"

namespace balerbench {

class RaplMeter : public EnergyMeter {
 public:
  static constexpr double kMaxDomainPowerW = 1000;  // a bound no single RAPL domain reaches

  // Probes `root` (empty: the environment override, else /sys/class/powercap).
  static MeterProbe open(const std::string& root = "", TimeSource& clock = real_clock());
  static std::string default_root();

  std::string name() const override { return "rapl"; }
  MeterKind kind() const override { return MeterKind::kMeasured; }
  const std::vector<Domain>& domains() const override { return domains_; }
  MeterReading read() override;
  double update_period_s() const override { return period_s_; }  // RAPL updates about every ms
  double max_read_interval_s() const override;
  nlohmann::json describe() const override;
  EdgeModel edge_model() const override;

  struct Zone {
    std::string dir;           // the zone's folder
    unsigned long long max_range_uj = 0;  // wrap point; energy_uj never exceeds it
    unsigned long long last_uj = 0;
    double total_j = 0;
  };

 private:
  RaplMeter(std::string root, std::vector<Domain> domains, std::vector<Zone> zones, std::vector<std::string> notes,
            TimeSource& clock);
  TimeSource& clock_;
  std::string root_;
  std::vector<Domain> domains_;
  std::vector<Zone> zones_;
  std::vector<std::string> notes_;
  SteadyClock::time_point last_read_;
  long long late_reads_ = 0;  // reads that came slower than max_read_interval_s()
  long long read_errors_ = 0;  // energy_uj reads that failed (each zone counted)
  double period_s_ = 0.001;    // measured when opened (a few ms of polling), else the usual 1 ms
  bool period_measured_ = false;
};

// Wrap-aware difference of two energy_uj values, both at most max_range_uj (exposed for tests).
unsigned long long rapl_delta_uj(unsigned long long previous, unsigned long long current,
                                 unsigned long long max_range_uj);

}  // namespace balerbench
