// stall_watch.h: time this process did not run although it could have. A thread sleeps in short
// periods and counts how late it wakes: when every thread of the process is stopped (SIGSTOP,
// Ctrl-Z, a debugger) or the whole machine is paused (a hypervisor, a suspended laptop or VM), or the
// CPUs are so oversubscribed that a runnable thread waits, it wakes late by that long. Small lateness
// (the scheduler's own latency, below kStallSlackS per wake-up) is not counted.
//
// One watch runs at a time (a sweep starts it); read_cpu_activity (cpu_activity.h) reads its running
// total at a window's ends, so a trial or window that held a stall is flagged as disturbed.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

namespace balerbench {

inline constexpr double kStallPeriodS = 0.05;  // the watch's sleep
inline constexpr double kStallSlackS = 0.02;   // lateness per wake-up that is not counted

class StallWatch {
 public:
  explicit StallWatch(double period_s = kStallPeriodS);
  ~StallWatch();
  StallWatch(const StallWatch&) = delete;
  StallWatch& operator=(const StallWatch&) = delete;

  // The seconds counted so far by the watch that runs now; nullopt when none runs.
  static std::optional<double> stalled_s();

 private:
  void loop(double period_s, std::chrono::steady_clock::time_point first_due);
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace balerbench
