// energy_options.cpp: see energy_options.h.
#include "harness/cli/energy_options.h"

#include <filesystem>
#include <sstream>

#include "harness/base/strict_json.h"
#include "harness/cli/option_checks.h"

namespace balerbench::cli {

void add_energy_options(CLI::App* cmd, EnergyArgs& a, bool sampling) {
  if (sampling) {
    cmd->add_option("--meters", a.meters, "comma list: " + meter_name_list() + " (default auto)");
    cmd->add_option("--hz", a.hz, "sampling rate (default 10; 0 = read at the edges only)");
    cmd->add_option("--idle-baseline", a.idle_baseline_s, "measure idle power for S seconds first; reports net energy");
  }
  cmd->add_option("--country", a.country, "ISO 3166-1 alpha-3 code for the carbon intensity (e.g. CHE)");
  cmd->add_option("--carbon-intensity", a.carbon_intensity_g_per_kwh, "g CO2eq per kWh (overrides --country)");
  cmd->add_option("--pue", a.pue, "power usage effectiveness of the facility (default 1.0)");
  cmd->add_option("--cpu-tdp", a.cpu_tdp_w, "TDP per socket in W for cpu_estimate");
  cmd->add_option("--cpu-mode", a.cpu_mode, "cpu_estimate utilisation: machine (default) or process");
  cmd->add_option("--wattmeter-log", a.wattmeter_log, "a wattmeter log being written, for the wattmeter meter")->check(non_empty_path());
  cmd->add_option("--wattmeter-format", a.wattmeter_format, "auto, omegawatt or csv");
  cmd->add_option("--wattmeter-socket", a.wattmeter_socket, "OmegaWatt socket (1-based; default all)");
  cmd->add_option("--wattmeter-offset", a.wattmeter_offset_s, "seconds added to the log's timestamps");
  cmd->add_option("--wattmeter-accuracy", a.wattmeter_accuracy_pct,
                  "the wattmeter's stated accuracy, in % of reading (adds to every window's ±)");
  cmd->add_option("--sim-load", a.sim_load, "simulated_gpu: fixed load in [0, 1]");
  cmd->add_option("--sim-power-limit", a.sim_limit_w, "simulated_gpu: power limit in W");
}

EnergySettings energy_settings_from(const EnergyArgs& a) {
  nlohmann::json j;
  std::vector<std::string> meters;
  std::stringstream in(a.meters);
  for (std::string m; std::getline(in, m, ',');)
    if (!m.empty()) meters.push_back(m);
  j["meters"] = meters;
  j["sample_hz"] = a.hz;
  j["idle_baseline_s"] = a.idle_baseline_s;
  if (!a.country.empty()) j["country_iso_code"] = a.country;
  if (a.carbon_intensity_g_per_kwh) j["carbon_intensity_g_per_kwh"] = *a.carbon_intensity_g_per_kwh;
  j["pue"] = a.pue;
  if (a.cpu_tdp_w) j["cpu_tdp_w"] = *a.cpu_tdp_w;
  j["cpu_estimate_mode"] = a.cpu_mode;
  if (!a.wattmeter_log.empty())
    j["wattmeter_log"] = std::filesystem::absolute(a.wattmeter_log).lexically_normal().string();
  j["wattmeter_format"] = a.wattmeter_format;
  j["wattmeter_socket"] = a.wattmeter_socket;
  j["wattmeter_clock_offset_s"] = a.wattmeter_offset_s;
  if (a.wattmeter_accuracy_pct) j["wattmeter_accuracy_pct"] = *a.wattmeter_accuracy_pct;
  if (a.sim_load || a.sim_limit_w) {
    j["simulated_gpu"] = nlohmann::json::object();
    if (a.sim_load) j["simulated_gpu"]["load"] = *a.sim_load;
    if (a.sim_limit_w) j["simulated_gpu"]["power_limit_w"] = *a.sim_limit_w;
  }
  // The options as named on the command line, for errors about their values ("--hz", not "/sample_hz").
  static const JsonOrigins kOptions = {
      {"/meters", "--meters"}, {"/sample_hz", "--hz"}, {"/idle_baseline_s", "--idle-baseline"},
      {"/country_iso_code", "--country"}, {"/carbon_intensity_g_per_kwh", "--carbon-intensity"}, {"/pue", "--pue"},
      {"/cpu_tdp_w", "--cpu-tdp"}, {"/cpu_estimate_mode", "--cpu-mode"}, {"/wattmeter_log", "--wattmeter-log"},
      {"/wattmeter_format", "--wattmeter-format"}, {"/wattmeter_socket", "--wattmeter-socket"},
      {"/wattmeter_clock_offset_s", "--wattmeter-offset"}, {"/wattmeter_accuracy_pct", "--wattmeter-accuracy"},
      {"/simulated_gpu/load", "--sim-load"}, {"/simulated_gpu/power_limit_w", "--sim-power-limit"}};
  try {
    return parse_energy_settings(j, "command-line options", "", "");
  } catch (const JsonPathError& e) {
    rethrow_with_origin(e, kOptions);
  }
}

}  // namespace balerbench::cli
