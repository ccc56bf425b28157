// build_info.cpp: see build_info.h.
#include "harness/base/build_info.h"

#ifndef BALERBENCH_BUILD_TYPE
#define BALERBENCH_BUILD_TYPE ""
#endif

namespace balerbench {

BuildInfo build_info() {
  BuildInfo b;
  b.build_type = BALERBENCH_BUILD_TYPE;
#ifdef NDEBUG
  b.ndebug = true;
#endif
#ifdef __OPTIMIZE__
  b.optimized = true;
#endif
  return b;
}

}  // namespace balerbench
