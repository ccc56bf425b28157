// isa_level.h: the instruction-set levels the fused engine's products (dense_products.h) and loops
// (dense_loops.h) are compiled for, and which of them this CPU and OS can run, read from CPUID
// (with the OS's support for the wider registers) when first asked.
#pragma once

#include <string>
#include <vector>

namespace balerbench {

enum class IsaLevel { kGeneric, kAvx2, kAvx512 };

const char* isa_name(IsaLevel level);  // "generic", "avx2", "avx512"
bool parse_isa_level(const std::string& name, IsaLevel& out);
// What this CPU and OS can run (CPUID; AVX2 with FMA; AVX-512 F, DQ, BW and VL).
bool isa_supported(IsaLevel level);
IsaLevel host_isa_level();                     // the widest supported
std::vector<IsaLevel> supported_isa_levels();  // generic first

}  // namespace balerbench
