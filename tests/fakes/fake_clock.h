// fake_clock.h: a TimeSource for tests (harness/base/clock.h) whose time moves only when it is
// advanced, in whole microseconds, so that energies, durations and rates measured over it are exact.
//
// advance() moves time on: a thread waiting on this clock (a sampler's) whose deadline falls inside
// the step wakes at its deadline exactly, does its work and waits again before time goes further,
// and advance() returns once every such thread has. sleep_for() advances too, so code that sleeps
// between reads (a meter's start-up probe, the session's idle baseline) runs at once, on its own
// schedule. The fake NVML library reads the same time when FakeNvml is given the clock
// (fake_nvml_env.h).
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "harness/base/clock.h"

namespace balerbench {

class FakeClock final : public TimeSource {
 public:
  // The steady time point of the clock's start: far from the steady clock's epoch, so that no reading
  // is mistaken for an unset time point.
  static constexpr long long kSteadyStartUs = 1000000000LL;  // 1000 s
  static constexpr long long kUnixStartUs = 1700000000000000LL;  // 2023-11-14 22:13:20 UTC

  SteadyClock::time_point now() const override;
  double unix_now_s() const override { return static_cast<double>(unix_now_us()) / 1e6; }
  void sleep_for(SteadyClock::duration d) override { advance(d); }
  bool wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, SteadyClock::time_point deadline,
                  const std::function<bool()>& done) override;

  // Microseconds since the clock was made, and the Unix time in microseconds.
  long long now_us() const { return now_us_.load(); }
  long long steady_now_us() const { return kSteadyStartUs + now_us(); }
  long long unix_now_us() const { return kUnixStartUs + now_us(); }
  // Moves time on by `d`, rounded up to a microsecond; see the header comment.
  void advance(SteadyClock::duration d);
  void advance_s(double s);

 private:
  struct Waiter {
    std::thread::id thread;
    long long deadline_us;  // since the clock was made
    std::condition_variable* cv;
    std::mutex* mu;
  };
  bool settled(std::thread::id self) const;  // no thread woken by time is still at its work (mu_ held)
  static long long to_us_up(SteadyClock::duration d);

  std::atomic<long long> now_us_{0};
  mutable std::mutex mu_;
  std::condition_variable changed_;   // a waiter came, woke or left
  std::vector<Waiter> waiters_;       // guarded by mu_
  std::set<std::thread::id> busy_;    // woken by time and not waiting again yet (guarded by mu_)
};

}  // namespace balerbench
