// commands.h: the subcommands of `balerbench`, one file each. Each registers
// its options on the app and sets `run` to what it does when chosen.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

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
void register_report(CLI::App& app, Action& run);  // report, merge
void register_system(CLI::App& app, Action& run);  // system

}  // namespace balerbench::cli
