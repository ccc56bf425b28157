// live_metrics.h: what a running command is doing right now, for the progress
// line and the exporters (Prometheus, InfluxDB). Fed by the sampler's
// snapshots (power and energy per meter and domain) and by the trainer (trial
// labels, epoch, losses, throughput); read by any thread.
//
// Power is the mean over a trailing window (1 s, or twice a meter's update
// period when that is longer), so a 10 Hz series of a coarse sensor reads as
// a steady number; energy is cumulative since the first snapshot seen.
// Observers (the InfluxDB exporter) get every power sample and every epoch as
// they happen, outside the state lock.
//
// Each figure carries its measurement ± from its meter's EdgeModel, as the windows do (energy_window.h):
// the energy since the start lags by up to one update period at each end and counts whole steps, the
// trailing-window power the same over its window, plus a stated accuracy; NaN where the meter's is not
// quantified (estimates). Beside the absolute power, the part attributable to the process tree (T7)
// over the same trailing window: CPU domains at its share of the host's busy CPU time, GPU domains at
// its share of the per-process SM samples.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "harness/energy/energy_meter.h"
#include "harness/energy/sampler.h"

namespace balerbench {

constexpr double kNoValue = std::numeric_limits<double>::quiet_NaN();

// The labels of one trial (a train command is a sweep of one).
struct TrialLabels {
  std::string experiment;
  int64_t run_ordinal = 1;  // 1-based place among the trials this run executes (not the grid position)
  int64_t run_count = 1;   // -1: open-ended (a tuner's attempts)
  int64_t batch_size = 0;
  std::string precision;              // fp64, fp32, amp_bf16, ...
  std::string power_limit_w = "none";  // the limit in force, in W, or "none" (no GPU)
  std::string trial() const {
    return run_count < 0 ? std::to_string(run_ordinal) : std::to_string(run_ordinal) + "/" + std::to_string(run_count);
  }
};

struct DomainPower {
  std::string meter, domain, kind, category;
  bool in_total = true;
  double power_w = kNoValue;  // mean over the trailing window; NaN before two snapshots
  double energy_j = 0;        // since the first snapshot
  double power_uncertainty_w = kNoValue;   // ± of power_w; NaN when not quantified
  double energy_uncertainty_j = kNoValue;  // ± of energy_j
  double attributable_power_w = kNoValue;  // power_w x the process tree's share; NaN when none is known
};

struct LivePower {
  double unix_s = 0;
  std::vector<DomainPower> domains;
  double total_power_w = kNoValue;  // domains counted in totals
  double total_energy_j = 0;
  double total_energy_uncertainty_j = kNoValue;  // over the quantified domains of the total
};

struct EpochProgress {
  int64_t epoch = 0;  // 1-based
  int64_t epochs = 0;
  double train_loss = kNoValue, val_loss = kNoValue;
  double samples_per_s = kNoValue;
  double epoch_duration_s = 0;
};

struct LiveState {
  std::string command;
  LivePower power;
  bool in_trial = false;
  TrialLabels trial;
  EpochProgress epoch;
  double trial_energy_j = 0;    // total energy since the trial began
  double trial_duration_s = 0;  // from the meter reading before the trial began to the latest (its energy's span)
  int64_t snapshots = 0;
};

class LiveObserver {
 public:
  virtual ~LiveObserver() = default;
  virtual void on_power(const LiveState& state) = 0;  // after every snapshot
  virtual void on_epoch(const LiveState& state) = 0;  // after every epoch
};

class LiveMetrics {
 public:
  explicit LiveMetrics(std::string command, double power_window_s = 1.0);

  // The meters whose snapshots will arrive (their order is the snapshots').
  void set_meters(const std::vector<std::unique_ptr<EnergyMeter>>& meters);
  void add_observer(LiveObserver* observer);
  void remove_observer(LiveObserver* observer);  // waits for a call in flight
  // Thread-safe; older snapshots than the newest seen are ignored.
  void on_snapshot(const Snapshot& snapshot);

  void begin_trial(const TrialLabels& labels);
  void on_epoch(const EpochProgress& epoch);
  void end_trial();

  LiveState state() const;
  double total_power_w() const;  // NaN when unknown

 private:
  struct Point {
    SteadyClock::time_point time;
    std::vector<double> energy_j;          // flattened: every meter's domains
    std::vector<double> tree_use, all_use;  // flattened; NaN where a meter samples no per-process use
    ProcessCpu process;
  };
  LiveState state_locked() const;
  // on_snapshot's parts, under mu_: the snapshot's readings flattened over meters and domains; the
  // point a trailing window of window_s starts at; one domain's energy, power, their ± and
  // attributable power (returns its edge term of the ±); the totals over the domains in the total.
  static Point flatten(const Snapshot& s);
  const Point& anchor(const Point& now, double window_s) const;
  double update_domain(std::size_t i, const Point& now, double since_s);
  void update_totals(const std::vector<double>& edge_j);
  std::string command_;
  double window_s_;
  std::vector<std::size_t> meter_of_;  // flattened domain -> meter
  std::vector<double> meter_window_s_;
  std::vector<EdgeModel> edges_;             // per meter
  std::vector<DomainCategory> category_of_;  // flattened domain -> its category
  std::mutex observers_mu_;
  std::vector<LiveObserver*> observers_;
  mutable std::mutex mu_;
  LiveState state_;
  std::deque<Point> recent_;
  std::vector<double> first_energy_j_;
  SteadyClock::time_point first_time_;
  double trial_start_energy_j_ = 0;
  SteadyClock::time_point trial_start_;
  bool trial_start_at_first_reading_ = false;  // a trial begun before any reading starts at the first
};

}  // namespace balerbench
