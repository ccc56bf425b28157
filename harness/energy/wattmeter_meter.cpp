// wattmeter_meter.cpp: see wattmeter_meter.h.
#include "harness/energy/wattmeter_meter.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "harness/energy/meter_registry.h"

namespace balerbench {

MeterProbe WattmeterMeter::open(const EnergySettings& s, TimeSource& clock) {
  MeterProbe probe;
  if (s.wattmeter_log.empty()) {
    probe.unavailable_reason = "no log to follow: set energy.wattmeter_log (or use `balerbench wattmeter-energy` on a "
                               "finished log)";
    return probe;
  }
  if (!std::filesystem::exists(s.wattmeter_log)) {
    probe.unavailable_reason = s.wattmeter_log + ": no such wattmeter log (start the meter's reader first)";
    return probe;
  }
  if (std::error_code ec; std::filesystem::is_directory(s.wattmeter_log, ec)) {
    probe.unavailable_reason = s.wattmeter_log + ": is a folder, not a wattmeter log";
    return probe;
  }
  probe.meter.reset(new WattmeterMeter(s, clock));
  return probe;
}

WattmeterMeter::WattmeterMeter(const EnergySettings& s, TimeSource& clock)
    : clock_(clock), path_(s.wattmeter_log),
      log_(s.wattmeter_format, static_cast<int>(s.wattmeter_socket), s.wattmeter_clock_offset_s, s.wattmeter_log),
      opened_unix_s_(clock.unix_now_s()),
      accuracy_pct_(s.wattmeter_accuracy_pct) {
  Domain d;
  d.name = "wall";
  d.category = DomainCategory::kWall;
  d.in_total = false;
  d.note = "external wattmeter: the whole machine at the plug, reported beside the software meters";
  domains_.push_back(d);
  poll_file();
}

void WattmeterMeter::poll_file() {
  std::ifstream in(path_, std::ios::binary);
  in.seekg(offset_);
  std::string chunk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto last_newline = chunk.rfind('\n');
  if (last_newline == std::string::npos) return;  // no complete line yet
  chunk.resize(last_newline + 1);
  offset_ += static_cast<long long>(chunk.size());
  log_.append(chunk);
  log_.finish();
}

MeterReading WattmeterMeter::read() {
  poll_file();
  MeterReading r;
  r.time = clock_.now();
  r.energy_j = {log_.energy_clamped_j(opened_unix_s_, clock_.unix_now_s())};
  return r;
}

double WattmeterMeter::update_period_s() const {
  return log_.median_interval_s() > 0 ? log_.median_interval_s() : 1.0;
}

EdgeModel WattmeterMeter::edge_model() const {
  EdgeModel m;
  m.update_period_s = update_period_s();
  m.period_measured = log_.median_interval_s() > 0;
  m.accuracy_stated = accuracy_pct_.has_value();
  m.accuracy_fraction = accuracy_pct_.value_or(0) / 100;
  char accuracy[64] = "not stated (energy.wattmeter_accuracy_pct)";
  if (accuracy_pct_) std::snprintf(accuracy, sizeof accuracy, "±%.3g%% of reading (stated)", *accuracy_pct_);
  char buf[200];
  std::snprintf(buf, sizeof buf, "wattmeter log: a sample every %.3g s (%s); accuracy %s", m.update_period_s,
                m.period_measured ? "median of the log" : "assumed: no samples yet", accuracy);
  m.basis = buf;
  return m;
}

nlohmann::json WattmeterMeter::describe() const {
  const WattmeterStats& s = log_.stats();
  return {{"log", path_}, {"format", log_.format()}, {"samples", log_.samples().size()},
          {"median_interval_s", log_.median_interval_s()}, {"bad_frames", s.bad_frames},
          {"malformed_lines", s.malformed}, {"out_of_order_lines", s.out_of_order}};
}

// This meter in the registry (meter_registry.cpp lists it).
const MeterEntry& wattmeter_meter_entry() {
  static const MeterEntry entry = {"wattmeter", MeterKind::kMeasured, "wall power from an external meter's log",
                                   [](const EnergySettings& s, TimeSource& clock) { return WattmeterMeter::open(s, clock); }};
  return entry;
}

}  // namespace balerbench
