// phase_table.h: the per-phase time breakdown of a profiled command as a
// Markdown table in the shape of REFERENCE_TABLES.md T5 (whole program,
// train / fit, backward, forward (encode, decode), optimizer step, data, ...).
// Reads only the command's JSON report, so it needs no LibTorch.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace balerbench {

// `report`: a train, compress or decompress report with a "profile" section.
// Throws std::invalid_argument when the report has none.
std::string format_phase_table(const nlohmann::json& report);

}  // namespace balerbench
