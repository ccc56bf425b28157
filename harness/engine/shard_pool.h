// shard_pool.h: the fused engine's threads. A step's work comes as a fixed number of tasks (the
// batch's shards, or inference chunks) and each task is done once, by whichever thread claims it
// first: the caller takes part, and when a helper thread is descheduled (a neighbour on its core)
// the caller claims the rest itself instead of waiting for it. Which thread does a task never
// changes what it computes: the tasks write their own buffers, and their results are combined in
// task order afterwards, so results are bit-identical whatever the threads did.
//
// Waiting: a helper spins (pause instructions) for a short while after its last task, so that the
// next step's tasks reach it without a wake-up, then sleeps on a condition variable; so does the
// caller waiting for a claimed task to end. With `threads_now` = 1 the caller runs every task itself
// and no helper is woken.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace balerbench {

class ShardPool {
 public:
  // `threads` >= 1: the caller and threads - 1 helpers. `spin_us`: how long a waiting thread spins
  // before it sleeps.
  // `on_start` runs first on each helper thread (the fused engine sets the thread's OpenMP threads to
  // one there, so that a BLAS call from it stays on it).
  explicit ShardPool(int threads, int spin_us = 50, std::function<void()> on_start = nullptr);
  ~ShardPool();
  ShardPool(const ShardPool&) = delete;
  ShardPool& operator=(const ShardPool&) = delete;

  // Runs fn(task, thread) once for every task in [0, tasks) (tasks < 65536), on at most `threads_now`
  // threads (the caller among them), and returns when all have ended. `thread` is the runner's slot:
  // 0 for the caller, 1 to threads() - 1 for the helpers (per-thread scratch buffers). An exception in a task is rethrown here (the first
  // one; the other tasks still run).
  void run(int tasks, const std::function<void(int, int)>& fn, int threads_now);
  int threads() const { return static_cast<int>(helpers_.size()) + 1; }
  // Tasks done by the caller and by helpers, since the pool was made.
  int64_t tasks_by_caller() const { return by_caller_; }
  int64_t tasks_by_helpers() const { return by_helpers_.load(); }

 private:
  void helper_loop(int index);
  // Claims and runs tasks of generation `gen` until none is left; returns how many it ran.
  int work(uint32_t gen, int slot);
  // The claim word: generation (32 bits), tasks (16), next task (16). A claim is a compare-and-swap
  // on all three, so a helper that wakes late never claims a task of a later run.
  static uint32_t generation_of(uint64_t claim) { return static_cast<uint32_t>(claim >> 32); }
  static int tasks_of(uint64_t claim) { return static_cast<int>((claim >> 16) & 0xFFFF); }
  static int next_of(uint64_t claim) { return static_cast<int>(claim & 0xFFFF); }

  std::vector<std::thread> helpers_;
  const int spin_us_;
  std::atomic<uint64_t> claim_{0};
  std::atomic<int> finished_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> caller_sleeping_{false};
  std::atomic<bool> stop_{false};
  std::atomic<bool> running_{false};  // a run() in progress (one caller at a time)
  std::atomic<int> active_helpers_{0};
  std::atomic<const std::function<void(int, int)>*> fn_{nullptr};
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::exception_ptr error_;
  std::mutex error_mutex_;
  int64_t by_caller_ = 0;
  std::atomic<int64_t> by_helpers_{0};
};

// How many threads the next training step should use: all of the pool's, or one, by measurement.
// Only the time of a step changes with its answer, never its result (the shards stay the same).
//   - Steps 0 to 11 warm up on all threads (not counted); steps 12 to 17 alternate all and one, and
//     the faster (median) wins.
//   - Every `probe_every` steps, two steps run the other way; the answer changes when the other way's
//     median (of its last 5 steps) is more than 10% faster. A probe that keeps all threads doubles the
//     interval to the next (up to 16 x probe_every): on a steady host the probes' one-thread steps
//     cost next to nothing. On one thread, and after any change of way, probes come every
//     probe_every steps, so that a neighbour's leaving is seen soon.
//   - A collapse: on all threads, 3 steps in a row slower than 1.5 x one thread's median, or the
//     median of the last 5 (all of them since the last change) 20% slower than one thread's. The
//     next step runs on one thread, and the event is kept for the notes.
// Feed it only steps of the same size (full batches).
class ThreadGovernor {
 public:
  // Steps on all threads before the first measurement (not counted), then 6 that alternate all and
  // one; the first choice follows step kFirstChoice - 1. Measured on the 2-vCPU EPYC, 20k-row fp32
  // trainings on two threads: with 2 warm-up steps the first choice was one thread in 5 of 20 runs
  // (its two-thread steps, right after the engine was made, took up to 2.25 ms against 1.1 ms
  // later), with 12 in none of 20.
  static constexpr int kWarmup = 12;
  static constexpr int kFirstChoice = kWarmup + 6;
  explicit ThreadGovernor(int threads, int probe_every = 100);
  int threads_for_next_step() const;
  void record(double step_s);  // the step just run with threads_for_next_step()
  int64_t steps_on_all() const { return steps_all_; }
  int64_t steps_on_one() const { return steps_one_; }
  int switches() const { return switches_; }
  int collapses() const { return collapses_; }
  int64_t probe_interval() const { return interval_; }  // steps from the last probe to the next
  // One line: the steps on each, the switches and collapses, the first events.
  std::string summary() const;

 private:
  static constexpr int kWindow = 5;
  double median(int mode) const;  // mode 0: all threads, 1: one; 0 when unmeasured
  void decide(int64_t step, const char* why);
  // After step s on all threads: true (and on one thread from now) when they collapsed.
  bool collapsed(int64_t s, double step_s);
  void probe(int64_t s);  // a probe's countdown and its decision, or the next one's start
  const int threads_;
  const int probe_every_;
  int64_t step_ = 0;        // steps recorded
  int mode_ = 0;            // the chosen way: 0 all, 1 one
  int next_ = 0;            // the way of the next step
  int64_t probe_at_ = 0;    // the next probe's first step
  int64_t interval_ = 0;    // steps from a probe's end to the next probe
  int probe_left_ = 0;      // probe steps still to run the other way
  int slow_run_ = 0;        // consecutive slow steps on all threads
  int since_switch_ = 0;    // steps on all threads since the last change of way
  std::vector<double> samples_[2];
  int64_t steps_all_ = 0, steps_one_ = 0;
  int switches_ = 0, collapses_ = 0;
  std::vector<std::string> events_;
};

}  // namespace balerbench
