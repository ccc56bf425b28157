// trial_spec.h: what one trial is asked to measure. TrialSpec: one point of an experiment's grid (or
// one attempt of a recurrence), its resolved run config and key; TrialProtocol: what the experiment
// sets for every trial (its name, the target, the cooldown and thermal wait, MaxPower, the power-limit
// optimiser). The sweep (sweep/experiment.h: an Experiment is a TrialProtocol) makes both; a trial
// (trial.h) reads them and nothing else of the experiment.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>

#include "harness/energy/thermal_wait.h"
#include "harness/run/run_config.h"
#include "harness/trial/optimizer_spec.h"
#include "harness/trial/target_spec.h"
#include "harness/tuning/recurrence_tuner.h"

namespace balerbench {

struct TrialProtocol {
  std::string name;  // the experiment's
  TargetSpec target;
  double cooldown_s = 0;
  // The thermal protocol (energy.thermal): before each trial, wait for the GPUs to cool.
  ThermalSettings thermal;
  std::optional<double> max_power_w;  // else the GPUs' maximum limit x count, at run time
  OptimizerSpec optimizer;
};

// One attempt of one recurrence as a trial: what the batch-size optimiser chose (tuning's plan), and
// the cost it is judged by.
struct RecurrenceAttempt {
  AttemptPlan plan;
  double eta = 0.5, max_power_w = 0;
  nlohmann::json to_json() const;  // the plan, eta and MaxPower, for the trial's spec
};

// One trial of the grid. Its coordinates on the model, compression ratio, batch size, precision, engine
// and epochs axes live in `config` only (read them with the accessors); `spec` is everything that
// shapes the trial, as JSON for its key and the database, made from `config` and the rest.
struct TrialSpec {
  int64_t grid_index = 0;  // position in the full grid (0-based; TrialRecord::grid_index)
  int64_t repeat = 0;
  std::optional<double> power_limit_w;
  RunConfig config;           // the resolved run config of this trial (seed = training seed + repeat)
  nlohmann::json spec;        // everything that shapes the trial, resolved
  std::string spec_key;       // hash of `spec`, the dataset named by its content (dataset_identity)
  std::string key;            // spec_key on this system: hash of spec_key and the system fingerprint
  bool warmup = false;        // a warm-up trial: stored, left out of statistics
  std::optional<RecurrenceAttempt> recurrence;  // an attempt of a recurrence (batch_size_optimizer)
  // The experiment has several models / compression ratios: the label names this trial's.
  bool labels_model = false, labels_ratio = false;
  std::string label() const;  // "bs=512 fp32 libtorch pl=- ep=10 #0", "AE cr=4 bs=512 ..." with those axes
  const std::string& model() const { return config.model_name; }
  double compression_ratio() const { return config.compression_ratio; }
  int64_t batch_size() const { return config.batch_size; }
  int64_t epochs() const { return config.epochs; }
  Precision precision() const { return config.precision; }
  EngineKind engine() const { return config.engine; }
};

}  // namespace balerbench
