// precision_mode.h: the precision modes a run can ask for, as one enum with one name table.
// Names are parsed once, where they come in (configs, experiment axes, the CLI, stored
// trials); everything past that edge compares enums. What each mode does to dtypes and
// autocast is in engine/precision.h; how reports describe and order them is here, so the
// report floor needs no engine header.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace balerbench {

// What a run, the tables and `system` say of amp_bf16 where the CPU has no bfloat16 instructions
// (avx512_bf16, amx_bf16): its products are emulated, and a verdict about it is about the emulation.
inline constexpr const char* kBf16Emulated = "bfloat16 emulated: no bf16 instructions on this CPU";


enum class Precision { kAuto, kFp64, kFp32, kTf32, kAmpFp16, kAmpFp16NoScale, kAmpBf16 };

struct PrecisionInfo {
  Precision value;
  const char* name;         // as configs, the CLI and the store write it
  const char* description;  // the report's "mode" column
  int report_rank;          // order in the precision table: fp32 first (the baseline), auto last
};

// Every mode, "auto" first (the order configs and help text list them in).
const std::vector<PrecisionInfo>& precision_table();
const PrecisionInfo& precision_info(Precision p);
const char* precision_name(Precision p);
// nullopt for a name that is not in the table.
std::optional<Precision> find_precision(const std::string& name);
// InputError naming `where` and listing the valid names.
Precision parse_precision(const std::string& name, const std::string& where);
// The names, "auto" first; and the same as "auto, fp64, ...".
const std::vector<std::string>& precision_names();
std::string precision_name_list();

}  // namespace balerbench
