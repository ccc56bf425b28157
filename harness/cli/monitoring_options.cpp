// monitoring_options.cpp: see monitoring_options.h.
#include "harness/cli/monitoring_options.h"

#include <filesystem>
#include <map>

#include "harness/base/strict_json.h"
#include "harness/cli/option_checks.h"

namespace balerbench::cli {

using nlohmann::json;

void add_monitoring_options(CLI::App* cmd, MonitoringArgs& a, bool experiment) {
  cmd->add_option("--prometheus-port", a.prometheus_port,
                  "serve Prometheus metrics on this port while running (0 = any free port)");
  cmd->add_option("--prometheus-address", a.prometheus_address,
                  "address for --prometheus-port (default 127.0.0.1; 0.0.0.0 exposes it to the network)");
  // Checked here: NaN would reach the config as null, which reads as "not given" (0 s).
  cmd->add_option("--prometheus-linger", a.prometheus_linger_s,
                  "keep serving the final values for S seconds after the command ends")
      ->check(in_range(0, 3600, "SECONDS"));
  cmd->add_option("--influx", a.influx_url, "stream metrics to InfluxDB 1.x at URL (e.g. http://127.0.0.1:8086)");
  cmd->add_option("--influx-db", a.influx_database, "InfluxDB database (default balerbench)");
  cmd->add_option("--influx-file", a.influx_file, "write the same line protocol to FILE")->check(non_empty_path());
  if (experiment)
    cmd->add_option("--experiment", a.experiment, "experiment label of the live metrics (default: the config's name)");
}

json monitoring_json(const MonitoringArgs& a) {
  json j = json::object();
  if (a.prometheus_port) j["prometheus_port"] = *a.prometheus_port;
  if (a.prometheus_address) j["prometheus_address"] = *a.prometheus_address;
  if (a.prometheus_linger_s) j["prometheus_linger_s"] = *a.prometheus_linger_s;
  if (a.influx_url) j["influx_url"] = *a.influx_url;
  if (a.influx_database) j["influx_database"] = *a.influx_database;
  if (a.influx_file) j["influx_file"] = std::filesystem::absolute(*a.influx_file).lexically_normal().string();
  if (a.experiment) j["experiment"] = *a.experiment;
  return j;
}

namespace {

// The option that sets each key of monitoring_json, named in errors about its value.
std::string flag_of(const std::string& key) {
  static const std::map<std::string, std::string> kFlags = {
      {"prometheus_port", "--prometheus-port"}, {"prometheus_address", "--prometheus-address"},
      {"prometheus_linger_s", "--prometheus-linger"}, {"influx_url", "--influx"},
      {"influx_database", "--influx-db"}, {"influx_file", "--influx-file"}, {"experiment", "--experiment"}};
  const auto it = kFlags.find(key);
  return it == kFlags.end() ? "--" + key : it->second;
}

}  // namespace

std::vector<ConfigOverride> monitoring_overrides(const MonitoringArgs& a) {
  std::vector<ConfigOverride> out;
  const json j = monitoring_json(a);
  for (const auto& [key, value] : j.items()) out.push_back({"monitoring." + key + "=" + value.dump(), flag_of(key)});
  return out;
}

MonitoringSettings monitoring_settings_from(const MonitoringArgs& a, json defaults) {
  const json j = monitoring_json(a);
  JsonOrigins origins;
  for (const auto& [key, value] : j.items()) {
    defaults[key] = value;
    origins["/" + key] = flag_of(key);
  }
  try {
    return parse_monitoring_settings(defaults, "command-line options", "", "");
  } catch (const JsonPathError& e) {
    rethrow_with_origin(e, origins);
  }
}

}  // namespace balerbench::cli
