// baler_energy.h: Baler's own energy beside balerbench's, for `info --baler-project`.
//
// Baler's: what `balerbench measure --json FILE -- python3 -m baler --mode MODE --project WS P` wrote,
// one file per mode (train, compress, decompress; the mode read from the command's --mode). The files
// come from --baler-measure, or else are the project's output/*.measure.json. balerbench's: the whole
// command's energy in the report beside each of its files (training/training_report.json, ...), as its
// meters gave it. Both are whole commands, Python's start and the files' reading and writing included,
// and each says whether it was measured or estimated.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace balerbench {

// {"train": {"energy_j", "energy_kind", "duration_s", "file"}, ...} for the modes the files cover, and
// "notes": what was left out and why (a file of another command; two files for one mode: the newer
// kept). `explicit_files`: given by the user, so that one that is not a measurement of Baler is an
// InputError naming it; otherwise such a file is left out with a note.
nlohmann::json baler_measured_energy(const std::vector<std::filesystem::path>& files, bool explicit_files);

// The project's output/*.measure.json, sorted.
std::vector<std::filesystem::path> project_measures(const std::filesystem::path& output);

// The whole command's energy in one of balerbench's reports ({"energy_j", "energy_kind"}), or null.
nlohmann::json report_energy(const std::filesystem::path& report);

}  // namespace balerbench
