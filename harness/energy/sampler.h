// sampler.h: one background thread polls every meter at a fixed rate and
// keeps the time series (cumulative joules per meter and domain); windows
// read all meters through the same lock, so a meter is never read from two
// threads at once.
//
// The rate is raised when a meter's counter could otherwise wrap between
// reads (at least 4 reads per max_read_interval_s()). The series is bounded:
// past `max_points` every other point is dropped and the thinning doubles,
// so memory stays flat on long runs while window energies (counter
// differences) lose nothing. The sampler measures its own cost: the time
// spent reading meters and its thread's CPU time.
//
// Snapshots are stamped, and the thread waits for its ticks, on the TimeSource the sampler is given
// (the real clocks by default; a test's fake clock runs the thread tick by tick as it advances).
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "harness/energy/energy_meter.h"
#include "harness/energy/process_tree.h"

namespace balerbench {

// CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID), in seconds.
double thread_cpu_s();

struct Snapshot {
  SteadyClock::time_point time;
  double unix_s = 0;                    // wall-clock time of the same instant
  std::vector<MeterReading> readings;   // one per meter, in meters() order
  ProcessCpu process;                   // CPU time of the measured process tree and the host (T7)
};

struct SamplerOverhead {
  long long reads = 0;          // snapshots taken (thread and windows)
  double read_time_s = 0;       // wall time spent inside them (the steady clock: a cost, whatever the TimeSource)
  double max_read_s = 0;        // the slowest snapshot
  double thread_cpu_s = 0;      // CPU time of the sampling thread
  double wall_s = 0;            // since start(), on the sampler's TimeSource
  double listener_time_s = 0;   // wall time inside listeners (live metrics, exporters), any thread
  double cpu_fraction() const { return wall_s > 0 ? thread_cpu_s / wall_s : 0; }  // of one CPU
  nlohmann::json to_json() const;
};

class Sampler {
 public:
  static constexpr std::size_t kMaxPoints = 1u << 20;
  // `clock` outlives the sampler; the meters should read the same one.
  Sampler(std::vector<std::unique_ptr<EnergyMeter>> meters, double hz, std::size_t max_points = kMaxPoints,
          TimeSource& clock = real_clock());
  ~Sampler();
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  // Reads `tree` with every snapshot (Snapshot::process) and hands it to the meters that sample
  // per-process use. Before start().
  void attribute_to(std::shared_ptr<ProcessTree> tree);
  // The tree's describe(), read under the lock the sampling thread reads it with; null without one.
  nlohmann::json process_tree_json() const;

  void start();  // no thread when the effective rate is 0; else returns once the thread waits for its first tick
  void stop();
  Snapshot snapshot();  // reads every meter now and records the point

  const std::vector<std::unique_ptr<EnergyMeter>>& meters() const { return meters_; }
  double requested_hz() const { return requested_hz_; }
  double effective_hz() const { return hz_; }
  std::vector<Snapshot> series() const;
  std::size_t series_size() const;
  // Points with time in [t0, t1].
  std::vector<Snapshot> series_between(SteadyClock::time_point t0, SteadyClock::time_point t1) const;
  SamplerOverhead overhead() const;

  // Called with every snapshot (the sampling thread's and the windows'), after
  // it is recorded and outside the series lock, so snapshots from two threads
  // may arrive out of order. A listener must be quick and must not call back
  // into the sampler. Returns an id for remove_listener, which waits for a
  // call in flight to end.
  using Listener = std::function<void(const Snapshot&)>;
  int add_listener(Listener listener);
  void remove_listener(int id);

 private:
  Snapshot read_locked();
  void record_locked(const Snapshot& s);
  void loop();
  std::vector<std::unique_ptr<EnergyMeter>> meters_;
  TimeSource& clock_;
  std::shared_ptr<ProcessTree> tree_;
  double requested_hz_, hz_;
  std::size_t max_points_;
  std::size_t keep_every_ = 1, since_kept_ = 0;
  mutable std::mutex mu_;
  std::vector<Snapshot> series_;
  std::vector<bool> warned_;  // a meter's first failed read was said on stderr (guarded by mu_)
  SamplerOverhead overhead_;
  SteadyClock::time_point started_;
  std::thread thread_;
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;  // stop() and the thread's start, under stop_mu_
  bool stopping_ = false;
  bool thread_waiting_ = false;
  std::atomic<double> thread_cpu_s_{0};
  mutable std::mutex listeners_mu_;
  std::vector<std::pair<int, Listener>> listeners_;
  int next_listener_id_ = 1;
  double listener_time_s_ = 0;  // guarded by listeners_mu_
};

}  // namespace balerbench
