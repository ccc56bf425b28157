// thermal_wait.h: the wait before a trial for a GPU that has cooled (the experiment's
// energy.thermal). A GPU's power at a given load rises with its temperature (leakage), so a trial
// that starts on a GPU still hot from the last one spends more energy for the same work; Zeus's
// profiler lets the GPU cool below a threshold before each measurement for this reason. Here: poll
// the hottest visible GPU until it is at or below `target_c`, or until its temperature has stopped
// falling (no new low by a whole degree for `settle_s`: the GPU is as cool as it gets here), or
// until `max_wait_s` has passed; the result says which, and how long it took.
//
// The wait is a function of a temperature reader, a clock and a sleep, so tests drive it with a
// scripted temperature and no real time; a sweep gives it NVML (gpu_watch.h) and an interruptible
// sleep.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>

namespace balerbench {

struct ThermalSettings {
  bool enabled = false;
  double target_c = 50;     // wait until every GPU is at or below this
  double max_wait_s = 300;  // never longer than this
  double settle_s = 10;     // ... or until the hottest GPU has not reached a new low for this long
  double poll_s = 1;        // between reads
  nlohmann::json to_json() const;
};

// energy.thermal of an experiment, strict; `path` is its JSON path ("/energy/thermal").
ThermalSettings parse_thermal_settings(const nlohmann::json& j, const std::string& source, const std::string& path);

struct ThermalWait {
  enum class Ended { kCool, kSettled, kMaxWait, kNoTemperature };
  Ended ended = Ended::kNoTemperature;
  double waited_s = 0;
  std::optional<double> start_c, end_c;  // the hottest GPU when the wait began and ended
  int64_t polls = 0;
  // kNoTemperature: why (no NVML GPU; a GPU whose temperature read failed or gave no plausible value).
  // The trial then starts without the wait, and is flagged (trial_conditions.h).
  std::string no_temperature_why;
  // Still above the target when the maximum wait ran out: the trial starts hot.
  bool started_hot() const { return ended == Ended::kMaxWait; }
  std::string ended_text(const ThermalSettings& s) const;  // "at or below 50 C", "stopped falling at 55 C", ...
  nlohmann::json to_json(const ThermalSettings& s) const;
};

struct ThermalClock {
  std::function<double()> now_s;          // a steady clock, seconds
  std::function<void(double)> sleep_s;    // may throw to stop the wait (a stop signal)
};
// Waits as ThermalSettings says; `hottest_c` reads the hottest GPU now (empty: no temperature).
ThermalWait wait_until_cool(const ThermalSettings& s, const std::function<std::optional<double>()>& hottest_c,
                            const ThermalClock& clock);

}  // namespace balerbench
