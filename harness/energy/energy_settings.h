// energy_settings.h: the `energy` section of a config: which meters, how often
// to sample, the idle baseline, carbon intensity and PUE, and the inputs of
// the estimating and simulated meters; a meter registered with settings of its
// own (meter_registry.h's MeterEntry::knobs) reads its keys from here too.
// Parsed strictly (see strict_json.h).
//
//   "energy": {"meters": ["auto"], "sample_hz": 10, "idle_baseline_s": 0,
//              "country_iso_code": "CHE", "pue": 1.0, "cpu_tdp_w": 150}
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/base/config_key_docs.h"
#include "harness/base/knobs.h"

namespace balerbench {

struct SimulatedGpuSpec {
  std::string name = "Simulated GPU (balerbench model)";
  double idle_power_w = 60;       // drawn with no load
  double max_power_w = 300;       // drawn at full load without a cap (the board's TDP)
  double min_limit_w = 100;       // power-limit constraints, as NVML reports them
  double max_limit_w = 300;
  double power_limit_w = 300;     // the limit in force
  // Load in [0, 1]; absent: the measured process tree's CPU utilisation stands in for it.
  std::optional<double> load;
};

// One entry of energy.meters: a meter of the registry (meter_registry.h) by name, or "auto".
// Made only by find_meter_choice (from the config's names) or as one of the constants below, which
// name the meters that code refers to (auto's rule, the simulated GPU's power limits); a new meter
// needs none.
class MeterChoice {
 public:
  static const MeterChoice kAuto, kNvml, kRapl, kCpuEstimate, kRamEstimate, kWattmeter, kSimulatedGpu;
  const char* name() const { return name_; }
  bool operator==(const MeterChoice& o) const { return std::string_view(name_) == o.name_; }
  bool operator!=(const MeterChoice& o) const { return !(*this == o); }

 private:
  friend std::optional<MeterChoice> find_meter_choice(const std::string& name);
  constexpr explicit MeterChoice(const char* name) : name_(name) {}
  const char* name_;  // a string literal: "auto" or a registry entry's name
};
inline constexpr MeterChoice MeterChoice::kAuto{"auto"};
inline constexpr MeterChoice MeterChoice::kNvml{"nvml"};
inline constexpr MeterChoice MeterChoice::kRapl{"rapl"};
inline constexpr MeterChoice MeterChoice::kCpuEstimate{"cpu_estimate"};
inline constexpr MeterChoice MeterChoice::kRamEstimate{"ram_estimate"};
inline constexpr MeterChoice MeterChoice::kWattmeter{"wattmeter"};
inline constexpr MeterChoice MeterChoice::kSimulatedGpu{"simulated_gpu"};
inline const char* meter_choice_name(MeterChoice m) { return m.name(); }
// "auto" or a name of meter_registry(); nullopt: not a meter name.
std::optional<MeterChoice> find_meter_choice(const std::string& name);
// "auto, nvml, rapl, ...": every name a config may give, "auto" first, then the registry's.
std::string meter_name_list();
// /energy/meters' entry in the configuration reference (base/config_key_docs.h): the registry's
// names, then `auto`.
ConfigKeyDoc meters_key_doc();
// Every registered meter's own keys (meter_registry.cpp; EnergySettings::meter_knobs): at their
// defaults; read from the `energy` section's reader; their entries in the configuration reference,
// in registry order.
Knobs default_meter_knobs();
void read_meter_knobs(StrictReader& r, Knobs& knobs);
std::vector<ConfigKeyDoc> meter_knob_docs();

struct EnergySettings {
  bool enabled = true;  // false: train/compress/decompress measure no energy
  // Meter names (see meter_registry.h) or "auto": nvml and rapl where
  // available, cpu_estimate without rapl, ram_estimate without a RAPL dram domain.
  std::vector<MeterChoice> meters = {MeterChoice::kAuto};
  double sample_hz = 10;       // sampler rate; 0 = read at window edges only
  double idle_baseline_s = 0;  // idle power measured for this long before a run (0 = none)
  // A window holding fewer updates of its slowest measuring meter than this is flagged short
  // (window_conditions.h; MLPerf Power's 60 samples). 0: no check.
  int64_t min_meter_updates = 60;

  // Carbon: an explicit intensity wins over the country table; neither = world default.
  std::optional<double> carbon_intensity_g_per_kwh;
  std::string country_iso_code;  // ISO 3166-1 alpha-3, e.g. "CHE"
  double pue = 1.0;

  // cpu_estimate (its TDP, cpu_tdp_w, is in its own section: meter_knobs; the mode is the
  // emissions file's tracking mode too)
  std::string cpu_estimate_mode = "machine";  // machine (/proc/stat) | process (this process tree)
  // (ram_estimate's ram_power_w and ram_power_w_per_gb are in its own section: meter_knobs)

  // wattmeter (a live log written by an external meter's reader)
  std::string wattmeter_log;
  std::string wattmeter_format = "auto";  // auto | omegawatt | csv
  int64_t wattmeter_socket = -1;          // OmegaWatt socket (1-based); -1 = all sockets summed
  double wattmeter_clock_offset_s = 0;    // added to the log's timestamps to get this host's Unix time
  std::optional<double> wattmeter_accuracy_pct;  // the instrument's stated accuracy (± % of reading)

  SimulatedGpuSpec simulated_gpu;

  // The keys of meters that bring their own section (MeterEntry::knobs), each read by that meter's
  // reader and read back by the meter when it opens. The built-in meters' keys are the fields above.
  Knobs meter_knobs = default_meter_knobs();

  nlohmann::json to_json() const;
};

// `path` is the JSON path of the section ("/energy"); `base_dir` resolves a
// relative wattmeter_log.
EnergySettings parse_energy_settings(const nlohmann::json& j, const std::string& source, const std::string& path,
                                     const std::string& base_dir);

}  // namespace balerbench
