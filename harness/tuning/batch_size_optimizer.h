// batch_size_optimizer.h: Zeus's batch-size optimiser (NSDI'23, section 4): a multi-armed bandit over
// the batch sizes of one recurring training job, one arm per batch size, each recurrence one pull.
//
// Two stages, as Zeus's PruningGTSBatchSizeOptimizer:
//
// 1. Pruning (`pruning_rounds` rounds, 2 by default). Each round starts at the default batch size
//    and walks down the candidates one by one (the default first), then up from just above it. A
//    batch size that reaches the target stays; the first one that does not ends that direction
//    (smaller ones going down, larger ones going up, are not tried this round and are dropped). The
//    cheapest batch size that reached becomes the next round's start, and the next round runs over
//    the survivors only.
// 2. Gaussian Thompson sampling over the survivors. An arm's costs are modelled as Gaussian with a
//    precision learnt from its own observations (1 / their variance, population variance; the last
//    `window` observations, or all when 0) and a flat prior: the posterior of its mean cost is
//    N(mean, variance / n). Each pull draws one value from every arm's posterior and takes the arm
//    with the lowest draw (ties: the smaller batch size). An arm whose observations are all equal
//    draws its mean. An arm with fewer than two observations is pulled first (it cannot have one
//    after pruning, which sees each survivor twice).
//
// The cost is Zeus's (base/zeus_cost.h) of one attempt, failed attempts included: the optimiser is fed
// what each attempt cost, and whether it reached the target (which only pruning reads). Every draw
// comes from SeededRandom(seed), so the same seed and the same observations give the same choices.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/tuning/seeded_random.h"

namespace balerbench {

// The optimiser cannot go on: every batch size was pruned, or an observation came for a batch size
// it did not ask for. The message says which.
class TuningError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct BatchSizeOptimizerOptions {
  int64_t pruning_rounds = 2;  // Zeus
  int64_t window = 0;          // observations per arm the posterior uses; 0 = all (Zeus's default)
  uint64_t seed = 1;
};

class BatchSizeOptimizer {
 public:
  enum class Stage { kPruning, kThompson };

  // `batch_sizes`: the candidates (any order, no repeats); `default_batch_size` one of them.
  BatchSizeOptimizer(std::vector<int64_t> batch_sizes, int64_t default_batch_size, BatchSizeOptimizerOptions o = {});

  // The batch size of the next attempt. In the pruning stage it is fixed by the walk, and asking
  // twice without an observation gives the same one; in the Thompson stage every call draws.
  int64_t predict();
  // What an attempt at `batch_size` cost and whether it reached the target. In the pruning stage it
  // must be the batch size predict() gave (TuningError otherwise).
  void observe(int64_t batch_size, double cost, bool reached);

  Stage stage() const { return stage_; }
  static const char* stage_name(Stage s);
  const std::vector<int64_t>& candidates() const { return candidates_; }
  // The arms of the Thompson stage (empty before it).
  const std::vector<int64_t>& arms() const { return arms_; }
  int64_t pruning_round() const { return round_; }  // 0-based; == pruning_rounds once pruning is over
  int64_t default_batch_size() const { return default_; }

  // One arm's posterior: observations, mean cost and the standard deviation of the mean.
  struct Posterior {
    int64_t batch_size = 0, observations = 0;
    double mean_cost = 0, sd_of_mean = 0;
  };
  std::vector<Posterior> posteriors() const;
  // The draws of the last Thompson-stage predict(), per arm (empty in the pruning stage).
  struct Draw {
    int64_t batch_size = 0;
    double mean_cost = 0, sd_of_mean = 0, draw = 0;
  };
  const std::vector<Draw>& last_draws() const { return draws_; }

  // Options, seed and raw draws, stage, round, survivors, posteriors, every observation in order.
  nlohmann::json to_json() const;

 private:
  void start_round();
  void next_in_walk();
  void end_round();
  std::vector<double> arm_costs(int64_t batch_size) const;
  Posterior posterior(int64_t batch_size) const;

  BatchSizeOptimizerOptions o_;
  SeededRandom rng_;
  std::vector<int64_t> candidates_;  // sorted
  int64_t default_;                  // the walk's start (the last round's cheapest)
  Stage stage_ = Stage::kPruning;
  // Pruning: the round, its two directions, where the walk is, what reached so far.
  int64_t round_ = 0;
  std::vector<int64_t> round_set_, down_, up_, good_;
  bool going_up_ = false;
  std::size_t pos_ = 0;
  double round_best_ = 0;
  bool round_has_best_ = false;
  // Thompson.
  std::vector<int64_t> arms_;
  std::vector<Draw> draws_;
  struct Observation {
    int64_t batch_size;
    double cost;
    bool reached;
    Stage stage;
  };
  std::vector<Observation> history_;
};

}  // namespace balerbench
