// commands.h: the subcommands of `balerbench`, one file each. Each registers
// its options on the app and sets `run` to what it does when chosen.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

#include "harness/base/config_key_docs.h"

namespace balerbench::cli {

using Action = std::function<int()>;

void register_data(CLI::App& app, Action& run);
void register_model_info(CLI::App& app, Action& run);
void register_cycle(CLI::App& app, Action& run);  // train, compress, decompress, info
void register_meters(CLI::App& app, Action& run);
void register_doctor(CLI::App& app, Action& run);  // doctor (hazards to measurements)
void register_measure(CLI::App& app, Action& run);
void register_wattmeter(CLI::App& app, Action& run);  // wattmeter-energy
void register_serve_metrics(CLI::App& app, Action& run);
void register_run(CLI::App& app, Action& run);     // run (experiment sweeps)
void register_report(CLI::App& app, Action& run);  // report
void register_merge(CLI::App& app, Action& run);   // merge
void register_system(CLI::App& app, Action& run);  // system
void register_config(CLI::App& app, Action& run);  // config reference
void register_replay(CLI::App& app, Action& run);  // replay (Zeus's traces through the optimisers)

// The configuration reference (cmd_config.cpp), for docs/configuration.md and its tests.
std::string config_reference(const std::string& format);  // "markdown" | "json"
struct ConfigKeyProblems {
  std::vector<std::string> undocumented;  // read by a parser, no entry in the docs
  std::vector<std::string> stale;         // documented, no longer read
};
ConfigKeyProblems check_config_key_docs(const std::vector<ConfigKeyDoc>& run_docs,
                                        const std::vector<ConfigKeyDoc>& experiment_docs);

}  // namespace balerbench::cli
