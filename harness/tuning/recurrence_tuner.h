// recurrence_tuner.h: the recurrences of one training job under Zeus's optimisers, as Zeus's
// trace-driven simulator runs them (zeus/_legacy/simulate.py, simulate_one_job), for both a replay of
// Zeus's traces (replay.h) and a real sweep (sweep/recurrence_sweep.cpp): the caller runs each
// attempt, this decides what the next one is.
//
// Each recurrence runs attempts until one reaches the target:
//  - the batch size is the batch-size optimiser's (batch_size_optimizer.h);
//  - the power limit is chosen just in time: the first attempt at a batch size profiles the limits
//    with the power-limit optimiser (power/optimizer.h) and keeps its choice for that batch size;
//    later attempts at it use the kept limit (`power_limits` false: no limits, e.g. on a CPU);
//  - the attempt is stopped early once its cost would pass beta x the cheapest recurrence so far (a
//    recurrence's cost is that of all its attempts; no bound before the first recurrence ends);
//  - an attempt's cost is Zeus's: eta x energy + (1 - eta) x MaxPower x time (base/zeus_cost.h), and
//    the batch-size optimiser observes it with whether the target was reached.
// An attempt that could not run even one epoch under the bound (replay only: a live run always runs
// its first epoch) costs nothing, is left out of the history, and the optimiser observes
// 100 x the bound for it, as Zeus's simulator does. The first recurrence must reach the target at
// once (its first attempt is the default batch size: Zeus assumes the user's default converges);
// a recurrence that has not reached it after `max_attempts` attempts ends the job. Both are a
// TuningError.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "harness/tuning/batch_size_optimizer.h"

namespace balerbench {

struct TunerOptions {
  double eta = 0.5;           // the cost's weight of energy (Zeus's eta_knob)
  double beta = 2.0;          // early stop at beta x the cheapest recurrence (infinity: never)
  double max_power_w = 0;     // MaxPower of the cost (the GPUs' maximum limit x their count)
  int64_t max_attempts = 20;  // per recurrence (Zeus)
  bool power_limits = true;   // choose a power limit per batch size just in time
  BatchSizeOptimizerOptions batch_size_optimizer;
  nlohmann::json to_json() const;
};

// What the next attempt is.
struct AttemptPlan {
  int64_t recurrence = 0;  // 0-based
  int64_t attempt = 1;     // 1-based within its recurrence
  int64_t batch_size = 0;
  std::string stage;                            // the batch-size optimiser's: pruning | thompson
  std::optional<double> cost_bound_j;           // stop once the attempt's cost passes it
  std::optional<double> power_limit_w;          // the kept just-in-time limit of this batch size
  bool profile_power_limit = false;             // none kept yet: this attempt profiles the limits
  std::vector<BatchSizeOptimizer::Draw> draws;  // the Thompson draws behind the choice
  nlohmann::json to_json() const;
};

// What an attempt did.
struct AttemptOutcome {
  bool ran = true;  // false: not even one epoch fitted under the cost bound
  double time_s = 0, energy_j = 0;
  bool reached = false;
};

// What the tuner made of it.
struct AttemptResult {
  double cost_j = 0;           // Zeus's cost of the attempt (0 when it did not run)
  double observed_cost_j = 0;  // what the batch-size optimiser observed
  bool recurrence_done = false;
};

class RecurrenceTuner {
 public:
  RecurrenceTuner(std::vector<int64_t> batch_sizes, int64_t default_batch_size, TunerOptions o);

  // The next attempt (of the current recurrence, or the first of the next one).
  AttemptPlan next();
  // The outcome of the attempt `plan` (the last next()).
  AttemptResult finish(const AttemptPlan& plan, const AttemptOutcome& outcome);
  // The just-in-time power-limit optimiser's choice at `batch_size`, kept for later attempts.
  void set_power_limit(int64_t batch_size, double limit_w);
  std::optional<double> power_limit(int64_t batch_size) const;

  int64_t recurrences_done() const { return recurrence_; }
  std::optional<double> cheapest_recurrence_j() const;
  const BatchSizeOptimizer& batch_size_optimizer() const { return bso_; }
  const TunerOptions& options() const { return o_; }
  // Options, the batch-size optimiser's state, the kept limits, the cheapest recurrence.
  nlohmann::json to_json() const;

 private:
  TunerOptions o_;
  BatchSizeOptimizer bso_;
  std::map<int64_t, double> limits_;
  int64_t recurrence_ = 0, attempt_ = 1;
  double recurrence_cost_ = 0;
  double min_cost_ = std::numeric_limits<double>::infinity();
  std::optional<AttemptPlan> pending_;
};

}  // namespace balerbench
