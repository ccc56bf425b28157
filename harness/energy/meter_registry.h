// meter_registry.h: meters by name, and the set a run uses.
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

struct MeterCatalogEntry {
  MeterChoice meter;  // never kAuto
  MeterKind kind;
  const char* what;
  const char* name() const { return meter_choice_name(meter); }
};
// Every meter, in the order "auto" tries them.
const std::vector<MeterCatalogEntry>& meter_catalog();

// Opens one meter, or says why it cannot run here. `meter` is not kAuto (an InputError).
MeterProbe probe_meter(MeterChoice meter, const EnergySettings& settings);

struct MeterSet {
  std::vector<std::unique_ptr<EnergyMeter>> meters;
  std::vector<std::pair<std::string, std::string>> skipped;  // (meter name, reason) under "auto"
};
MeterSet open_meters(const EnergySettings& settings);

}  // namespace balerbench
