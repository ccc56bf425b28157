// thermal_wait.cpp: see thermal_wait.h.
#include "harness/energy/thermal_wait.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "harness/base/strict_json.h"

namespace balerbench {

using nlohmann::json;

namespace {

std::string celsius(const std::optional<double>& c) {
  if (!c) return "unknown";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g C", *c);
  return buf;
}

}  // namespace

json ThermalSettings::to_json() const {
  return {{"target_c", target_c}, {"max_wait_s", max_wait_s}, {"settle_s", settle_s}, {"poll_s", poll_s}};
}

ThermalSettings parse_thermal_settings(const json& j, const std::string& source, const std::string& path) {
  StrictReader r(j, source, path);
  ThermalSettings s;
  s.enabled = true;
  r.number_in("target_c", s.target_c, 0, 120);
  r.number_in("max_wait_s", s.max_wait_s, 0, 3600);
  r.number_in("settle_s", s.settle_s, 0, 600);
  r.number_in("poll_s", s.poll_s, 0.01, 60);
  r.reject_unknown("thermal keys: target_c, max_wait_s, settle_s, poll_s");
  return s;
}

std::string ThermalWait::ended_text(const ThermalSettings& s) const {
  switch (ended) {
    case Ended::kCool: return "at or below " + celsius(s.target_c);
    case Ended::kSettled: return "stopped falling at " + celsius(end_c) + " (above " + celsius(s.target_c) + ")";
    case Ended::kMaxWait: return "still " + celsius(end_c) + " after the maximum wait (target " + celsius(s.target_c) + ")";
    case Ended::kNoTemperature: break;
  }
  return "no GPU temperature to wait on" + (no_temperature_why.empty() ? "" : ": " + no_temperature_why);
}

json ThermalWait::to_json(const ThermalSettings& s) const {
  static const char* const kEnded[] = {"cool", "settled", "max_wait", "no_temperature"};
  const auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  return {{"settings", s.to_json()},
          {"ended", kEnded[static_cast<int>(ended)]},
          {"reason", ended_text(s)},
          {"waited_s", waited_s},
          {"start_c", opt(start_c)},
          {"end_c", opt(end_c)},
          {"polls", polls}};
}

ThermalWait wait_until_cool(const ThermalSettings& s, const std::function<std::optional<double>()>& hottest_c,
                            const ThermalClock& clock) {
  ThermalWait w;
  const double t0 = clock.now_s();
  double lowest = 0, lowest_at = t0;
  for (;;) {
    const std::optional<double> c = hottest_c();
    const double now = clock.now_s();
    ++w.polls;
    w.waited_s = now - t0;
    if (!c || !std::isfinite(*c)) {
      w.ended = ThermalWait::Ended::kNoTemperature;
      return w;
    }
    if (!w.start_c) {
      w.start_c = lowest = *c;
      lowest_at = now;
    }
    w.end_c = c;
    if (*c <= s.target_c) {
      w.ended = ThermalWait::Ended::kCool;
      return w;
    }
    if (*c <= lowest - 1) {  // a new low by a whole degree (NVML reads whole degrees)
      lowest = *c;
      lowest_at = now;
    } else if (now - lowest_at >= s.settle_s) {
      w.ended = ThermalWait::Ended::kSettled;
      return w;
    }
    if (now - t0 >= s.max_wait_s) {
      w.ended = ThermalWait::Ended::kMaxWait;
      return w;
    }
    clock.sleep_s(std::min(s.poll_s, std::max(0.0, s.max_wait_s - (now - t0))));
  }
}

}  // namespace balerbench
