// baler_project_options.h: `--baler-project workspaces/WS/P` on train, compress, decompress and
// info (and info's `--baler-log FILE`): the same commands as with --config, run on a Baler project
// as it stands (harness/baler/baler_project_run.h).
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <vector>

#include "harness/baler/baler_project_run.h"
#include "harness/cli/json_stdout.h"

namespace balerbench::cli {

struct BalerProjectArgs {
  std::string project;
  std::vector<std::string> logs;
  std::vector<std::string> measures;  // --baler-measure
  double config_timeout_s = kBalerConfigTimeoutS;  // --baler-config-timeout
};

// Adds the options; --baler-project excludes `config` and `out`.
void add_baler_project_options(CLI::App* cmd, BalerProjectArgs& a, bool info, CLI::Option* config, CLI::Option* out);
// The project run when --baler-project was given, else null (then --config must have been given:
// InputError otherwise).
std::unique_ptr<BalerProjectRun> open_baler_project_run(const std::string& config, const BalerProjectArgs& a,
                                                        const std::vector<std::string>& sets,
                                                        const std::vector<ConfigOverride>& options,
                                                        const std::string& command);
// `info --baler-project`: the side-by-side table (or its JSON); returns the exit code.
int print_baler_info(const BalerProjectRun& run, const BalerProjectArgs& a, bool json, JsonStdout& out);

}  // namespace balerbench::cli
