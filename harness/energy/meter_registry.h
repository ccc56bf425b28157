// meter_registry.h: meters by name, and the set a run uses. To add a meter: its file defines a
// MeterEntry (rapl_meter.cpp's rapl_meter_entry is the example; a meter with settings gives it a
// KnobSection, its keys in the config's `energy` section), and meter_registry.cpp declares and
// lists it; configs, `balerbench meters`, `doctor` and the reports read the list.
//
// Names: nvml, rapl, cpu_estimate, ram_estimate, wattmeter, simulated_gpu,
// and "auto" = nvml and rapl where available, cpu_estimate when rapl is not,
// ram_estimate when no RAPL dram domain exists. The simulator and the
// wattmeter are used only when named. A meter named explicitly that cannot
// run here is an InputError carrying its reason; under "auto" it is skipped
// and the reason is kept for the report.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "harness/energy/energy_meter.h"
#include "harness/energy/energy_settings.h"

namespace balerbench {

// What the registry knows of one meter; each meter's file defines its entry.
struct MeterEntry {
  const char* name;  // the config's name: "rapl"; never "auto"
  MeterKind kind;
  const char* what;  // one line for `balerbench meters`
  // Opens the meter, reading time from `clock` (which outlives it), or says why it cannot run here.
  // Its own keys are in settings.meter_knobs.
  MeterProbe (*open)(const EnergySettings& settings, TimeSource& clock);
  // Its own keys in the config's `energy` section (base/knobs.h): their defaults, strict reader and
  // entries in the configuration reference; null when it has none.
  const KnobSection* knobs = nullptr;
};
// Every meter, in the order `balerbench meters` lists them ("auto" tries nvml, rapl, then the
// estimates; see open_meters), then any registered with MeterRegistration.
const std::vector<const MeterEntry*>& meter_registry();
const MeterEntry& meter_entry(MeterChoice meter);  // kAuto: an InputError (a selection, not a meter)

// Opens one meter, or says why it cannot run here. `meter` is not kAuto (an InputError).
MeterProbe probe_meter(MeterChoice meter, const EnergySettings& settings, TimeSource& clock = real_clock());

// Adds `entry` after the built-in meters for as long as it lives (a meter outside this folder, or a
// test's): configs may name it, a config read meanwhile reads its keys, and `balerbench meters`
// lists it. InputError when its name is taken ("auto" included).
class MeterRegistration {
 public:
  explicit MeterRegistration(const MeterEntry& entry);  // `entry` must outlive the registration
  ~MeterRegistration();
  MeterRegistration(const MeterRegistration&) = delete;
  MeterRegistration& operator=(const MeterRegistration&) = delete;

 private:
  const MeterEntry* entry_;
};

struct MeterSet {
  std::vector<std::unique_ptr<EnergyMeter>> meters;
  std::vector<std::pair<std::string, std::string>> skipped;  // (meter name, reason) under "auto"
};
MeterSet open_meters(const EnergySettings& settings, TimeSource& clock = real_clock());

}  // namespace balerbench
