// build_info.h: how this balerbench was compiled, as the compiler saw it. A build without NDEBUG or
// without optimisation (-O0, CMake's Debug or an empty build type) runs the hand-written engine and
// the harness several times slower, so its timings describe the build, not the method (doctor's
// hazard list, harness/energy/hazards.h).
#pragma once

#include <string>

namespace balerbench {

struct BuildInfo {
  std::string build_type;  // CMAKE_BUILD_TYPE at configure time ("Release", "Debug", ...); empty when none
  bool ndebug = false;     // NDEBUG defined: assertions compiled out
  bool optimized = false;  // __OPTIMIZE__ defined: -O1 or higher
};

// Constants fixed at compile time (build_info.cpp gets BALERBENCH_BUILD_TYPE from harness/CMakeLists.txt,
// and the same flags as every other source of the harness).
BuildInfo build_info();

}  // namespace balerbench
