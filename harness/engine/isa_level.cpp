// isa_level.cpp: see isa_level.h.
#include "harness/engine/isa_level.h"

namespace balerbench {

const char* isa_name(IsaLevel level) {
  switch (level) {
    case IsaLevel::kAvx2: return "avx2";
    case IsaLevel::kAvx512: return "avx512";
    case IsaLevel::kGeneric: break;
  }
  return "generic";
}

bool parse_isa_level(const std::string& name, IsaLevel& out) {
  for (IsaLevel l : {IsaLevel::kGeneric, IsaLevel::kAvx2, IsaLevel::kAvx512})
    if (name == isa_name(l)) {
      out = l;
      return true;
    }
  return false;
}

bool isa_supported(IsaLevel level) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  // GCC's and clang's run-time checks read CPUID and, for AVX and AVX-512, whether the OS saves
  // the wider registers (XGETBV).
  __builtin_cpu_init();
  switch (level) {
    case IsaLevel::kGeneric: return true;
    case IsaLevel::kAvx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case IsaLevel::kAvx512:
      return isa_supported(IsaLevel::kAvx2) && __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl");
  }
  return false;
#else
  return level == IsaLevel::kGeneric;
#endif
}

std::vector<IsaLevel> supported_isa_levels() {
  std::vector<IsaLevel> out;
  for (IsaLevel l : {IsaLevel::kGeneric, IsaLevel::kAvx2, IsaLevel::kAvx512})
    if (isa_supported(l)) out.push_back(l);
  return out;
}

IsaLevel host_isa_level() { return supported_isa_levels().back(); }

}  // namespace balerbench
