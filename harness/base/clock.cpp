// clock.cpp: see clock.h.
#include "harness/base/clock.h"

namespace balerbench {

double unix_now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace balerbench
