// fake_clock.cpp: see fake_clock.h.
#include "tests/fakes/fake_clock.h"

#include <algorithm>
#include <cmath>

namespace balerbench {

long long FakeClock::to_us_up(SteadyClock::duration d) { return std::chrono::ceil<std::chrono::microseconds>(d).count(); }

SteadyClock::time_point FakeClock::now() const {
  return SteadyClock::time_point(std::chrono::microseconds(steady_now_us()));
}

bool FakeClock::wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                           SteadyClock::time_point deadline, const std::function<bool()>& done) {
  const long long deadline_us = to_us_up(deadline.time_since_epoch()) - kSteadyStartUs;
  const auto self = std::this_thread::get_id();
  {
    std::lock_guard<std::mutex> g(mu_);
    busy_.erase(self);
    waiters_.push_back({self, deadline_us, &cv, lock.mutex()});
  }
  changed_.notify_all();
  cv.wait(lock, [&] { return done() || now_us_.load() >= deadline_us; });
  const bool finished = done();
  {
    std::lock_guard<std::mutex> g(mu_);
    waiters_.erase(std::remove_if(waiters_.begin(), waiters_.end(), [&](const Waiter& w) { return w.thread == self; }),
                   waiters_.end());
    if (!finished) busy_.insert(self);  // at its work until it waits again
  }
  changed_.notify_all();
  return finished;
}

bool FakeClock::settled(std::thread::id self) const {
  // The calling thread itself may be one woken by time (a listener that sleeps): it is not waited for.
  return busy_.empty() || (busy_.size() == 1 && *busy_.begin() == self);
}

void FakeClock::advance(SteadyClock::duration d) {
  const auto self = std::this_thread::get_id();
  std::unique_lock<std::mutex> g(mu_);
  const long long target_us = now_us_.load() + to_us_up(d);
  for (;;) {
    changed_.wait(g, [&] { return settled(self); });
    // The earliest deadline inside the step: time stops there, and that thread runs, first.
    auto next = waiters_.end();
    for (auto w = waiters_.begin(); w != waiters_.end(); ++w)
      if (w->thread != self && w->deadline_us <= target_us && (next == waiters_.end() || w->deadline_us < next->deadline_us))
        next = w;
    if (next == waiters_.end()) {
      now_us_.store(std::max(now_us_.load(), target_us));
      return;
    }
    const Waiter wake = *next;
    now_us_.store(std::max(now_us_.load(), wake.deadline_us));
    g.unlock();
    // Taking the waiter's mutex once puts it either inside cv.wait (the notification reaches it) or
    // before its check of the time (it sees the new time): it cannot miss the wake-up.
    { std::lock_guard<std::mutex> l(*wake.mu); }
    wake.cv->notify_all();
    g.lock();
    changed_.wait(g, [&] {
      return std::none_of(waiters_.begin(), waiters_.end(), [&](const Waiter& w) {
        return w.thread == wake.thread && w.deadline_us == wake.deadline_us;
      });
    });
  }
}

void FakeClock::advance_s(double s) { advance(std::chrono::microseconds(std::llround(s * 1e6))); }

}  // namespace balerbench
