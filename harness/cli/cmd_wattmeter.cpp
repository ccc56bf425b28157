// cmd_wattmeter.cpp: `balerbench wattmeter-energy --log FILE [--format
// omegawatt|csv] [--socket N] [--clock-offset S] --start T0 --end T1 [--json]`:
// the energy of [T0, T1] (Unix seconds, this host's clock) in an external
// wattmeter's log. Prints joules on the first line, then what was read.
#include <cstdio>

#include "harness/cli/commands.h"
#include "harness/cli/option_checks.h"
#include "harness/cli/json_stdout.h"
#include "harness/energy/wattmeter_log.h"

namespace balerbench::cli {
namespace {

struct WattmeterArgs {
  std::string log, format = "auto";
  int socket = -1;
  double offset_s = 0, start_s = 0, end_s = 0;
  bool json = false;
};

int run_wattmeter(const WattmeterArgs& a) {
  JsonStdout json_out(a.json);
  const WattmeterLog log = WattmeterLog::load(a.log, a.format, a.socket, a.offset_s);
  const WattmeterEnergy e = log.energy(a.start_s, a.end_s);
  const WattmeterStats& s = log.stats();
  nlohmann::json j = e.to_json();
  j["log"] = a.log;
  j["format"] = log.format();
  j["socket"] = a.socket > 0 ? nlohmann::json(a.socket) : nlohmann::json("all");
  j["start_unix_s"] = a.start_s;
  j["end_unix_s"] = a.end_s;
  j["clock_offset_s"] = a.offset_s;
  j["log_stats"] = {{"lines", s.lines}, {"bad_frames", s.bad_frames}, {"malformed", s.malformed},
                    {"out_of_order", s.out_of_order}, {"median_interval_s", log.median_interval_s()}};
  if (a.json) {
    json_out.print(j);
    return 0;
  }
  std::printf("%.6f J\n", e.energy_j);
  std::printf("window %.6f s, mean %.3f W, peak %.3f W, %lld samples inside, %.3f s in gaps\n", e.duration_s,
              e.mean_power_w, e.peak_power_w, e.samples, e.gap_s);
  std::printf("log %s (%s, socket %s): %lld lines, %lld bad frames skipped, %lld malformed, %lld out of order, "
              "median interval %.4f s\n",
              a.log.c_str(), log.format().c_str(), a.socket > 0 ? std::to_string(a.socket).c_str() : "all", s.lines,
              s.bad_frames, s.malformed, s.out_of_order, log.median_interval_s());
  return 0;
}

}  // namespace

void register_wattmeter(CLI::App& app, Action& run) {
  auto a = std::make_shared<WattmeterArgs>();
  CLI::App* cmd = app.add_subcommand("wattmeter-energy", "Energy of a time window in an external wattmeter's log "
                                                         "(OmegaWatt or timestamp_s,power_w CSV)");
  cmd->add_option("--log", a->log, "the log file")->required();
  cmd->add_option("--format", a->format, "auto (default), omegawatt or csv")
      ->check(CLI::IsMember({"auto", "omegawatt", "csv"}));
  cmd->add_option("--socket", a->socket, "OmegaWatt socket, 1-based (default: all sockets summed)")
      ->check(in_range(1, 64, "INT"));
  cmd->add_option("--clock-offset", a->offset_s, "seconds added to the log's timestamps (meter clock -> host clock)")
      ->check(finite_number());
  cmd->add_option("--start", a->start_s, "window start, Unix seconds")->required()->check(finite_number());
  cmd->add_option("--end", a->end_s, "window end, Unix seconds")->required()->check(finite_number());
  cmd->add_flag("--json", a->json, "print JSON");
  cmd->callback([a, &run] { run = [a] { return run_wattmeter(*a); }; });
}

}  // namespace balerbench::cli
