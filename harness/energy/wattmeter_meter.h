// wattmeter_meter.h: a live meter over a wattmeter log that an external
// reader is appending to (energy.wattmeter_log). Each read parses the lines
// appended since the last one and reports the wall energy from the moment the
// meter was opened up to the newest sample (Unix time, after the clock
// offset). Energy the log has not flushed yet is not seen; every window also
// records its Unix start and end, so `balerbench wattmeter-energy` can
// re-integrate it from the finished log. "Now" and the moment of opening are Unix times of the
// TimeSource open() is given.
#pragma once

#include <optional>
#include <string>

#include "harness/base/clock.h"
#include "harness/energy/energy_meter.h"
#include "harness/energy/energy_settings.h"
#include "harness/energy/wattmeter_log.h"

namespace balerbench {

class WattmeterMeter : public EnergyMeter {
 public:
  static MeterProbe open(const EnergySettings& settings, TimeSource& clock = real_clock());

  std::string name() const override { return "wattmeter"; }
  MeterKind kind() const override { return MeterKind::kMeasured; }
  const std::vector<Domain>& domains() const override { return domains_; }
  MeterReading read() override;
  double update_period_s() const override;
  nlohmann::json describe() const override;
  EdgeModel edge_model() const override;

 private:
  WattmeterMeter(const EnergySettings& s, TimeSource& clock);
  void poll_file();
  TimeSource& clock_;
  std::string path_;
  WattmeterLog log_;
  long long offset_ = 0;  // bytes consumed (complete lines only)
  double opened_unix_s_;
  std::optional<double> accuracy_pct_;
  std::vector<Domain> domains_;
};

}  // namespace balerbench
