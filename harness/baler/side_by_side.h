// side_by_side.h: `balerbench info --baler-project`: Baler's and balerbench's results for one
// project, side by side.
//
// Both write the same five files into output/. balerbench's are those balerbench_files.json
// vouches for (project_outputs.h). Baler's are the others: each file as it is in output/ when
// balerbench did not write it, else its newest copy under output/backup/ (where balerbench kept
// it before replacing it). For each side: compressed.npz's size and the compression ratios as
// Baler's info computes them, the reconstruction error of decompressed.npz against the input
// (as `balerbench info` computes it), and the timings: balerbench's from its reports, Baler's from
// its console logs (baler_log.h). And each side's energy per command: Baler's as `balerbench
// measure` measured it, balerbench's from its reports (baler_energy.h).
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "datasets/baler_project.h"
#include "harness/run/run_config.h"

namespace balerbench {

// The five files of a cycle, relative to output/.
const std::vector<std::string>& baler_cycle_files();

// `logs`: Baler's console logs (empty: the project's output/*.log); `measures`: `balerbench measure
// --json` files of Baler's commands (empty: the project's output/*.measure.json; baler_energy.h).
nlohmann::json side_by_side(const BalerProject& project, const RunConfig& c,
                            const std::vector<std::filesystem::path>& logs,
                            const std::vector<std::filesystem::path>& measures = {});
std::string format_side_by_side(const nlohmann::json& report);

}  // namespace balerbench
