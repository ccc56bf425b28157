// cmd_doctor.cpp: `balerbench doctor [--json] [--interval S]`: the hazards on this machine that would
// skew a time or energy measurement, each with its evidence and its fix, then what was checked and
// found fine (or could not be checked). Exit 0 whether or not there are hazards. --json prints only
// the list: [{"id", "what", "evidence", "fix"}, ...]. docs/doctor.md explains each hazard.
#include <cstdio>

#include "harness/cli/commands.h"
#include "harness/cli/json_stdout.h"
#include "harness/energy/hazards.h"

namespace balerbench::cli {
namespace {

struct DoctorArgs {
  bool json = false;
  double interval_s = kCpuSampleWindowS;
};

int doctor(const DoctorArgs& a) {
  JsonStdout json_out(a.json);
  HazardProbeOptions o;
  o.cpu_window_s = a.interval_s;
  const HazardReport r = collect_hazards(probe_hazards(o));
  if (a.json) {
    json_out.print(r.hazards_json());
    return 0;
  }
  if (r.hazards.empty()) std::printf("balerbench: no hazards found on this machine\n");
  else std::printf("%s", format_hazard_block(r.hazards).c_str());
  std::printf("checked:\n");
  for (const auto& note : r.notes) std::printf("  %s\n", note.c_str());
  return 0;
}

}  // namespace

void register_doctor(CLI::App& app, Action& action) {
  auto a = std::make_shared<DoctorArgs>();
  CLI::App* cmd = app.add_subcommand(
      "doctor", "List what on this machine would skew time and energy measurements, with the fixes");
  cmd->add_flag("--json", a->json, "print the hazards as a JSON list of {id, what, evidence, fix}");
  cmd->add_option("--interval", a->interval_s,
                  "seconds over which the CPUs' use by other processes is sampled (default 0.5)")
      ->check(CLI::Range(0.05, 60.0));
  cmd->callback([a, &action] { action = [a] { return doctor(*a); }; });
}

}  // namespace balerbench::cli
