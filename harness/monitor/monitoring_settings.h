// monitoring_settings.h: the "monitoring" section of a config (also built from
// the --prometheus-* and --influx* flags): where live metrics go while a
// command runs. Everything is off by default.
//
//   "monitoring": {"prometheus_port": 9464,            // -1 off, 0 any free port
//                  "prometheus_address": "127.0.0.1",  // another address only when asked
//                  "prometheus_linger_s": 0,           // keep serving after the command ends
//                  "influx_url": "http://127.0.0.1:8086", "influx_database": "balerbench",
//                  "influx_username": "", "influx_password_env": "BALERBENCH_INFLUX_PASSWORD",
//                  "influx_file": "", "influx_flush_interval_s": 1, "influx_batch_points": 5000,
//                  "influx_buffer_points": 100000, "influx_timeout_s": 2, "experiment": ""}
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace balerbench {

struct MonitoringSettings {
  int64_t prometheus_port = -1;  // -1: no endpoint; 0: any free port (printed)
  std::string prometheus_address = "127.0.0.1";
  double prometheus_linger_s = 0;  // serve the final values this long after the command ends
  std::string influx_url;          // InfluxDB 1.x, http:// or https://; "" = off
  std::string influx_database = "balerbench";
  std::string influx_retention_policy;  // "" = the database's default
  std::string influx_username;           // "" = no credentials
  std::string influx_password_env = "BALERBENCH_INFLUX_PASSWORD";  // the password is read from this variable
  bool influx_create_database = true;    // CREATE DATABASE (idempotent) before the first write
  std::string influx_file;               // line protocol to a file instead (or as well)
  double influx_flush_interval_s = 1.0;
  int64_t influx_batch_points = 5000;
  int64_t influx_buffer_points = 100000;  // points held while the server is slow or away; past it new points are dropped
  double influx_timeout_s = 2.0;          // connect, read and write timeouts of one request
  std::string experiment;                 // the experiment label; "" = the config file's name

  bool prometheus() const { return prometheus_port >= 0; }
  bool influx() const { return !influx_url.empty() || !influx_file.empty(); }
  bool enabled() const { return prometheus() || influx(); }
  nlohmann::json to_json() const;  // the password itself is never written
};

// Strict parse of the section at JSON path `path` of `source`; relative
// influx_file paths are resolved against `base_dir`.
MonitoringSettings parse_monitoring_settings(const nlohmann::json& j, const std::string& source,
                                             const std::string& path, const std::string& base_dir);

}  // namespace balerbench
