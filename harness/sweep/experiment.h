// experiment.h: an experiment file (strict, schema-versioned JSON) and the grid
// of trials it describes.
//
//   {"schema_version": 1, "name": "quickstart",
//    "dataset": {"generator": {"kind": "cms", "rows": 20000, "seed": 0}},   // or {"path": "file.npz"}
//    "model": {"name": "AE", "compression_ratio": 1.6},                     // or axes of /sweep
//    "training": {"lr": 0.001, "test_size": 0.2},                          // run-config keys
//    "sweep": {"batch_size": [512], "precision": ["fp32", "amp_bf16"], "engine": ["libtorch", "fused"],
//              "power_limit_w": [null], "epochs": [10], "repeats": 2},  // also "model": ["AE", ...] and
//                                                         // "compression_ratio": [1.6, 4, 8], each in place of /model's
//    "target": {"val_loss": 0.002, "stop_when_reached": false},            // or "relative_error"
//    "energy": {"meters": ["auto"], "sample_hz": 10, "idle_baseline_s": 0, "cooldown_s": 0,
//               "thermal": {"target_c": 50, "max_wait_s": 300}, ...},              // thermal: optional
//    "cost": {"eta": [0, 0.5, 1], "max_power_w": null},
//    "allow_power_limit_changes": false,
//    "power_limit_optimizer": {"enabled": false, "eta": 0.5, ...},
//    "batch_size_optimizer": {"enabled": false, "default_batch_size": 512, "eta": 0.5, "beta": 2, ...}}
//
// The grid is the product model x compression_ratio x batch_size x precision x engine x
// power_limit_w x epochs x repeats in that nesting order (repeats innermost), numbered from 0; shard
// i of N takes the trials whose number is i mod N. Each trial's resolved spec
// (every setting that shapes it, defaults filled in) is hashed into its key,
// so the results database can tell a finished trial from a new one.
//
// With the batch-size optimiser enabled there is no grid: the job recurs, and each recurrence's
// attempts are trials chosen one after another by the optimiser (recurrence_sweep.cpp), each keyed by
// its choice (recurrence, attempt, batch size, power limit, cost bound, the draws behind it).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/run/run_config.h"
#include "harness/sweep/batch_size_optimizer_spec.h"
#include "harness/sweep/dataset_spec.h"
#include "harness/trial/trial_spec.h"
#include "harness/tuning/recurrence_tuner.h"

namespace balerbench {

inline constexpr int kExperimentSchemaVersion = 1;
// At most this many repeats (and warm-up trials) of one configuration.
inline constexpr int64_t kMaxRepeats = 1000000;
// A run that would plan more trials than this is refused unless asked for (--allow-large-grid): the
// size is printed first, and a shard (--shard i/N) counts only its own share.
inline constexpr int64_t kLargeGridTrials = 100000;

// An experiment is a TrialProtocol (trial/trial_spec.h: its name, target, cooldown, thermal wait,
// MaxPower and power-limit optimiser, which every trial reads) plus what makes its grid.
struct Experiment : TrialProtocol {
  int schema_version = kExperimentSchemaVersion;
  std::string description, source;  // name: TrialProtocol's
  DatasetSpec dataset;
  RunConfig base;  // training settings + model + energy; the axes' values set per trial (base: the first)
  // What sets the fidelity, the grid's outermost axes: Baler's dense models (models/architecture.h) and
  // compression ratios. /model's one value each, or /sweep/model and /sweep/compression_ratio; the
  // JSON path they came from, for messages.
  std::vector<std::string> models;
  std::vector<double> compression_ratios;
  std::string models_path = "/model/name", compression_ratios_path = "/model/compression_ratio";
  std::vector<int64_t> batch_sizes;
  std::vector<Precision> precisions;
  std::vector<EngineKind> engines;  // default: [auto]
  std::vector<std::optional<double>> power_limits_w;  // nullopt = leave the limit in force
  std::vector<int64_t> epochs;
  int64_t repeats = 1;
  // The order trials run in (README, Comparable results): "interleaved" (default: round-robin, every
  // configuration once before any repeats, so a drifting host does not confound configuration with
  // time), "shuffled" (each round in a random order drawn from order_seed, recorded) or "grid" (the
  // grid's own order, repeats back to back).
  std::string order = "interleaved";
  int64_t order_seed = 0;
  // Warm-up trials run before the grid (the first configuration, shortened to its first epochs
  // count), stored and listed but left out of every statistic.
  int64_t warmup_trials = 0;
  std::vector<double> etas = {0.0, 0.5, 1.0};
  bool allow_power_limit_changes = false;
  BatchSizeOptimizerSpec batch_size_optimizer;
  nlohmann::json raw;  // the file as read

  // The product of the axes' sizes and the repeats, saturating at INT64_MAX (never wraps).
  int64_t grid_size() const;
  // "1000 batch sizes x 1 precision x 1 engine x 1 power limit x 100 epochs x 10 repeats"; with several
  // models or compression ratios, "2 models x 3 compression ratios x " before it.
  std::string grid_shape() const;
};

// Why `name` cannot name an experiment, or "" when it can: it is part of file names (report's CSV
// files), so it is not empty, holds no '/', '\\' nor any of text.h's hidden characters (controls, NUL
// and C1 included, bidirectional controls, line separators), does not start with '.', and has at most
// kMaxExperimentNameBytes bytes.
constexpr std::size_t kMaxExperimentNameBytes = 120;
std::string experiment_name_problem(const std::string& name);

// Parses and validates an experiment (InputError naming the JSON path).
Experiment parse_experiment(const nlohmann::json& j, const std::string& source, const std::string& base_dir);
Experiment load_experiment(const std::string& path);

// The grid of an experiment on one system, held as its axes: trial number i (grid order: model,
// compression ratio, batch size, precision, engine, power limit, epochs, repeat, repeats innermost) is made when asked for, so that
// planning a run takes memory for the trials to run, not for the grid. With a `system_fingerprint`,
// each key is the trial on that system (a database holds the same experiment from several machines
// side by side); without one, the key is the spec's alone. `e` must outlive the grid.
class Grid {
 public:
  Grid(const Experiment& e, std::string system_fingerprint = "");
  int64_t size() const { return size_; }
  TrialSpec at(int64_t index) const;
  int64_t repeat_at(int64_t index) const { return index % e_->repeats; }

 private:
  const Experiment* e_;
  std::string fingerprint_;
  nlohmann::json dataset_id_;
  int64_t size_ = 0;
};

// Every trial of the grid, in grid order (Grid::at for each number): for small grids and tests.
std::vector<TrialSpec> expand_grid(const Experiment& e, const std::string& system_fingerprint = "");

// The trial of one recurrence attempt: the grid's model, compression ratio, precision, engine and
// epochs (one each), the attempt's batch size and kept power limit, numbered `index` (its place among
// the attempts; it is also the repeat, and the training seed is training.seed + index: each attempt a
// run of its own), keyed like a grid trial with the attempt in its spec.
TrialSpec recurrence_trial(const Experiment& e, const RecurrenceAttempt& attempt, int64_t index,
                           const std::string& system_fingerprint = "");

// The order in which trials run, per e.order: a permutation of `grid_indices` (numbers of one grid).
std::vector<int64_t> run_order(const Experiment& e, const std::vector<int64_t>& grid_indices);
// The same for trials already made: indices into `trials`.
std::vector<std::size_t> run_order(const Experiment& e, const std::vector<const TrialSpec*>& trials);

// The warm-up trial number `n` (0-based) of this run: the grid's first configuration, flagged, keyed
// by `run_id` so that every run's warm-up is stored.
TrialSpec warmup_trial(const Experiment& e, int64_t n, const std::string& run_id, const std::string& system_fingerprint);

// What names the dataset in a trial's key: a file by its content (hash and size, so the same data at
// another path or on another machine is the same trial), a generator by its parameters.
nlohmann::json dataset_identity(const DatasetSpec& d);

// A slice of the grid: shard `index` of `count` (0 <= index < count).
struct Shard {
  int64_t index = 0, count = 1;
  bool contains(int64_t grid_index) const { return grid_index % count == index; }
  std::string label() const { return std::to_string(index) + "/" + std::to_string(count); }
};
// "i/N"; InputError otherwise.
Shard parse_shard(const std::string& text);
// SLURM_ARRAY_TASK_ID (minus SLURM_ARRAY_TASK_MIN) and SLURM_ARRAY_TASK_COUNT, when both are set.
std::optional<Shard> shard_from_slurm_env();

// 128-bit FNV-1a of the canonical JSON text (sorted keys), as 32 hex digits.
std::string spec_hash(const nlohmann::json& spec);

}  // namespace balerbench
