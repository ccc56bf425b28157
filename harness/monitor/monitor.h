// monitor.h: the live exporters of one command: a Prometheus endpoint and
// InfluxDB destinations (HTTP and/or a file), all fed by one LiveMetrics.
//
//   LiveMetrics live("train");
//   Monitor monitor(settings.monitoring, live, run_id);  // binds, connects nothing yet
//   ... session.add_listener([&](const Snapshot& s) { live.on_snapshot(s); }); ...
//   json r = monitor.finish();   // lingers, stops, tallies what InfluxDB got
//
// Construction fails with an InputError (exit 2) for a port in use or a
// missing password, before the command has done anything.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "harness/monitor/influx_exporter.h"
#include "harness/monitor/live_metrics.h"
#include "harness/monitor/monitoring_settings.h"
#include "harness/monitor/process_stats.h"
#include "harness/monitor/prometheus_server.h"

namespace balerbench {

class Monitor {
 public:
  Monitor(const MonitoringSettings& settings, LiveMetrics& live, const std::string& run_id);
  ~Monitor();
  Monitor(const Monitor&) = delete;
  Monitor& operator=(const Monitor&) = delete;

  std::string prometheus_url() const;  // "" without an endpoint
  std::string render_metrics() const;  // what a scrape gets now
  // Serves the final values for prometheus_linger_s, then stops everything.
  // {"prometheus": {url, scrapes, render_time_s} | null,
  //  "influx": [{target, points_queued, points_sent, points_dropped, points_unsent, points_lost, ...}]}
  nlohmann::json finish();

 private:
  MonitoringSettings settings_;
  LiveMetrics& live_;
  std::string run_id_, host_;
  GpuMemoryReader gpus_;
  std::vector<std::unique_ptr<InfluxExporter>> influx_;
  std::unique_ptr<PrometheusServer> prometheus_;
  bool finished_ = false;
  nlohmann::json report_;
};

class EnergySession;

// The checks a Monitor's construction makes (the InfluxDB settings and file, the Prometheus address
// and port free now), starting nothing: for a command that must fail before it creates a file.
void check_monitoring_settings(const MonitoringSettings& settings);

// A Monitor when `settings` asks for any exporter (its Prometheus URL printed
// on stderr), else nullptr.
std::unique_ptr<Monitor> open_monitor(const MonitoringSettings& settings, LiveMetrics& live, const std::string& run_id);

// Feeds every snapshot of `session` to `live` from now on.
void feed_live_metrics(LiveMetrics& live, EnergySession& session);

// "monitoring: http://127.0.0.1:9464/metrics (12 scrapes); influx http://...: 480 points sent, 20 lost (why)".
void print_monitoring_summary(const nlohmann::json& report, std::FILE* out);

}  // namespace balerbench
