// clock.h: the one set of clock helpers, in the base layer so that no floor includes another's
// header for a clock. Durations come from the steady clock (it never jumps); timestamps meant for
// logs and series joined across processes and machines are Unix seconds from the system clock.
//
// Meters, the sampler and the energy session read the time and wait through a TimeSource handed to
// them, the real clocks (real_clock()) unless a caller passes another: tests pass a fake whose time
// moves only when they advance it (tests/fakes/fake_clock.h), so that what they check over time is
// exact and never waits on the machine's load.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>

namespace balerbench {

using SteadyClock = std::chrono::steady_clock;

inline double seconds_between(SteadyClock::time_point begin, SteadyClock::time_point end) {
  return std::chrono::duration<double>(end - begin).count();
}

inline double seconds_since(SteadyClock::time_point begin) { return seconds_between(begin, SteadyClock::now()); }

// Seconds since 1970-01-01 UTC (system clock).
double unix_now_s();

// Where time is read and waited for. Whoever holds one keeps it alive for as long as the meters,
// samplers and sessions it was handed to.
class TimeSource {
 public:
  virtual ~TimeSource() = default;
  virtual SteadyClock::time_point now() const = 0;  // steady: for durations
  virtual double unix_now_s() const = 0;            // the system clock: for timestamps
  virtual void sleep_for(SteadyClock::duration d) = 0;
  // Waits on `cv`, with `lock` held as condition variables want, until `done()` holds (checked under
  // `lock` whenever `cv` is notified) or this clock reaches `deadline`; returns done().
  virtual bool wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                          SteadyClock::time_point deadline, const std::function<bool()>& done) = 0;

  double seconds_since(SteadyClock::time_point begin) const { return seconds_between(begin, now()); }
  void sleep_s(double s) {
    sleep_for(std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(s)));
  }
};

// The steady and system clocks; sleeps and waits block the calling thread for real.
TimeSource& real_clock();

}  // namespace balerbench
