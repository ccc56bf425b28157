// meter_registry.cpp: see meter_registry.h. To add a meter: its file defines a MeterEntry (its
// settings with it), declared and listed below; nothing else names it.
#include "harness/energy/meter_registry.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "common/error.h"

namespace balerbench {

const MeterEntry& nvml_meter_entry();           // nvml_meter.cpp
const MeterEntry& rapl_meter_entry();           // rapl_meter.cpp
const MeterEntry& cpu_estimate_meter_entry();   // cpu_estimate_meter.cpp
const MeterEntry& ram_estimate_meter_entry();   // ram_estimate_meter.cpp
const MeterEntry& wattmeter_meter_entry();      // wattmeter_meter.cpp
const MeterEntry& simulated_gpu_meter_entry();  // simulated_gpu.cpp

namespace {

// The built-in meters, then the registered ones.
std::vector<const MeterEntry*>& entries() {
  static std::vector<const MeterEntry*> all = {
      &nvml_meter_entry(),
      &rapl_meter_entry(),
      &cpu_estimate_meter_entry(),
      &ram_estimate_meter_entry(),
      &wattmeter_meter_entry(),
      &simulated_gpu_meter_entry(),
  };
  return all;
}

}  // namespace

const std::vector<const MeterEntry*>& meter_registry() { return entries(); }

MeterRegistration::MeterRegistration(const MeterEntry& entry) : entry_(&entry) {
  if (find_meter_choice(entry.name))
    throw InputError(std::string("meter '") + entry.name + "' is registered already", "give the meter a name of its own");
  entries().push_back(entry_);
}

MeterRegistration::~MeterRegistration() {
  std::vector<const MeterEntry*>& all = entries();
  all.erase(std::remove(all.begin(), all.end(), entry_), all.end());
}

Knobs default_meter_knobs() { return default_knobs_of(meter_registry()); }

void read_meter_knobs(StrictReader& r, Knobs& knobs) { read_knobs_of(meter_registry(), r, knobs); }

std::vector<ConfigKeyDoc> meter_knob_docs() { return knob_docs_of(meter_registry()); }

const char* meter_kind_name(MeterKind kind) {
  switch (kind) {
    case MeterKind::kMeasured: return "measured";
    case MeterKind::kEstimated: return "estimated";
    case MeterKind::kSimulated: return "simulated";
  }
  return "?";
}

nlohmann::json EdgeModel::to_json() const {
  if (!quantified) return {{"quantified", false}, {"basis", basis}};
  return {{"quantified", true},
          {"update_period_s", update_period_s},
          {"update_period", period_measured ? "measured" : "stated"},
          {"step_j", step_j},
          {"accuracy_fraction", accuracy_stated ? nlohmann::json(accuracy_fraction) : nlohmann::json(nullptr)},
          {"stepped", stepped},
          {"basis", basis}};
}

EdgeModel EnergyMeter::edge_model() const {
  EdgeModel m;
  if (kind() != MeterKind::kMeasured) {
    m.quantified = false;
    m.basis = std::string(meter_kind_name(kind())) + ", uncertainty not quantified (a model whose error is not known)";
    return m;
  }
  m.update_period_s = update_period_s();
  char buf[96];
  std::snprintf(buf, sizeof buf, "updates every %.3g s (stated); accuracy not stated", m.update_period_s);
  m.basis = buf;
  return m;
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

const MeterEntry& meter_entry(MeterChoice meter) {
  if (meter == MeterChoice::kAuto)
    throw InputError("probe_meter: \"auto\" is a selection of meters, not one meter", "use open_meters");
  for (const MeterEntry* e : meter_registry())
    if (std::string_view(meter.name()) == e->name) return *e;
  throw std::logic_error(std::string("no meter registered as '") + meter.name() + "'");
}

MeterProbe probe_meter(MeterChoice meter, const EnergySettings& s, TimeSource& clock) {
  return meter_entry(meter).open(s, clock);
}

namespace {

bool has_dram_domain(const EnergyMeter& m) {
  for (const auto& d : m.domains())
    if (d.category == DomainCategory::kRam) return true;
  return false;
}

void add_auto(MeterSet& set, const EnergySettings& s, TimeSource& clock) {
  auto try_add = [&](MeterChoice meter) {
    MeterProbe p = probe_meter(meter, s, clock);
    if (p.available()) {
      set.meters.push_back(std::move(p.meter));
      return true;
    }
    set.skipped.emplace_back(meter_choice_name(meter), p.unavailable_reason);
    return false;
  };
  try_add(MeterChoice::kNvml);
  const bool rapl = try_add(MeterChoice::kRapl);
  if (!rapl) try_add(MeterChoice::kCpuEstimate);
  const bool dram = rapl && has_dram_domain(*set.meters.back());
  if (!dram) try_add(MeterChoice::kRamEstimate);
}

}  // namespace

MeterSet open_meters(const EnergySettings& s, TimeSource& clock) {
  MeterSet set;
  std::vector<MeterChoice> chosen;
  for (MeterChoice m : s.meters) {
    if (std::find(chosen.begin(), chosen.end(), m) != chosen.end())
      throw InputError(std::string("meter '") + meter_choice_name(m) + "' is listed twice", "name each meter once");
    chosen.push_back(m);
  }
  for (MeterChoice m : chosen) {
    if (m == MeterChoice::kAuto) {
      add_auto(set, s, clock);
      continue;
    }
    MeterProbe p = probe_meter(m, s, clock);
    if (!p.available())
      throw InputError(std::string("meter '") + meter_choice_name(m) + "' is not available: " + p.unavailable_reason);
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
