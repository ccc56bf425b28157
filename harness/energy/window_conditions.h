// window_conditions.h: what a window's conditions were, beside its energy (energy_window.h).
//
// Long enough for the meter? A counter read at a window's edges is off by up to one update at each
// edge, so a figure resting on few updates is mostly edge. MLPerf Power asks for at least 60 samples
// over a measured run (and extends short runs); ML.ENERGY rejects a steady state shorter than 30 s.
// MeterUpdates counts the updates of the slowest measuring meter inside the window (its duration over
// that meter's update period, measured when the meter opened: NVML's counter ~0.1 s, RAPL ~1 ms, a
// wattmeter its sample period); EnergySettings::min_meter_updates (default 60) flags a window below it.
//
// How hot? Every NVML read takes the GPU's temperature, SM clock and throttle reasons
// (MeterReading::thermal); a window keeps, per GPU domain, the hottest temperature, the slowest SM
// clock and every throttle reason seen at its reads (edges included), as fine as the sampler's rate.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness/energy/sampler.h"

namespace balerbench {

// MLPerf Power's floor: at least 60 samples over a measured run.
constexpr int64_t kDefaultMinMeterUpdates = 60;

struct MeterUpdates {
  double count = 0;     // whole updates of `meter` inside the window: floor(duration / period)
  std::string meter;    // the measuring meter that updates least often
  double period_s = 0;  // its update period
  void add(const MeterUpdates& other);  // another window of the same phase: counts add
  nlohmann::json to_json() const;
};
// Over the measured meters (estimates and the simulator have no updates to count); empty when none is.
std::optional<MeterUpdates> meter_updates(double duration_s, const std::vector<std::unique_ptr<EnergyMeter>>& meters);

// The flag a window gets when it holds fewer than `min_updates` updates ("" when it holds enough, or
// nothing is counted, or min_updates is 0).
std::string short_window_flag(const std::optional<MeterUpdates>& updates, int64_t min_updates);

struct WindowThermal {
  std::optional<double> max_temperature_c, min_sm_clock_mhz;
  std::optional<unsigned long long> throttle_seen;  // the union of the reasons' bits at every read
  void add(const WindowThermal& other);
  nlohmann::json to_json() const;  // {"max_temperature_c", "min_sm_clock_mhz", "throttle_reasons": [names]}
};
// Domain `d` of meter `m` at the points `pts` (edges and the series between them); empty when the
// meter reads no thermal state.
std::optional<WindowThermal> thermal_between(const std::vector<Snapshot>& pts, std::size_t m, std::size_t d);

}  // namespace balerbench
