// clock.h: the one set of clock helpers, in the base layer so that no floor includes another's
// header for a clock. Durations come from the steady clock (it never jumps); timestamps meant for
// logs and series joined across processes and machines are Unix seconds from the system clock.
#pragma once

#include <chrono>

namespace balerbench {

using SteadyClock = std::chrono::steady_clock;

inline double seconds_between(SteadyClock::time_point begin, SteadyClock::time_point end) {
  return std::chrono::duration<double>(end - begin).count();
}

inline double seconds_since(SteadyClock::time_point begin) { return seconds_between(begin, SteadyClock::now()); }

// Seconds since 1970-01-01 UTC (system clock).
double unix_now_s();

}  // namespace balerbench
