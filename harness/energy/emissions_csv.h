// emissions_csv.h: CodeCarbon-compatible emissions.csv rows, one per phase.
//
// The columns are CodeCarbon's (2.x) in CodeCarbon's order and units:
// duration s, emissions kg CO2eq, emissions_rate kg/s, *_power W (mean),
// *_energy and energy_consumed kWh, ram_total_size GB; then balerbench's own:
// phase, energy_kind (measured / estimated / simulated), carbon intensity and
// its source, wall energy (kWh) when an external meter was read. Fields that do
// not apply (python_version, cloud, latitude) are empty. energy_consumed is
// cpu + gpu + ram; emissions apply the PUE on top, as CodeCarbon does.
#pragma once

#include <string>
#include <vector>

#include "harness/energy/carbon.h"
#include "harness/energy/energy_window.h"
#include "harness/energy/host_info.h"

namespace balerbench {

struct EmissionsContext {
  std::string project_name = "balerbench";
  std::string run_id;
  std::string experiment_id;
  std::string timestamp;  // ISO 8601, UTC
  HostInfo host;
  int gpu_count = 0;
  std::string gpu_model;
  std::string tracking_mode = "machine";
  CarbonIntensity carbon;
};

const std::vector<std::string>& emissions_csv_columns();
std::string emissions_csv_row(const WindowResult& phase, const EmissionsContext& ctx);
// Appends rows to PATH (creating it with the header); atomic (temporary file
// and rename). InputError when PATH exists with other columns.
void append_emissions_csv(const std::string& path, const std::vector<std::string>& rows);
// The same InputError as append_emissions_csv when PATH exists with other columns, before any work
// (a command must not train for an hour and then refuse its emissions.csv).
void check_emissions_csv(const std::string& path);
std::string utc_timestamp_now();

}  // namespace balerbench
