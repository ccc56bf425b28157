// profile_table.h: the per-phase time breakdown of a profiled command (its "profile" section) as a
// Markdown table in the shape of T5 of docs/reference_tables.md (whole program, train / fit,
// backward, forward (encode, decode), optimizer step, data, ...). Not `--table phases`
// (report/phases_table.cpp), which builds T4 and T5 from stored trials.
// Reads only the command's JSON report, so it needs no LibTorch.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace balerbench {

// `report`: a train, compress or decompress report with a "profile" section.
// Throws std::invalid_argument when the report has none.
std::string format_profile_table(const nlohmann::json& report);

}  // namespace balerbench
