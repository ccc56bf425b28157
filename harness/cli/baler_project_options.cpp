// baler_project_options.cpp: see baler_project_options.h.
#include "harness/cli/baler_project_options.h"

#include <cstdio>

#include "common/error.h"
#include "harness/baler/side_by_side.h"
#include "harness/cli/option_checks.h"

namespace balerbench::cli {

void add_baler_project_options(CLI::App* cmd, BalerProjectArgs& a, bool info, CLI::Option* config, CLI::Option* out) {
  CLI::Option* p = cmd->add_option("--baler-project", a.project,
                                   "run on a Baler project as it stands: workspaces/WS/P (reads config/P_config.py, "
                                   "writes output/ in Baler's layout, keeps Baler's files in output/backup/)");
  p->excludes(config)->excludes(out);
  cmd->add_option("--baler-config-timeout", a.config_timeout_s,
                  "with --baler-project: seconds reading config/P_config.py may take before its python3 is stopped "
                  "(default " + std::to_string(static_cast<int>(kBalerConfigTimeoutS)) + "; 0: no limit)")
      ->check(in_range(0, 86400, "SECONDS"))
      ->needs(p);
  if (info)
    cmd->add_option("--baler-log", a.logs,
                    "with --baler-project: Baler's console output (repeatable; default: the project's output/*.log)")
        ->needs(p);
  if (info)
    cmd->add_option("--baler-measure", a.measures,
                    "with --baler-project: what `balerbench measure --json FILE -- python3 -m baler --mode MODE ...` "
                    "wrote for Baler's train, compress or decompress (repeatable; default: the project's "
                    "output/*.measure.json): Baler's energy beside balerbench's")
        ->needs(p)
        ->check(CLI::ExistingFile);
}

std::unique_ptr<BalerProjectRun> open_baler_project_run(const std::string& config, const BalerProjectArgs& a,
                                                        const std::vector<std::string>& sets,
                                                        const std::vector<ConfigOverride>& options,
                                                        const std::string& command) {
  if (a.project.empty()) {
    if (config.empty())
      throw InputError(command + " needs --config FILE.json or --baler-project workspaces/WS/P",
                       "see balerbench " + command + " --help");
    return nullptr;
  }
  return std::make_unique<BalerProjectRun>(a.project, sets, options, command, a.config_timeout_s);
}

int print_baler_info(const BalerProjectRun& run, const BalerProjectArgs& a, bool json, JsonStdout& out) {
  const nlohmann::json r = run.side_by_side(a.logs, a.measures);
  if (json) out.print(r);
  else std::fputs((run.config_notes_text() + format_side_by_side(r)).c_str(), stdout);
  return 0;
}

}  // namespace balerbench::cli
