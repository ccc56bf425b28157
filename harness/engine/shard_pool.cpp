// shard_pool.cpp: see shard_pool.h.
#include "harness/engine/shard_pool.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <stdexcept>

#include "common/text.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define BALERBENCH_PAUSE() _mm_pause()
#else
#define BALERBENCH_PAUSE() std::this_thread::yield()
#endif

namespace balerbench {
namespace {

using Clock = std::chrono::steady_clock;

// Spins until done() or `spin_us` have passed; true when done() held.
template <typename Done>
bool spin_until(Done done, int spin_us) {
  const auto until = Clock::now() + std::chrono::microseconds(spin_us);
  for (int i = 0;; ++i) {
    if (done()) return true;
    BALERBENCH_PAUSE();
    if ((i & 63) == 63 && Clock::now() >= until) return done();
  }
}

}  // namespace

ShardPool::ShardPool(int threads, int spin_us, std::function<void()> on_start) : spin_us_(spin_us) {
  if (threads < 1) throw std::invalid_argument("ShardPool: threads must be at least 1");
  for (int i = 0; i + 1 < threads; ++i)
    helpers_.emplace_back([this, i, on_start] {
      if (on_start) on_start();
      helper_loop(i);
    });
}

ShardPool::~ShardPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
  }
  wake_.notify_all();
  for (auto& t : helpers_) t.join();
}

int ShardPool::work(uint32_t gen, int slot) {
  int ran = 0;
  for (;;) {
    uint64_t c = claim_.load();
    int next = 0, tasks = 0;
    do {
      next = next_of(c);
      tasks = tasks_of(c);
      if (generation_of(c) != gen || next >= tasks) return ran;
    } while (!claim_.compare_exchange_weak(c, c + 1));
    try {
      (*fn_.load())(next, slot);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex_);
      if (!error_) error_ = std::current_exception();
    }
    ++ran;
    if (finished_.fetch_add(1) + 1 == tasks && caller_sleeping_.load()) {
      std::lock_guard<std::mutex> lock(mutex_);
      done_.notify_one();
    }
  }
}

void ShardPool::helper_loop(int index) {
  uint32_t seen = 0;
  for (;;) {
    const auto fresh = [&] { return stop_.load() || generation_of(claim_.load()) != seen; };
    if (!spin_until(fresh, spin_us_)) {
      std::unique_lock<std::mutex> lock(mutex_);
      sleepers_.fetch_add(1);
      wake_.wait(lock, fresh);
      sleepers_.fetch_sub(1);
    }
    if (stop_.load()) return;
    seen = generation_of(claim_.load());
    // fn_ and active_helpers_ were written before the generation that published them (a late
    // helper may read a later run's: work() then finds its own generation over and claims nothing).
    if (index < active_helpers_.load()) by_helpers_.fetch_add(work(seen, index + 1));
  }
}

void ShardPool::run(int tasks, const std::function<void(int, int)>& fn, int threads_now) {
  if (tasks <= 0) return;
  if (tasks > 0xFFFF) throw std::invalid_argument("ShardPool: at most 65535 tasks a run");
  // One caller at a time: a second run() while one is in progress would republish the claim word
  // under the first one's tasks.
  if (running_.exchange(true)) throw std::logic_error("ShardPool::run: called while another run is in progress");
  struct Done {
    std::atomic<bool>& running;
    ~Done() { running.store(false); }
  } done{running_};
  error_ = nullptr;
  if (threads_now <= 1 || helpers_.empty()) {
    // As on several threads: every task runs, and the first exception reaches the caller at the end.
    for (int t = 0; t < tasks; ++t) {
      try {
        fn(t, 0);
      } catch (...) {
        if (!error_) error_ = std::current_exception();
      }
    }
    by_caller_ += tasks;
    if (error_) std::rethrow_exception(error_);
    return;
  }
  fn_.store(&fn);
  active_helpers_.store(std::min(threads_now - 1, static_cast<int>(helpers_.size())));
  finished_.store(0);
  const uint32_t gen = generation_of(claim_.load()) + 1;
  // Publishes the run: helpers may claim from here.
  claim_.store(static_cast<uint64_t>(gen) << 32 | static_cast<uint64_t>(tasks) << 16);
  if (sleepers_.load() > 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    wake_.notify_all();
  }
  by_caller_ += work(gen, 0);
  const auto all_done = [&] { return finished_.load() == tasks; };
  if (!spin_until(all_done, spin_us_)) {
    std::unique_lock<std::mutex> lock(mutex_);
    caller_sleeping_.store(true);
    done_.wait(lock, all_done);
    caller_sleeping_.store(false);
  }
  if (error_) std::rethrow_exception(error_);
}

ThreadGovernor::ThreadGovernor(int threads, int probe_every)
    : threads_(std::max(1, threads)), probe_every_(std::max(4, probe_every)), interval_(probe_every_) {}

int ThreadGovernor::threads_for_next_step() const { return threads_ == 1 || next_ == 0 ? threads_ : 1; }

double ThreadGovernor::median(int mode) const {
  std::vector<double> v = samples_[mode];
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

void ThreadGovernor::decide(int64_t step, const char* why) {
  const double all = median(0), one = median(1);
  int want = mode_;
  if (all > 0 && one > 0) {
    if (mode_ == 0 && one < 0.9 * all) want = 1;
    if (mode_ == 1 && all < 0.9 * one) want = 0;
    if (step == kFirstChoice) want = one < all ? 1 : 0;  // the first choice: the faster, no margin
  }
  if (want != mode_ || step == kFirstChoice) {
    if (events_.size() < 6)
      events_.push_back("step " + std::to_string(step) + " (" + why + "): " + std::to_string(threads_) +
                        " threads " + ms_text(all) + ", 1 thread " + ms_text(one) + " -> " +
                        (want == 0 ? std::to_string(threads_) + " threads" : std::string("1 thread")));
    if (want != mode_ && step != kFirstChoice) ++switches_;
    if (want != mode_) since_switch_ = 0;
    mode_ = want;
  }
}

void ThreadGovernor::record(double step_s) {
  if (threads_ == 1) {
    ++steps_one_;
    ++step_;
    return;
  }
  const int ran = next_;
  (ran == 0 ? steps_all_ : steps_one_) += 1;
  const int64_t s = step_++;
  if (s >= kWarmup) {
    auto& v = samples_[ran];
    v.push_back(step_s);
    if (v.size() > static_cast<std::size_t>(kWindow)) v.erase(v.begin());
  }
  if (s + 1 < kFirstChoice) {  // warm-up steps on all threads, then 6 alternating all and one
    next_ = s + 1 < kWarmup ? 0 : static_cast<int>((s + 1 - kWarmup) % 2);
    return;
  }
  if (s + 1 == kFirstChoice) {
    decide(s + 1, "first measurement");
    next_ = mode_;
    probe_at_ = s + 1 + probe_every_;
    return;
  }
  if (ran == 0 && mode_ == 0 && probe_left_ == 0 && collapsed(s, step_s)) return;
  probe(s);
  next_ = probe_left_ > 0 ? 1 - mode_ : mode_;
}

bool ThreadGovernor::collapsed(int64_t s, double step_s) {
  // A collapse: all threads, 3 steps in a row far slower than one thread alone, or the last 5
  // steps' median 20% slower (a neighbour taking turns with a pool thread slows steps unevenly).
  const double one = median(1);
  slow_run_ = one > 0 && step_s > 1.5 * one ? slow_run_ + 1 : 0;
  ++since_switch_;
  const bool slow_median = one > 0 && since_switch_ >= kWindow && median(0) > 1.2 * one;
  if (slow_run_ < 3 && !slow_median) return false;
  since_switch_ = 0;
  ++collapses_;
  ++switches_;
  slow_run_ = 0;
  if (events_.size() < 6)
    events_.push_back("step " + std::to_string(s + 1) + ": collapse, " + std::to_string(threads_) + " threads took " +
                      ms_text(step_s) + " (median of their last 5: " + ms_text(median(0)) + ") against 1 thread's " + ms_text(one) +
                      " -> 1 thread");
  mode_ = 1;
  next_ = 1;
  interval_ = probe_every_;
  probe_at_ = s + 1 + interval_;
  return true;
}

void ThreadGovernor::probe(int64_t s) {
  if (probe_left_ > 0 && --probe_left_ == 0) {
    const int before = mode_;
    decide(s + 1, "probe");
    // All threads kept: the next probe later (a neighbour is caught by the collapse rule meanwhile).
    // One thread, or a change: the next at probe_every, so that a neighbour's leaving, or a first
    // choice a passing disturbance made, costs about two intervals on one thread (a probe adds two
    // steps to a median of five).
    interval_ = mode_ == before && mode_ == 0 ? std::min<int64_t>(2 * interval_, 16 * static_cast<int64_t>(probe_every_))
                                              : probe_every_;
    probe_at_ = s + 1 + interval_;
  } else if (probe_left_ == 0 && s + 1 >= probe_at_) {
    probe_left_ = 2;
  }
}

std::string ThreadGovernor::summary() const {
  if (threads_ == 1) return "";
  std::string out = std::to_string(steps_all_) + " full steps on " + std::to_string(threads_) + " threads, " +
                    std::to_string(steps_one_) + " on 1 (measured; the result is the same either way); " +
                    std::to_string(switches_) + " switch(es), " + std::to_string(collapses_) + " collapse(s)";
  for (const auto& e : events_) out += "; " + e;
  return out;
}

}  // namespace balerbench

