// cmd_serve_metrics.cpp: `balerbench serve-metrics [--prometheus-port N]
// [--influx URL] [meters...] [--duration S]`: watch the machine alone. The
// meters are sampled and exported (Prometheus endpoint, InfluxDB, line-protocol
// file) until SIGINT/SIGTERM or --duration, then a summary is printed.
#include <signal.h>
#include <time.h>

#include <cerrno>
#include <cmath>
#include <cstdio>

#include "harness/cli/commands.h"
#include "harness/cli/energy_options.h"
#include "harness/cli/monitoring_options.h"
#include "harness/cli/option_checks.h"
#include "harness/energy/energy_session.h"
#include "harness/monitor/monitor.h"

namespace balerbench::cli {
namespace {

struct ServeArgs {
  EnergyArgs energy;
  MonitoringArgs monitoring;
  double duration_s = 0;
};

constexpr int64_t kDefaultPort = 9464;
constexpr double kMaxDurationS = 1e9;

int run_serve(const ServeArgs& a) {
  const EnergySettings energy = energy_settings_from(a.energy);
  nlohmann::json defaults = nlohmann::json::object();
  if (!a.monitoring.influx_url && !a.monitoring.influx_file) defaults["prometheus_port"] = kDefaultPort;
  const MonitoringSettings monitoring = monitoring_settings_from(a.monitoring, defaults);
  // Blocked before any thread starts, so every thread inherits the mask and the signal waits for sigtimedwait.
  sigset_t stop_signals, before;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, &before);
  struct Restore {
    sigset_t mask;
    ~Restore() { pthread_sigmask(SIG_SETMASK, &mask, nullptr); }
  } restore{before};

  LiveMetrics live("serve-metrics");
  const std::string run_id = make_run_id();
  Monitor monitor(monitoring, live, run_id);
  EnergySession session(energy, nullptr, run_id);
  feed_live_metrics(live, session);
  std::string meters;
  for (const auto& m : session.sampler().meters()) meters += (meters.empty() ? "" : ", ") + m->name();
  std::fprintf(stderr, "serve-metrics: sampling %s at %.4g Hz", meters.empty() ? "no meter" : meters.c_str(),
               session.sampler().effective_hz());
  if (!monitor.prometheus_url().empty()) std::fprintf(stderr, "; Prometheus metrics at %s", monitor.prometheus_url().c_str());
  char duration[48];
  std::snprintf(duration, sizeof duration, "for %g s", a.duration_s);
  std::fprintf(stderr, "; %s\n", a.duration_s > 0 ? duration : "Ctrl-C or SIGTERM to stop");
  const Snapshot begin = session.mark();
  int sig = 0;
  if (a.duration_s > 0) {
    timespec ts{};
    ts.tv_sec = static_cast<time_t>(a.duration_s);
    ts.tv_nsec = static_cast<long>((a.duration_s - std::floor(a.duration_s)) * 1e9);
    while ((sig = sigtimedwait(&stop_signals, nullptr, &ts)) < 0 && errno == EINTR) {
    }
  } else {
    while (sigwait(&stop_signals, &sig) != 0) {
    }
  }
  session.add_window("serve", begin, session.mark());
  session.finish();
  const nlohmann::json mon = monitor.finish();
  const nlohmann::json r = session.report();
  const nlohmann::json& t = r["phases"][0];
  std::fprintf(stderr, "serve-metrics: stopped%s after %.1f s: %s (%s)\n", sig > 0 ? " by a signal" : "",
               t["duration_s"].get<double>(), format_energy(t["total_energy_j"]).c_str(),
               t["energy_kind"].get<std::string>().c_str());
  print_monitoring_summary(mon, stderr);
  return 0;
}

}  // namespace

void register_serve_metrics(CLI::App& app, Action& run) {
  auto a = std::make_shared<ServeArgs>();
  CLI::App* cmd = app.add_subcommand("serve-metrics", "Watch the machine alone: sample the meters and serve them to "
                                                      "Prometheus (default port 9464) and/or InfluxDB until Ctrl-C");
  add_energy_options(cmd, a->energy, true);
  add_monitoring_options(cmd, a->monitoring, false);
  // At most kMaxDurationS: an infinity or 1e19 overflowed the wait's time_t and stopped at once.
  cmd->add_option("--duration", a->duration_s,
                  "stop after S seconds, at most 1e9 (about 31 years; default: run until SIGINT/SIGTERM)")
      ->check(in_range(0, kMaxDurationS, "SECONDS"));
  cmd->callback([a, &run] { run = [a] { return run_serve(*a); }; });
}

}  // namespace balerbench::cli
