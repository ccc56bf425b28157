// replay.h: `balerbench replay`: one recurring training job replayed from Zeus's published traces
// (zeus_trace.h) through balerbench's own decision code: the recurrences as RecurrenceTuner runs
// them (recurrence_tuner.h), the batch size from BatchSizeOptimizer, the power limit from the
// power-limit optimiser (power/optimizer.h) driven through its live interface, its meter readings
// made of trace rows. Where Zeus's simulator (zeus/_legacy/simulate.py) decides something the issue
// leaves open, replay decides it the same way; docs/choosing.md lists each.
//
// Replay invents no measurement. Every figure is a trace row or a stated combination of rows:
//  - an attempt's epochs: the sampled run's `target_epoch` (train trace) when it reached the target
//    within the epochs allowed, else the epochs allowed (max_epochs, or fewer under the cost bound:
//    the most whole epochs whose cost stays within it, as Zeus's simulator computes them);
//  - its time and energy: epochs x the power row's time per epoch (and x its average power), at the
//    limit chosen for the batch size; an attempt that profiles the limits spends its first epoch
//    split evenly over them (the virtual meter's readings), so that epoch's time and energy are the
//    mean of the limits' rows;
//  - the default configuration (the default batch size at the largest limit) and the best in
//    hindsight: the mean over the trace's runs of target_epoch x the row's figures.
// A power limit that a batch size's rows do not hold is refused, unless `interpolate` is set: then
// it is interpolated linearly between the two measured limits around it (never beyond them), and
// every figure built on it is labelled interpolated.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "harness/report/tables.h"
#include "harness/tuning/recurrence_tuner.h"
#include "harness/tuning/zeus_trace.h"

namespace balerbench {

// A job as Zeus's example scripts define the six workloads of its traces
// (examples/research_reproducibility/zeus_nsdi23/run_alibaba.py, get_job_with_defaults): the
// default batch size is the smaller of `default_batch_size` and the largest batch size the GPU's
// power trace measured for the dataset.
struct ZeusJobDefaults {
  std::string dataset, network, optimizer;
  double target_metric = 0;
  int64_t max_epochs = 0, default_batch_size = 0;
};
const std::vector<ZeusJobDefaults>& zeus_job_defaults();
const ZeusJobDefaults* find_zeus_job_defaults(const std::string& dataset);

struct ReplayJob {
  std::string dataset;
  std::string network, optimizer;             // empty: Zeus's default for the dataset, else the trace's only one
  std::optional<double> target_metric;        // else Zeus's default for the dataset
  std::optional<int64_t> max_epochs;          // else Zeus's default
  std::optional<int64_t> default_batch_size;  // else Zeus's rule (above)
  std::vector<int64_t> batch_sizes;           // empty: every batch size both traces hold at the target
  std::vector<double> power_limits_w;         // empty: each batch size's measured limits
  bool interpolate = false;                   // interpolate a listed limit a batch size was not measured at
};

struct ReplayOptions {
  double eta = 0.5, beta = 2.0;        // the paper's defaults
  std::optional<int64_t> recurrences;  // else 2 x |batch sizes| x |power limits| (the paper)
  uint64_t seed = 1;
  int64_t max_attempts = 20;  // per recurrence (Zeus's simulator)
};

// One (batch size, limit) as replay uses it: a power row, or an interpolation between two.
struct PowerPoint {
  double limit_w = 0, time_per_epoch_s = 0, average_power_w = 0;
  std::string source;  // "line 12", or "interpolated between 150 W (line 12) and 200 W (line 14)"
  bool interpolated = false;
  double energy_per_epoch_j() const { return time_per_epoch_s * average_power_w; }
};

// The expected figures of one configuration over the trace's runs.
struct Expected {
  int64_t batch_size = 0;
  double power_limit_w = 0;
  int64_t runs = 0, runs_reached = 0;                        // reached within max_epochs
  double mean_epochs = 0, tta_s = 0, eta_j = 0, cost_j = 0;  // over the runs that reached
  bool interpolated = false;
  nlohmann::json to_json() const;
};

struct ReplayAttempt {
  AttemptPlan plan;
  double power_limit_w = 0;
  int64_t run = 0;                      // the train trace's run that was sampled
  std::optional<int64_t> target_epoch;  // that run's epoch to target (none: never reached)
  int64_t train_line = 0;               // its line
  int64_t epochs = 0;                   // epochs the attempt ran (0: it did not run)
  int64_t epochs_allowed = 0;           // max_epochs, or fewer under the cost bound
  bool ran = true, reached = false, profiled = false, interpolated = false;
  double time_s = 0, energy_j = 0;
  AttemptResult result;
  std::string how;  // the combination of rows behind time_s and energy_j
};

struct JitChoice {
  int64_t batch_size = 0;
  int64_t recurrence = 0;  // the recurrence whose attempt profiled it
  double chosen_w = 0;
  double trace_optimum_w = 0;  // the limit with the lowest epoch cost among the rows (the check)
  nlohmann::json optimizer;    // PowerLimitOptimizer::to_json()
};

struct ReplayResult {
  std::string train_file, power_file;
  ZeusJobDefaults job;                  // the resolved job (network, optimizer, target, max_epochs, default batch size)
  std::string default_batch_size_rule;  // how the default was found
  std::vector<int64_t> batch_sizes;
  std::map<int64_t, std::vector<PowerPoint>> power;  // per batch size, highest limit first
  double max_power_w = 0;                            // MaxPower of the cost
  int64_t recurrences = 0;
  ReplayOptions options;
  std::vector<std::string> notes;  // what was left out and why, interpolations, Zeus's choices followed
  std::vector<ReplayAttempt> attempts;
  std::vector<JitChoice> jit;
  Expected default_config, hindsight_best;
  std::optional<Expected> final_choice;  // the configuration of the last recurrence's reaching attempt
  nlohmann::json tuner;                  // RecurrenceTuner::to_json() at the end
  // Over all recurrences (every attempt, profiling included).
  double total_time_s = 0, total_energy_j = 0, total_cost_j = 0;
  bool any_interpolated = false;
  nlohmann::json to_json() const;
};

// InputError naming the file and line for a job the traces cannot replay; TuningError when the
// recurrences cannot go on (the default batch size does not reach the target, ...).
ReplayResult replay_job(const TrainTrace& train, const PowerTrace& power, const ReplayJob& job,
                        const ReplayOptions& options);

// The tables of one replay: the summary, every attempt, the just-in-time power limits
// (replay_tables.cpp).
std::vector<Table> replay_tables(const ReplayResult& r);

// The reproduction: every workload of Zeus's defaults on every GPU, `seeds` replays each (seed,
// seed + 1, ...), against the paper's range.
struct Reproduction {
  struct Row {
    std::string gpu;
    std::vector<ReplayResult> runs;  // one per seed
  };
  std::vector<Row> rows;
  std::string command;  // the command line that made it, for the table's notes
};
// The table per (GPU, workload), and the ranges over the workloads beside the paper's
// (reproduction_tables.cpp).
std::vector<Table> reproduction_tables(const Reproduction& r);

// The paper's headline (NSDI'23): energy and time saved against the default configuration.
inline constexpr char kZeusPaperEnergyRange[] = "15.3%-75.8%";
inline constexpr char kZeusPaperTimeSaving[] = "60.6%";

}  // namespace balerbench
