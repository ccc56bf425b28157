// clock.cpp: see clock.h.
#include "harness/base/clock.h"

#include <thread>

namespace balerbench {

double unix_now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

namespace {

class RealClock final : public TimeSource {
 public:
  SteadyClock::time_point now() const override { return SteadyClock::now(); }
  double unix_now_s() const override { return balerbench::unix_now_s(); }
  void sleep_for(SteadyClock::duration d) override { std::this_thread::sleep_for(d); }
  bool wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, SteadyClock::time_point deadline,
                  const std::function<bool()>& done) override {
    return cv.wait_until(lock, deadline, done);
  }
};

}  // namespace

TimeSource& real_clock() {
  static RealClock clock;  // stateless: one for every thread
  return clock;
}

}  // namespace balerbench
