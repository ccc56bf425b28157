// trial.h: measuring one trial, the room below the sweep (sweep/ plans, claims, calls measure_trial
// and stores; trial/ measures). measure_trial runs the stages of trial_stages.h in order: the
// cooldown, the thermal wait and the power limit; an energy session (idle baseline, sampler); training
// with per-epoch evaluation and cumulative time and energy at every epoch, the target (TTA/ETA the
// first time it is met); compress and decompress of the whole dataset, each in its own energy window
// (and the classical codecs beside them, when asked); the meters read; and the record built from what
// they returned. A failure becomes status "failed" (or "skipped" when power limits may not be
// changed) in the record; an Interrupted (stop signal) propagates.
#pragma once

#include <atomic>
#include <exception>
#include <memory>
#include <string>

#include "harness/run/system_description.h"  // base_provenance, for a trial's context
#include "harness/store/store.h"
#include "harness/trial/trial_spec.h"

namespace balerbench {

struct Dataset;
class GpuWatch;
class LiveMetrics;
class PowerControl;
class PowerLimitGuard;

struct TrialContext {
  const TrialProtocol* protocol = nullptr;  // the experiment's settings for every trial (an Experiment)
  std::shared_ptr<const Dataset> dataset;  // loaded once per sweep
  std::string dataset_label;               // as the results name it: "cms-like 20000 rows (seed 0)"
  int64_t run_ordinal = 1, run_count = 1;  // this trial's place (1-based) among those this run executes (-1: open-ended)
  std::string order = "grid";              // how this run ordered its trials (the experiment's order)
  nlohmann::json order_seed;               // the shuffle's seed, or null
  PowerControl* power = nullptr;           // NVML GPUs whose limits may be set (null: none)
  PowerLimitGuard* guard = nullptr;        // with `power`
  const GpuWatch* gpus = nullptr;          // the NVML GPUs, read only (MaxPower, the thermal protocol); null: none
  LiveMetrics* live = nullptr;             // live monitoring (optional)
  const std::atomic<int>* stop = nullptr;  // set by a stop signal
  std::string progress = "auto";
  nlohmann::json provenance;  // base_provenance(), read once per sweep (null: read per trial)
  // The trial in flight's recurrence attempt (batch_size_optimizer), set by measure_trial: its power
  // limits profiled or not, its cost bound.
  const RecurrenceAttempt* recurrence = nullptr;
};

// A failed trial's error as stored: one line (tables print it in a cell), LibTorch's C++ stack trace
// left out (was: a 2 KB trace whose lines broke the Markdown trials table). The whole text, when it
// was more than that line, goes to stderr, the run's log.
std::string stored_error(const std::exception& e, const TrialSpec& spec);

// Measures the trial `spec` in `ctx` (its protocol, dataset, place in the run, GPUs, stop flag) and
// returns the record the store keeps, whether it succeeded or failed.
TrialRecord measure_trial(const TrialSpec& spec, TrialContext& ctx);

}  // namespace balerbench
