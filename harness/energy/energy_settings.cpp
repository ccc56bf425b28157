// energy_settings.cpp: see energy_settings.h.
#include "harness/energy/energy_settings.h"

#include "common/text.h"
#include "harness/energy/window_conditions.h"

#include <algorithm>
#include <filesystem>

#include "harness/base/name_table.h"
#include "harness/base/strict_json.h"
#include "harness/energy/meter_registry.h"

namespace balerbench {

using nlohmann::json;

namespace {

SimulatedGpuSpec parse_simulated_gpu(const json& j, const std::string& source, const std::string& path) {
  StrictReader r(j, source, path);
  SimulatedGpuSpec s;
  r.str("name", s.name);
  r.number_in("idle_power_w", s.idle_power_w, 0, 5000);
  r.number_in("max_power_w", s.max_power_w, 1, 5000);
  r.number_in("min_limit_w", s.min_limit_w, 1, 5000);
  r.number_in("max_limit_w", s.max_limit_w, 1, 5000);
  s.power_limit_w = s.max_limit_w;
  r.number_in("power_limit_w", s.power_limit_w, 1, 5000);
  r.optional_number_in("load", s.load, 0, 1);
  if (s.idle_power_w >= s.max_power_w) r.fail("idle_power_w", "must be below max_power_w");
  if (s.min_limit_w > s.max_limit_w) r.fail("min_limit_w", "must not exceed max_limit_w");
  if (s.power_limit_w < s.min_limit_w || s.power_limit_w > s.max_limit_w)
    r.fail("power_limit_w", "must lie within [min_limit_w, max_limit_w]");
  r.reject_unknown("valid keys: name, idle_power_w, max_power_w, min_limit_w, max_limit_w, power_limit_w, load");
  return s;
}

// The energy section's keys for an unknown key's hint: its own, then the registered meters' (the
// keys their reference entries document directly under /energy).
std::string valid_energy_keys() {
  std::string keys = "valid keys: enabled, meters, sample_hz, idle_baseline_s, min_meter_updates, "
                     "carbon_intensity_g_per_kwh, country_iso_code, "
                     "pue, cpu_estimate_mode, wattmeter_log, "
                     "wattmeter_format, wattmeter_socket, wattmeter_clock_offset_s, wattmeter_accuracy_pct, simulated_gpu";
  const std::string parent = "/energy/";
  for (const ConfigKeyDoc& d : meter_knob_docs())
    if (d.path.rfind(parent, 0) == 0 && d.path.find('/', parent.size()) == std::string::npos)
      keys += ", " + d.path.substr(parent.size());
  return keys;
}

}  // namespace

std::optional<MeterChoice> find_meter_choice(const std::string& name) {
  if (name == MeterChoice::kAuto.name()) return MeterChoice::kAuto;
  for (const MeterEntry* e : meter_registry())
    if (name == e->name) return MeterChoice(e->name);
  return std::nullopt;
}

std::string meter_name_list() {
  std::vector<std::string> names = {MeterChoice::kAuto.name()};
  for (const MeterEntry* e : meter_registry()) names.emplace_back(e->name);
  return joined(names);
}

ConfigKeyDoc meters_key_doc() {
  std::string names;
  for (const MeterEntry* e : meter_registry()) names += (names.empty() ? "`" : ", `") + std::string(e->name) + "`";
  return {"/energy/meters", "meter names (" + names + ") or `auto`", ""};
}

EnergySettings parse_energy_settings(const json& j, const std::string& source, const std::string& path,
                                     const std::string& base_dir) {
  StrictReader r(j, source, path);
  EnergySettings e;
  r.boolean("enabled", e.enabled);
  {
    std::vector<std::string> names = {"auto"};
    r.strings("meters", names);
    if (names.empty()) r.fail("meters", "must name at least one meter", "\"auto\", or e.g. [\"rapl\", \"nvml\"]");
    e.meters.clear();
    for (std::size_t i = 0; i < names.size(); ++i) {
      const std::optional<MeterChoice> m = find_meter_choice(names[i]);
      if (!m) r.fail("meters", "unknown meter '" + names[i] + "'", "one of: " + meter_name_list());
      if (std::find(e.meters.begin(), e.meters.end(), *m) != e.meters.end())
        r.fail("meters", "meter '" + names[i] + "' is listed twice", "name each meter once");
      e.meters.push_back(*m);
    }
  }
  r.number_in("sample_hz", e.sample_hz, 0, 1000);
  r.number_in("idle_baseline_s", e.idle_baseline_s, 0, 3600);
  r.integer("min_meter_updates", e.min_meter_updates, 0, 1000000);
  r.optional_number_in("carbon_intensity_g_per_kwh", e.carbon_intensity_g_per_kwh, 0, 5000);
  r.str("country_iso_code", e.country_iso_code);
  r.number_in("pue", e.pue, 1.0, 10.0);
  r.choice("cpu_estimate_mode", e.cpu_estimate_mode, {"machine", "process"});
  r.str("wattmeter_log", e.wattmeter_log);
  if (!e.wattmeter_log.empty() && !std::filesystem::path(e.wattmeter_log).is_absolute() && !base_dir.empty())
    e.wattmeter_log = (std::filesystem::path(base_dir) / e.wattmeter_log).lexically_normal().string();
  r.choice("wattmeter_format", e.wattmeter_format, {"auto", "omegawatt", "csv"});
  r.integer("wattmeter_socket", e.wattmeter_socket, -1);
  if (e.wattmeter_socket == 0) r.fail("wattmeter_socket", "sockets are numbered from 1", "-1 sums every socket");
  r.number("wattmeter_clock_offset_s", e.wattmeter_clock_offset_s);
  r.optional_number_in("wattmeter_accuracy_pct", e.wattmeter_accuracy_pct, 0, 100);
  if (const json* s = r.object("simulated_gpu")) e.simulated_gpu = parse_simulated_gpu(*s, source, path + "/simulated_gpu");
  read_meter_knobs(r, e.meter_knobs);  // each registered meter's own keys, by its own reader
  r.reject_unknown(valid_energy_keys());
  return e;
}

json EnergySettings::to_json() const {
  std::vector<std::string> meter_names;
  for (MeterChoice m : meters) meter_names.emplace_back(meter_choice_name(m));
  auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  json sim = {{"name", simulated_gpu.name}, {"idle_power_w", simulated_gpu.idle_power_w},
              {"max_power_w", simulated_gpu.max_power_w}, {"min_limit_w", simulated_gpu.min_limit_w},
              {"max_limit_w", simulated_gpu.max_limit_w}, {"power_limit_w", simulated_gpu.power_limit_w},
              {"load", opt(simulated_gpu.load)}};
  json j = {{"enabled", enabled}, {"meters", meter_names}, {"sample_hz", sample_hz}, {"idle_baseline_s", idle_baseline_s},
          {"carbon_intensity_g_per_kwh", opt(carbon_intensity_g_per_kwh)},
          {"country_iso_code", country_iso_code.empty() ? json(nullptr) : json(country_iso_code)}, {"pue", pue},
          {"cpu_estimate_mode", cpu_estimate_mode},
          {"wattmeter_log", wattmeter_log.empty() ? json(nullptr) : json(wattmeter_log)},
          {"wattmeter_format", wattmeter_format}, {"wattmeter_socket", wattmeter_socket},
          {"wattmeter_clock_offset_s", wattmeter_clock_offset_s},
          {"wattmeter_accuracy_pct", wattmeter_accuracy_pct ? json(*wattmeter_accuracy_pct) : json(nullptr)},
          {"simulated_gpu", sim}};
  // Only when set: the spec of a trial (and its key) stays what it was for every experiment without it.
  if (min_meter_updates != kDefaultMinMeterUpdates) j["min_meter_updates"] = min_meter_updates;
  j.update(meter_knobs.to_json());  // the meters' own keys beside the others, as configs spell them
  return j;
}

}  // namespace balerbench
