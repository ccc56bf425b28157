// window_conditions.cpp: see window_conditions.h.
#include "harness/energy/window_conditions.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "harness/energy/nvml_library.h"

namespace balerbench {

using nlohmann::json;

void MeterUpdates::add(const MeterUpdates& other) {
  count += other.count;
  if (other.period_s > period_s) {
    meter = other.meter;
    period_s = other.period_s;
  }
}

json MeterUpdates::to_json() const { return {{"count", count}, {"meter", meter}, {"period_s", period_s}}; }

std::optional<MeterUpdates> meter_updates(double duration_s, const std::vector<std::unique_ptr<EnergyMeter>>& meters) {
  std::optional<MeterUpdates> slowest;
  for (const auto& m : meters) {
    if (m->kind() != MeterKind::kMeasured || !m->edge_model().quantified) continue;
    const double period = m->update_period_s();
    if (!(period > 0)) continue;
    if (!slowest || period > slowest->period_s) slowest = MeterUpdates{0, m->name(), period};
  }
  if (slowest) slowest->count = std::floor(std::max(0.0, duration_s) / slowest->period_s + 1e-9);
  return slowest;
}

std::string short_window_flag(const std::optional<MeterUpdates>& updates, int64_t min_updates) {
  if (!updates || min_updates <= 0 || updates->count >= static_cast<double>(min_updates)) return "";
  char buf[200];
  std::snprintf(buf, sizeof buf, "short window: %.0f updates of %s (every %.3g s) < %lld", updates->count,
                updates->meter.c_str(), updates->period_s, static_cast<long long>(min_updates));
  return std::string(buf) + " (energy.min_meter_updates; MLPerf Power asks for 60 samples): the figure rests on a "
                            "few counter steps; lengthen the work";
}

void WindowThermal::add(const WindowThermal& o) {
  if (o.max_temperature_c)
    max_temperature_c = std::max(max_temperature_c.value_or(*o.max_temperature_c), *o.max_temperature_c);
  if (o.min_sm_clock_mhz)
    min_sm_clock_mhz = std::min(min_sm_clock_mhz.value_or(*o.min_sm_clock_mhz), *o.min_sm_clock_mhz);
  if (o.throttle_seen) throttle_seen = throttle_seen.value_or(0) | *o.throttle_seen;
}

json WindowThermal::to_json() const {
  const auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  return {{"max_temperature_c", opt(max_temperature_c)},
          {"min_sm_clock_mhz", opt(min_sm_clock_mhz)},
          {"throttle_reasons", throttle_seen ? json(throttle_reason_names(*throttle_seen)) : json(nullptr)}};
}

std::optional<WindowThermal> thermal_between(const std::vector<Snapshot>& pts, std::size_t m, std::size_t d) {
  std::optional<WindowThermal> out;
  for (const Snapshot& pt : pts) {
    if (m >= pt.readings.size() || d >= pt.readings[m].thermal.size()) continue;
    const MeterReading::DeviceThermal& th = pt.readings[m].thermal[d];
    WindowThermal one;
    if (std::isfinite(th.temperature_c)) one.max_temperature_c = th.temperature_c;
    if (std::isfinite(th.sm_clock_mhz)) one.min_sm_clock_mhz = th.sm_clock_mhz;
    if (th.throttle_mask >= 0) one.throttle_seen = static_cast<unsigned long long>(th.throttle_mask);
    if (!out) out = WindowThermal{};
    out->add(one);
  }
  return out;
}

}  // namespace balerbench
