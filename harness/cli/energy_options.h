// energy_options.h: the energy flags shared by `meters` and `measure`
// (--meters, --hz, --idle-baseline, carbon, TDP, wattmeter log). They are
// turned into an `energy` JSON section and parsed by parse_energy_settings,
// so flags and configs are validated by the same code.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

#include "harness/energy/energy_settings.h"

namespace balerbench::cli {

struct EnergyArgs {
  std::string meters = "auto";
  double hz = 10;
  double idle_baseline_s = 0;
  std::string country;
  std::optional<double> carbon_intensity_g_per_kwh;
  double pue = 1.0;
  std::optional<double> cpu_tdp_w;
  std::string cpu_mode = "machine";
  std::string wattmeter_log, wattmeter_format = "auto";
  int64_t wattmeter_socket = -1;
  double wattmeter_offset_s = 0;
  std::optional<double> wattmeter_accuracy_pct;
  std::optional<double> sim_load, sim_limit_w;
};

// `sampling` adds --meters, --hz and --idle-baseline (measure); `meters` lists them all.
void add_energy_options(CLI::App* cmd, EnergyArgs& a, bool sampling);
EnergySettings energy_settings_from(const EnergyArgs& a);

}  // namespace balerbench::cli
