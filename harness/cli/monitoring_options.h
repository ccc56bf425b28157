// monitoring_options.h: the live-export flags shared by train, compress,
// decompress, measure and serve-metrics (--prometheus-port, --influx, ...).
// They become the same JSON as a config's "monitoring" section and are
// validated by parse_monitoring_settings.
#pragma once

#include <CLI/CLI.hpp>

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "harness/monitor/monitoring_settings.h"
#include "harness/run/run_config.h"

namespace balerbench::cli {

struct MonitoringArgs {
  std::optional<int64_t> prometheus_port;
  std::optional<std::string> prometheus_address;
  std::optional<double> prometheus_linger_s;
  std::optional<std::string> influx_url, influx_database, influx_file, experiment;
};

// `experiment` adds --experiment (commands that run trials).
void add_monitoring_options(CLI::App* cmd, MonitoringArgs& a, bool experiment);
// The flags given, as a "monitoring" section (only the keys set).
nlohmann::json monitoring_json(const MonitoringArgs& a);
// The same as overrides of a config's keys, each named by its option, for commands that read a config.
std::vector<ConfigOverride> monitoring_overrides(const MonitoringArgs& a);
// For commands without a config.
MonitoringSettings monitoring_settings_from(const MonitoringArgs& a, nlohmann::json defaults = nlohmann::json::object());

}  // namespace balerbench::cli
