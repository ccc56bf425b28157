// stall_watch.cpp: see stall_watch.h.
#include "harness/base/stall_watch.h"

#include <chrono>

namespace balerbench {
namespace {

// The running watch's total, in ns; negative when none runs.
std::atomic<int64_t> g_stalled_ns{-1};

}  // namespace

StallWatch::StallWatch(double period_s) {
  g_stalled_ns.store(0);
  // The first due time from now, not from when the thread first runs: a stop that comes before the
  // thread starts counts too.
  const auto first_due = std::chrono::steady_clock::now() +
                         std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(period_s));
  thread_ = std::thread([this, period_s, first_due] { loop(period_s, first_due); });
}

StallWatch::~StallWatch() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
  g_stalled_ns.store(-1);
}

std::optional<double> StallWatch::stalled_s() {
  const int64_t ns = g_stalled_ns.load();
  if (ns < 0) return std::nullopt;
  return static_cast<double>(ns) * 1e-9;
}

void StallWatch::loop(double period_s, std::chrono::steady_clock::time_point first_due) {
  using Clock = std::chrono::steady_clock;  // runs on while the process is stopped
  const auto period = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(period_s));
  const auto slack = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(kStallSlackS));
  std::unique_lock<std::mutex> lock(mutex_);
  auto due = first_due;
  while (!stop_) {
    wake_.wait_until(lock, due, [this] { return stop_; });
    const auto now = Clock::now();
    if (now < due) continue;  // woken early (spuriously): sleep on to the same due time
    const auto late = now - due;
    if (late > slack) g_stalled_ns.fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(late).count());
    due = now + period;
  }
}

}  // namespace balerbench
