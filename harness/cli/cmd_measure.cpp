// cmd_measure.cpp: `balerbench measure [options] -- CMD ARGS...`, the
// `perf stat` of energy: runs any command under the meters and reports its
// duration, energy per meter and domain, mean and peak power, CO2 and the
// sample count on stderr (the command's own output is left alone).
//
// The command's exit code is passed through (128 + N when it dies of signal
// N). A SIGINT or SIGTERM sent to balerbench with kill(1) is forwarded to the
// command; one typed at the terminal already reaches both (same process
// group), so it is not sent twice. balerbench waits for the command to end
// and reports what it measured up to then.
#include <sys/wait.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "common/error.h"
#include "datasets/npy.h"
#include "common/paths.h"
#include "harness/base/blas_kernel.h"
#include "harness/cli/commands.h"
#include "harness/cli/option_checks.h"
#include "harness/cli/energy_options.h"
#include "harness/cli/monitoring_options.h"
#include "harness/cli/output_check.h"
#include "harness/energy/energy_session.h"
#include "harness/monitor/monitor.h"
#include "harness/run/system_description.h"
#include "common/atomic_file.h"

namespace balerbench::cli {
namespace {

using nlohmann::json;

struct MeasureArgs {
  EnergyArgs energy;
  MonitoringArgs monitoring;
  std::string json_path;
  std::vector<std::string> command;
};

// Written by the main thread, read by the handler, which may run on any thread
// (the sampler's too); lock-free atomics are async-signal-safe.
std::atomic<int> g_child_pid{0};
std::atomic<int> g_pending_signal{0};

void forward_signal(int sig, siginfo_t* info, void*) {
  // Typed at a terminal (SI_KERNEL), the signal reached the child already.
  if (info && info->si_code == SI_KERNEL) return;
  if (const int pid = g_child_pid.load(); pid > 0) {
    kill(pid, sig);
    return;
  }
  // No child yet: leave it for whoever sees the pid first (this handler or the main thread), sent once.
  g_pending_signal.store(sig);
  if (const int pid = g_child_pid.load(); pid > 0)
    if (const int s = g_pending_signal.exchange(0)) kill(pid, s);
}

struct SignalForwarding {
  SignalForwarding() {
    struct sigaction sa {};
    sa.sa_sigaction = forward_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    sigaction(SIGHUP, &sa, &old_hup);  // a closed terminal: passed on, so the command never outlives measure
  }
  ~SignalForwarding() {
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
    sigaction(SIGHUP, &old_hup, nullptr);
    g_child_pid.store(0);
    g_pending_signal.store(0);
  }
  struct sigaction old_int {}, old_term {}, old_hup {};
};

// fork + execvp; an exec failure comes back through a close-on-exec pipe.
// `child_mask` is the signal mask the command starts with.
pid_t spawn(const std::vector<std::string>& cmd, const sigset_t& child_mask) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  std::vector<char*> argv;
  for (const auto& s : cmd) argv.push_back(const_cast<char*>(s.c_str()));
  argv.push_back(nullptr);
  // The command runs in the environment the user gave balerbench, not with balerbench's own BLAS kernel.
  const std::vector<std::string> env = user_environment();
  std::vector<char*> envp;
  for (const auto& s : env) envp.push_back(const_cast<char*>(s.c_str()));
  envp.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    close(fds[0]);
    // Until exec the child still has balerbench's forwarding handler: a signal forwarded now must act as on
    // the command itself, so restore the default before unblocking.
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    restore_file_size_signal();  // balerbench ignores SIGXFSZ; the command gets the user's disposition
    sigprocmask(SIG_SETMASK, &child_mask, nullptr);
    execvpe(argv[0], argv.data(), envp.data());
    const int err = errno;
    (void)!write(fds[1], &err, sizeof err);
    _exit(127);
  }
  close(fds[1]);
  int err = 0;
  const ssize_t n = read(fds[0], &err, sizeof err);
  close(fds[0]);
  if (n == static_cast<ssize_t>(sizeof err)) {
    waitpid(pid, nullptr, 0);
    throw InputError("cannot run '" + cmd[0] + "': " + std::strerror(err),
                     "give the command after --, e.g. balerbench measure -- sleep 1");
  }
  return pid;
}

// The command's exit code, as a shell gives it: 128 + N when signal N killed it (then `killed_by` = N).
int wait_exit_code(pid_t pid, int& killed_by) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
  killed_by = 0;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) {
    killed_by = WTERMSIG(status);
    return 128 + killed_by;
  }
  return 1;
}

// "killed by signal 9 (SIGKILL), exit code 137" or "exit code 2": a signal's code said as what it is.
std::string how_it_ended(const json& r) {
  const std::string code = "exit code " + std::to_string(r["exit_code"].get<int>());
  if (r["signal"].is_null()) return code;
  const int sig = r["signal"].get<int>();
  const char* abbrev = sigabbrev_np(sig);
  return "killed by signal " + std::to_string(sig) + (abbrev ? std::string(" (SIG") + abbrev + ")" : "") + ", " + code;
}

// One meter domain's row of the report's table.
void print_domain_row(const json& d, std::FILE* out) {
  char peak_buf[32];
  if (d["peak_power_w"].is_null()) std::snprintf(peak_buf, sizeof peak_buf, "-");
  else std::snprintf(peak_buf, sizeof peak_buf, "%.2f", d["peak_power_w"].get<double>());
  std::fprintf(out, "   %-14s %-10s %-10s %12s %12s %10.2f %10s %12s%s\n", d["meter"].get<std::string>().c_str(),
               d["domain"].get<std::string>().c_str(), d["kind"].get<std::string>().c_str(),
               format_energy(d["energy_j"]).c_str(),
               d["uncertainty_j"].is_null() ? "n/q" : format_energy(d["uncertainty_j"]).c_str(),
               d["avg_power_w"].get<double>(), peak_buf,
               d["net_energy_j"].is_null() ? "-" : format_energy(d["net_energy_j"]).c_str(),
               d["in_total"] ? "" : "  (not in total)");
}

// The wall meter against the components it covers.
void print_crosscheck(const json& x, std::FILE* out) {
  const auto with_pm = [](const json& v, const json& u) {
    return format_energy(v) + (u.is_null() ? std::string(" (± n/q)") : " ± " + format_energy(u));
  };
  std::fprintf(out, "\n   cross-check: wall %s, components (%s) %s", with_pm(x["wall_j"], x["wall_uncertainty_j"]).c_str(),
               x["components"].get<std::string>().c_str(),
               with_pm(x["components_j"], x["components_uncertainty_j"]).c_str());
  if (!x["ratio"].is_null()) std::fprintf(out, ", ratio %.3f", x["ratio"].get<double>());
  std::fprintf(out, "\n     %s", x["reading"].get<std::string>().c_str());
  if (!x["left_out"].get<std::string>().empty())
    std::fprintf(out, "\n     not compared: %s", x["left_out"].get<std::string>().c_str());
}

void print_report(const json& r, std::FILE* out) {
  const json& t = r["total"];
  std::fprintf(out, "\n balerbench measure: %s\n\n", r["command_line"].get<std::string>().c_str());
  std::fprintf(out, "   %.3f s, %s, %lld samples at %.4g Hz\n\n", t["duration_s"].get<double>(),
               how_it_ended(r).c_str(), t["samples"].get<long long>(), r["sampler"]["effective_hz"].get<double>());
  std::fprintf(out, "   %-14s %-10s %-10s %12s %12s %10s %10s %12s\n", "meter", "domain", "kind", "energy", "±",
               "mean W", "peak W", "net of idle");
  for (const auto& d : t["domains"]) print_domain_row(d, out);
  std::string pm;
  if (!t["total_uncertainty_j"].is_null()) {
    char buf[48] = "";
    if (!t["total_uncertainty_pct"].is_null())
      std::snprintf(buf, sizeof buf, " (%.2g%%)", t["total_uncertainty_pct"].get<double>());
    pm = " ± " + format_energy(t["total_uncertainty_j"]) + buf;
  }
  std::fprintf(out, "\n   total %s%s (%s), mean %.2f W", format_energy(t["total_energy_j"]).c_str(), pm.c_str(),
               t["energy_kind"].get<std::string>().c_str(),
               t["duration_s"].get<double>() > 0 ? t["total_energy_j"].get<double>() / t["duration_s"].get<double>()
                                                 : 0.0);
  if (!t["net_total_energy_j"].is_null()) std::fprintf(out, ", net of idle %s", format_energy(t["net_total_energy_j"]).c_str());
  if (!t["wall_energy_j"].is_null()) std::fprintf(out, ", wall %s", format_energy(t["wall_energy_j"]).c_str());
  if (t.contains("crosscheck") && t["crosscheck"].is_object()) print_crosscheck(t["crosscheck"], out);
  const std::string attributable = attribution_summary(t);
  if (!attributable.empty()) std::fprintf(out, "\n   attributable to balerbench and the command: %s", attributable.c_str());
  const json& c = r["carbon"];
  std::fprintf(out, "\n   CO2 %s at %.1f g/kWh, PUE %.2f (%s)\n", format_mass_g(t["co2_g"]).c_str(),
               c["carbon_intensity_g_per_kwh"].get<double>(), c["pue"].get<double>(),
               c["source"].get<std::string>().c_str());
  for (const auto& s : r["skipped_meters"])
    std::fprintf(out, "   (skipped %s: %s)\n", s["name"].get<std::string>().c_str(),
                 s["reason"].get<std::string>().c_str());
  const std::string coverage = t["uncertainty"];
  if (coverage != "measured" && coverage != "none") std::fprintf(out, "   ± %s\n", coverage.c_str());
  for (const auto& f : t["flags"]) std::fprintf(out, "   ! %s\n", f.get<std::string>().c_str());
  const json& o = r["sampler"]["overhead"];
  std::fprintf(out, "   sampler: %lld reads, %.3f ms each, %.3f %% of one CPU\n\n", o["reads"].get<long long>(),
               1e3 * o["mean_read_s"].get<double>(), 100 * o["cpu_fraction_of_one_cpu"].get<double>());
}

int run_measure(const MeasureArgs& a) {
  if (a.command.empty())
    throw InputError("no command to measure", "balerbench measure [options] -- CMD ARGS..., e.g. -- sleep 1");
  std::string line;
  for (const auto& s : a.command) line += (line.empty() ? "" : " ") + s;
  if (!a.json_path.empty()) check_output_file(a.json_path, "give --json a file that can be written");
  check_not_over_a_database(a.json_path, "--json");
  // The wattmeter log is read while the command runs: neither output may be written over it.
  check_output_is_not_input(a.json_path, "--json", a.energy.wattmeter_log, "the wattmeter log");
  check_output_is_not_input(a.monitoring.influx_file.value_or(""), "--influx-file", a.energy.wattmeter_log,
                            "the wattmeter log");
  const EnergySettings energy = energy_settings_from(a.energy);
  const MonitoringSettings monitoring = monitoring_settings_from(a.monitoring);
  LiveMetrics live("measure");
  const std::string run_id = make_run_id();
  const std::unique_ptr<Monitor> monitor = open_monitor(monitoring, live, run_id);
  EnergySession session(energy, nullptr, run_id);
  feed_live_metrics(live, session);
  int exit_code = 0, killed_by = 0;
  {
    SignalForwarding forwarding;
    // Blocked on this thread across fork, so the child cannot take a signal with balerbench's handler.
    sigset_t forwarded, before;
    sigemptyset(&forwarded);
    sigaddset(&forwarded, SIGINT);
    sigaddset(&forwarded, SIGTERM);
    sigaddset(&forwarded, SIGHUP);
    const Snapshot begin = session.mark();
    sigprocmask(SIG_BLOCK, &forwarded, &before);
    pid_t pid = -1;
    try {
      pid = spawn(a.command, before);
    } catch (...) {
      sigprocmask(SIG_SETMASK, &before, nullptr);
      throw;
    }
    sigprocmask(SIG_SETMASK, &before, nullptr);
    g_child_pid.store(pid);
    if (const int s = g_pending_signal.exchange(0)) kill(pid, s);  // arrived before the pid was known
    exit_code = wait_exit_code(pid, killed_by);
    session.add_window("command", begin, session.mark());
  }
  session.finish();
  json r = session.report();
  if (monitor) r["monitoring"] = monitor->finish();
  r["command"] = a.command;
  r["command_line"] = line;
  r["exit_code"] = exit_code;
  r["signal"] = killed_by ? json(killed_by) : json(nullptr);  // the signal that killed the command
  r["system"] = current_system();
  r["total"] = r["phases"][0];  // the command's window, not the session's (which includes the idle baseline)
  if (!a.json_path.empty()) {
    const std::string text = r.dump(2) + "\n";
    write_file_atomic(a.json_path, std::vector<uint8_t>(text.begin(), text.end()));
  }
  print_report(r, stderr);
  if (monitor) print_monitoring_summary(r["monitoring"], stderr);
  return exit_code;
}

}  // namespace

void register_measure(CLI::App& app, Action& run) {
  auto a = std::make_shared<MeasureArgs>();
  CLI::App* cmd = app.add_subcommand("measure", "Run any command under the energy meters (the perf stat of energy): "
                                                "balerbench measure [options] -- CMD ARGS...");
  add_energy_options(cmd, a->energy, true);
  add_monitoring_options(cmd, a->monitoring, false);
  cmd->add_option("--json", a->json_path, "also write the full report as JSON to FILE")->check(non_empty_path());
  cmd->add_option("command", a->command, "the command and its arguments, after --")->expected(-1);
  cmd->prefix_command(false);
  cmd->footer(
      "Exit status: the command's own, passed through: its exit code, or 128+N when signal N killed it (the\n"
      "summary on stderr says which, e.g. 'killed by signal 9 (SIGKILL), exit code 137'). When balerbench itself\n"
      "fails, it prints a line starting 'balerbench: error:' (or 'balerbench: internal error:') in place of the\n"
      "summary, with its own exit code: 2 for bad input (an unknown meter, a command that cannot be run), 1 for\n"
      "an internal error or a meter lost mid-run (docs/exit_codes.md lists them all). So an exit code that\n"
      "follows the summary is the command's, even a 2.");
  cmd->callback([a, &run] { run = [a] { return run_measure(*a); }; });
}

}  // namespace balerbench::cli
