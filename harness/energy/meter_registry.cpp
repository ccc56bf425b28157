// meter_registry.cpp: see meter_registry.h.
#include "harness/energy/meter_registry.h"

#include <algorithm>

#include "datasets/error.h"
#include "harness/energy/cpu_estimate_meter.h"
#include "harness/energy/nvml_meter.h"
#include "harness/energy/ram_estimate_meter.h"
#include "harness/energy/rapl_meter.h"
#include "harness/energy/simulated_gpu.h"
#include "harness/energy/wattmeter_meter.h"

namespace balerbench {

const char* meter_kind_name(MeterKind kind) {
  switch (kind) {
    case MeterKind::kMeasured: return "measured";
    case MeterKind::kEstimated: return "estimated";
    case MeterKind::kSimulated: return "simulated";
  }
  return "?";
}

const char* domain_category_name(DomainCategory c) {
  switch (c) {
    case DomainCategory::kCpu: return "cpu";
    case DomainCategory::kGpu: return "gpu";
    case DomainCategory::kRam: return "ram";
    case DomainCategory::kWall: return "wall";
  }
  return "?";
}

const std::vector<MeterCatalogEntry>& meter_catalog() {
  static const std::vector<MeterCatalogEntry> kCatalog = {
      {"nvml", MeterKind::kMeasured, "NVIDIA GPUs: energy counter (Volta+) or integrated power"},
      {"rapl", MeterKind::kMeasured, "CPU packages, cores, uncore, DRAM, platform via Linux powercap"},
      {"cpu_estimate", MeterKind::kEstimated, "CPU: TDP x utilisation"},
      {"ram_estimate", MeterKind::kEstimated, "DRAM: constant power model"},
      {"wattmeter", MeterKind::kMeasured, "wall power from an external meter's log"},
      {"simulated_gpu", MeterKind::kSimulated, "a modelled GPU, for demonstrations and tests"}};
  return kCatalog;
}

MeterProbe probe_meter(const std::string& name, const EnergySettings& s) {
  if (name == "nvml") return NvmlMeter::open();
  if (name == "rapl") return RaplMeter::open();
  if (name == "cpu_estimate") return CpuEstimateMeter::open(s);
  if (name == "ram_estimate") return RamEstimateMeter::open(s);
  if (name == "wattmeter") return WattmeterMeter::open(s);
  if (name == "simulated_gpu") return SimulatedGpuMeter::open(s);
  std::string names = "auto";
  for (const auto& e : meter_catalog()) names += std::string(", ") + e.name;
  throw InputError("unknown meter '" + name + "'", "one of: " + names);
}

namespace {

bool has_dram_domain(const EnergyMeter& m) {
  for (const auto& d : m.domains())
    if (d.category == DomainCategory::kRam) return true;
  return false;
}

void add_auto(MeterSet& set, const EnergySettings& s) {
  auto try_add = [&](const std::string& name) {
    MeterProbe p = probe_meter(name, s);
    if (p.available()) {
      set.meters.push_back(std::move(p.meter));
      return true;
    }
    set.skipped.emplace_back(name, p.unavailable_reason);
    return false;
  };
  try_add("nvml");
  const bool rapl = try_add("rapl");
  if (!rapl) try_add("cpu_estimate");
  const bool dram = rapl && has_dram_domain(*set.meters.back());
  if (!dram) try_add("ram_estimate");
}

}  // namespace

MeterSet open_meters(const EnergySettings& s) {
  MeterSet set;
  std::vector<std::string> names;
  for (const auto& n : s.meters) {
    if (std::find(names.begin(), names.end(), n) != names.end())
      throw InputError("meter '" + n + "' is listed twice", "name each meter once");
    names.push_back(n);
  }
  for (const auto& name : names) {
    if (name == "auto") {
      add_auto(set, s);
      continue;
    }
    MeterProbe p = probe_meter(name, s);
    if (!p.available()) throw InputError("meter '" + name + "' is not available: " + p.unavailable_reason);
    set.meters.push_back(std::move(p.meter));
  }
  // "auto" plus an explicit name may open the same meter twice: keep the first.
  std::vector<std::unique_ptr<EnergyMeter>> unique;
  for (auto& m : set.meters) {
    bool dup = false;
    for (const auto& u : unique) dup |= u->name() == m->name();
    if (!dup) unique.push_back(std::move(m));
  }
  set.meters = std::move(unique);
  return set;
}

}  // namespace balerbench
