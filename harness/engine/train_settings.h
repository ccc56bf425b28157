// train_settings.h: the training settings, one value from the parsed run config to the engine.
//
// As mlcommons loadgen's TestSettings: the keys a run config parses and the trainer reads as they
// were written are one struct. RunConfig is a TrainSettings (run/run_config.h: parse_run_config
// fills these fields in place); TrainOptions is one too (trainer.h: train_options() assigns the
// config's settings whole, then sets what is resolved at run time); fit and the engines read them
// there. No field here is copied by name between the two. To add a training key: one field here
// (and its entry in to_json), its parser line in run/run_config.cpp, its row in
// base/config_key_docs.cpp.
//
// The cut: a key is here when the config's value is what the trainer runs with. Keys that are
// resolved before training stay out, each with its two types: `precision` (RunConfig's Precision
// mode; TrainOptions' PrecisionPolicy, for this model and device), `engine` (the config's `auto`;
// the chosen EngineKind), intermittent saving (Baler's two keys; TrainOptions::save_every_epochs,
// set by the command that saves). So do keys no trainer reads: the data, split and normalization,
// the device, threads, output, codecs, energy and monitoring sections, and profile_trace (the
// command writes that trace around fit).
//
// Without LibTorch, so that the run config (and the tests built without LibTorch) can hold it.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>

#include "harness/engine/engine_knobs.h"
#include "harness/engine/loss_kind.h"
#include "harness/engine/training_defaults.h"

namespace balerbench {

// The "grad_scaler" section: loss scaling for amp_fp16 (precision.h's GradScaler); PyTorch's defaults.
struct GradScalerOptions {
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
};

struct TrainSettings {
  // Baler's keys: the loop, its learning rate and its schedulers (defaults: training_defaults.h).
  int64_t epochs = training_defaults::kEpochs;
  int64_t batch_size = training_defaults::kBatchSize;
  double lr = training_defaults::kLr;  // as written; training uses effective_lr()
  bool early_stopping = training_defaults::kEarlyStopping;
  int64_t early_stopping_patience = training_defaults::kEarlyStoppingPatience;
  double min_delta = training_defaults::kMinDelta;
  bool lr_scheduler = training_defaults::kLrScheduler;
  int64_t lr_scheduler_patience = training_defaults::kLrSchedulerPatience;

  // The learning rate scaled by the batch size (balerbench's keys): lr is tuned for
  // lr_reference_batch_size, and a trial at batch size b trains at lr x b / reference (linear) or
  // lr x sqrt(b / reference) (sqrt), as Zeus's lr_scaler; "none" (the default) trains at lr.
  std::string lr_scaling = "none";  // none | linear | sqrt
  std::optional<int64_t> lr_reference_batch_size;

  // balerbench's own keys.
  LossKind loss = LossKind::kBalerSum;  // baler_sum (HEAD) | mse_mean (v1.0.0, paper)
  bool shuffle = training_defaults::kShuffle;
  int64_t seed = 0;  // >= 0: the shuffle's generator (and the run's torch seed)
  std::string progress = training_defaults::kProgress;  // auto | bar | lines | none
  double progress_interval_s = 1.0;  // plain-line progress: at most one epoch line per interval (0 = every epoch)
  GradScalerOptions grad_scaler;     // used when the precision policy scales the loss
  // The engines' own keys (fused_products, ...), each engine's section read by the engine's own
  // reader (engine_knobs.h); passed whole to the engine, never copied key by key.
  EngineKnobs engine_knobs = default_engine_knobs();
  bool cuda_graphs = true;   // CUDA: replay the training step as a captured graph (not when profiling)
  bool profile = false;      // per-phase timers (phase_timer.h): data, encode, decode, loss, backward, ...; eager steps
  bool profile_sync = true;  // profile: synchronise the device at each phase edge (else CUDA events)

  // The learning rate training uses: lr, scaled to batch_size by lr_scaling.
  double effective_lr() const;
  // These keys as the run config writes them (RunConfig::to_json adds them to its own): lr_scaling,
  // lr_reference_batch_size and effective_lr only with a scaling, the engines' keys at the root.
  nlohmann::json to_json() const;
};

}  // namespace balerbench
