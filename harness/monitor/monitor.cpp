// monitor.cpp: see monitor.h.
#include "harness/monitor/monitor.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "harness/energy/energy_session.h"
#include "harness/monitor/prometheus_text.h"
#include "harness/version.h"

namespace balerbench {

using nlohmann::json;

namespace {

std::string hostname() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

json stats_json(const InfluxStats& s) {
  return {{"target", s.target}, {"points_queued", s.points_queued}, {"points_sent", s.points_sent},
          {"points_dropped", s.points_dropped}, {"points_unsent", s.points_unsent}, {"points_lost", s.points_lost()},
          {"requests_ok", s.requests_ok}, {"requests_failed", s.requests_failed},
          {"last_error", s.last_error.empty() ? json(nullptr) : json(s.last_error)}, {"send_time_s", s.send_time_s},
          {"thread_cpu_s", s.thread_cpu_s}};
}

}  // namespace

Monitor::Monitor(const MonitoringSettings& settings, LiveMetrics& live, const std::string& run_id)
    : settings_(settings), live_(live), run_id_(run_id), host_(hostname()) {
  const LineTags tags{host_, run_id_};
  // Exporters before the endpoint, whose scrapes read them. Neither sends nor writes anything
  // before the first point, so a failure below leaves nothing behind.
  std::vector<std::unique_ptr<LineSink>> sinks;
  if (!settings_.influx_url.empty()) sinks.push_back(make_http_sink(settings_));
  if (!settings_.influx_file.empty()) sinks.push_back(make_file_sink(settings_.influx_file));
  for (auto& sink : sinks) influx_.push_back(std::make_unique<InfluxExporter>(std::move(sink), settings_, tags, &gpus_));
  if (settings_.prometheus())
    prometheus_ = std::make_unique<PrometheusServer>(settings_.prometheus_address,
                                                     static_cast<int>(settings_.prometheus_port),
                                                     [this] { return render_metrics(); });
  for (auto& i : influx_) live_.add_observer(i.get());
}

Monitor::~Monitor() {
  try {
    finish();
  } catch (...) {
  }
}

std::string Monitor::prometheus_url() const { return prometheus_ ? prometheus_->url() : ""; }

std::string Monitor::render_metrics() const {
  ExpositionContext c;
  c.version = kVersion;
  c.run_id = run_id_;
  c.host = host_;
  c.process = read_process_stats();
  c.gpus = gpus_.read();
  for (const auto& i : influx_) c.influx.push_back(i->stats());
  return render_prometheus(live_.state(), c);
}

json Monitor::finish() {
  if (finished_) return report_;
  finished_ = true;
  report_ = {{"prometheus", nullptr}, {"influx", json::array()}};
  if (prometheus_) {
    if (settings_.prometheus_linger_s > 0)
      std::this_thread::sleep_for(std::chrono::duration<double>(settings_.prometheus_linger_s));
    prometheus_->stop();
    const PrometheusServerStats s = prometheus_->stats();
    report_["prometheus"] = {{"url", prometheus_->url()}, {"scrapes", s.scrapes}, {"render_time_s", s.render_time_s}};
  }
  for (auto& i : influx_) {
    live_.remove_observer(i.get());
    report_["influx"].push_back(stats_json(i->finish()));
  }
  return report_;
}

void check_monitoring_settings(const MonitoringSettings& settings) {
  if (!settings.influx_url.empty()) make_http_sink(settings);  // connects nothing
  if (!settings.influx_file.empty()) make_file_sink(settings.influx_file);  // writes nothing
  if (settings.prometheus())
    PrometheusServer::check_can_bind(settings.prometheus_address, static_cast<int>(settings.prometheus_port));
}

std::unique_ptr<Monitor> open_monitor(const MonitoringSettings& asked, LiveMetrics& live, const std::string& run_id) {
  if (!asked.enabled()) return nullptr;
  MonitoringSettings settings = asked;
  if (!settings.influx_url.empty()) {
    // A server that does not answer is said at once, not after the run: the run goes on, and its
    // points are kept in a line-protocol file (the one asked for, or one made here) to send later.
    if (const std::string why = influx_unreachable(settings); !why.empty()) {
      if (settings.influx_file.empty())
        settings.influx_file =
            (std::filesystem::temp_directory_path() / ("balerbench-influx-" + run_id + ".lp")).string();
      std::fprintf(stderr,
                   "monitoring: warning: InfluxDB at %s does not answer (%s); the run goes on, and its points are "
                   "kept in %s to send later (curl -XPOST '%s/write?db=%s&precision=ns' --data-binary @%s)\n",
                   settings.influx_url.c_str(), why.c_str(), settings.influx_file.c_str(), settings.influx_url.c_str(),
                   settings.influx_database.c_str(), settings.influx_file.c_str());
    }
  }
  auto monitor = std::make_unique<Monitor>(settings, live, run_id);
  if (!monitor->prometheus_url().empty())
    std::fprintf(stderr, "monitoring: Prometheus metrics at %s\n", monitor->prometheus_url().c_str());
  return monitor;
}

void feed_live_metrics(LiveMetrics& live, EnergySession& session) {
  live.set_meters(session.sampler().meters());
  session.add_listener([&live](const Snapshot& s) { live.on_snapshot(s); });
}

void print_monitoring_summary(const json& r, std::FILE* out) {
  if (!r["prometheus"].is_null())
    std::fprintf(out, "monitoring: served %s (%lld scrapes)\n", r["prometheus"]["url"].get<std::string>().c_str(),
                 r["prometheus"]["scrapes"].get<long long>());
  for (const auto& i : r["influx"]) {
    std::fprintf(out, "monitoring: influx %s: %lld of %lld points sent", i["target"].get<std::string>().c_str(),
                 i["points_sent"].get<long long>(), i["points_queued"].get<long long>());
    const long long lost = i["points_lost"].get<long long>();
    if (lost > 0)
      std::fprintf(out, ", %lld LOST (%lld dropped with the buffer full, %lld unsent at the end; last error: %s)", lost,
                   i["points_dropped"].get<long long>(), i["points_unsent"].get<long long>(),
                   i["last_error"].is_null() ? "none" : i["last_error"].get<std::string>().c_str());
    std::fprintf(out, "\n");
  }
}

}  // namespace balerbench
