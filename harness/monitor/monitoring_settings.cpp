// monitoring_settings.cpp: see monitoring_settings.h.
#include "harness/monitor/monitoring_settings.h"

#include <filesystem>

#include "common/text.h"
#include "harness/base/strict_json.h"

namespace balerbench {

using nlohmann::json;

MonitoringSettings parse_monitoring_settings(const json& j, const std::string& source, const std::string& path,
                                             const std::string& base_dir) {
  StrictReader r(j, source, path);
  MonitoringSettings m;
  r.integer("prometheus_port", m.prometheus_port, -1);
  if (m.prometheus_port > 65535)
    r.fail("prometheus_port", "must be a TCP port (0-65535), 0 for any free port, -1 for off", "e.g. 9100");
  r.str("prometheus_address", m.prometheus_address);
  if (m.prometheus_address.empty()) r.fail("prometheus_address", "must not be empty", "127.0.0.1 (loopback only)");
  r.number_in("prometheus_linger_s", m.prometheus_linger_s, 0, 3600);
  r.str("influx_url", m.influx_url);
  if (!m.influx_url.empty() && m.influx_url.rfind("http://", 0) != 0 && m.influx_url.rfind("https://", 0) != 0)
    r.fail("influx_url", "must start with http:// or https:// (got '" + m.influx_url + "')",
           "the InfluxDB 1.x HTTP API, e.g. http://127.0.0.1:8086");
  r.str("influx_database", m.influx_database);
  if (m.influx_database.empty()) r.fail("influx_database", "must not be empty");
  r.str("influx_retention_policy", m.influx_retention_policy);
  r.str("influx_username", m.influx_username);
  r.str("influx_password_env", m.influx_password_env);
  r.boolean("influx_create_database", m.influx_create_database);
  r.str("influx_file", m.influx_file);
  if (!m.influx_file.empty() && !std::filesystem::path(m.influx_file).is_absolute() && !base_dir.empty())
    m.influx_file = (std::filesystem::path(base_dir) / m.influx_file).lexically_normal().string();
  r.number_in("influx_flush_interval_s", m.influx_flush_interval_s, 0.01, 3600);
  r.integer("influx_batch_points", m.influx_batch_points, 1);
  r.integer("influx_buffer_points", m.influx_buffer_points, 1);
  if (m.influx_buffer_points < m.influx_batch_points)
    r.fail("influx_buffer_points", "must be at least influx_batch_points (" + std::to_string(m.influx_batch_points) + ")");
  r.number_in("influx_timeout_s", m.influx_timeout_s, 0.01, 600);
  r.str("experiment", m.experiment);
  // A label of every metric, shown by Grafana and the like: nothing there may hide or reorder it.
  if (const std::string problem = hidden_character_problem(m.experiment); !problem.empty())
    r.fail("experiment", "'" + message_text(m.experiment, 60) + "' " + problem,
           "a label of printable characters, e.g. the experiment's name");
  r.reject_unknown("valid keys: prometheus_port, prometheus_address, prometheus_linger_s, influx_url, influx_database, "
                   "influx_retention_policy, influx_username, influx_password_env, influx_create_database, "
                   "influx_file, influx_flush_interval_s, influx_batch_points, influx_buffer_points, "
                   "influx_timeout_s, experiment");
  return m;
}

json MonitoringSettings::to_json() const {
  return {{"prometheus_port", prometheus_port}, {"prometheus_address", prometheus_address},
          {"prometheus_linger_s", prometheus_linger_s}, {"influx_url", influx_url},
          {"influx_database", influx_database}, {"influx_retention_policy", influx_retention_policy},
          {"influx_username", influx_username}, {"influx_password_env", influx_password_env},
          {"influx_create_database", influx_create_database}, {"influx_file", influx_file},
          {"influx_flush_interval_s", influx_flush_interval_s}, {"influx_batch_points", influx_batch_points},
          {"influx_buffer_points", influx_buffer_points}, {"influx_timeout_s", influx_timeout_s},
          {"experiment", experiment}};
}

}  // namespace balerbench
