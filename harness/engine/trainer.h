// trainer.h: Baler's training loop (docs/baler.md, Training) in LibTorch.
//
// Adam; loss baler_sum (sum of squared errors / n_features per batch) or
// mse_mean; epoch loss = plain mean over batches (a short last batch counts
// fully); optional validation set; ReduceLROnPlateau and EarlyStopping on the
// validation loss (the training loss when there is none). The data are one
// tensor on the device and batches are contiguous slices (one permutation
// gather per epoch when shuffling); losses are accumulated on the device and
// read once per epoch, so the hot loop never waits on the host.
//
// Precision: the model's parameters and the data must already be in the
// policy's param_dtype and data_dtype (the cycle does this); fit autocasts the
// forward pass when the policy says so, scales the loss with a GradScaler for
// amp_fp16, and records the scale per epoch. On CUDA, full batches replay one
// captured CUDA graph of the whole step (cuda_graphs); the short last batch
// and profiled runs go eagerly.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <string>
#include <vector>

#include "harness/engine/engine.h"
#include "harness/engine/engine_choice.h"
#include "harness/engine/loss.h"
#include "harness/engine/phase_timer.h"
#include "harness/engine/precision.h"
#include "harness/engine/train_settings.h"
#include "harness/engine/training_observer.h"
#include "harness/monitor/progress.h"
#include "models/autoencoder.h"

namespace balerbench {

// The training settings as the run config parsed them (train_settings.h: train_options() assigns
// them whole), and what is resolved for this run before fit.
struct TrainOptions : TrainSettings {
  // The progress line's context: trial i/N, live power (its line interval is progress_interval_s).
  ProgressContext progress_context;
  // Intermittent saving: the observer's save_checkpoint(e) after every epoch e (0-based) with
  // e % save_every_epochs == 0; 0: never.
  int64_t save_every_epochs = 0;
  PrecisionPolicy precision;  // default: fp64; grad_scaler is used when precision.loss_scaling
  // Evaluation after every epoch: the validation loss when there are validation rows, and the
  // relative error ||x_hat - x|| / ||x|| when `relative_error` (on the validation rows, else on
  // the training rows). In chunks of eval_chunk_rows (0: eval_chunk_rows_for), not training batches.
  bool relative_error = false;
  int64_t eval_chunk_rows = 0;
  // The engine that runs each step (engine_registry.h). Resolved before fit (choose_engine); kAuto
  // here is an error.
  EngineKind engine = EngineKind::kLibtorch;
  int engine_workers = 0;     // engines that split a batch: threads sharing it (0: at::get_num_threads())
  // An engine with a thread governor may run a step on fewer threads (the fused engine's,
  // shard_pool.h); the thread calibration turns this off to time each count on every step.
  bool adaptive_threads = true;
};

struct EpochRecord {
  int64_t epoch = 0;  // 0-based, as stored
  int64_t number() const { return epoch + 1; }  // 1-based, as progress lines, targets and live metrics count
  double train_loss = 0;
  double val_loss = 0;
  double lr = 0;  // learning rate used during this epoch
  int64_t early_stopping_counter = 0;
  bool lr_reduced = false;
  double duration_s = 0;
  std::optional<double> relative_error;  // when TrainOptions::relative_error
  double eval_duration_s = 0;            // the evaluation's share of duration_s (0 when nothing is evaluated)
  double loss_scale = 0;      // loss scaling only: the scale after this epoch
  int64_t skipped_steps = 0;  // loss scaling only: steps skipped so far (inf/NaN gradients)
};

struct TrainResult {
  std::vector<EpochRecord> epoch_records;  // one per epoch run (RunConfig::epochs is the count asked for)
  bool early_stopped = false;
  bool stopped = false;  // the observer's stop_training said so
  bool has_validation = false;
  double duration_s = 0;
  int64_t train_rows = 0;
  int64_t val_rows = 0;
  PrecisionPolicy precision;
  bool loss_scaling = false;
  GradScalerStats scaler;  // when loss_scaling
  bool profiled = false;
  PhaseTimes phases;        // when profiled
  std::string optimizer_path;   // FlatAdam::path_name(): cpu loop, aten fused kernel, tensor ops, or an engine's own
  int64_t eval_chunk_rows = 0;  // rows per evaluation pass (0: nothing was evaluated)
  EngineKind engine = EngineKind::kLibtorch;  // the engine that trained
  // What the engine said of itself after the run, as it said it: threads and shards, the products,
  // the CUDA graph (used, replays, why not).
  EngineStatus engine_status;
  std::string engine_note;            // how engine auto chose (set by TrainingSession)
  nlohmann::json threads;             // the thread count and its source (thread_calibration.h; set by TrainingSession)
};

// What fit does with a batch size larger than the training rows, for a note when training starts
// ("" when batch_size <= train_rows): every epoch is then one step on all the rows.
std::string batch_size_note(int64_t batch_size, int64_t train_rows);

// x_train, x_val: (rows, n_features) in the model's dtype on the model's
// device; x_val may be undefined. `observer` (optional) hears of phases, steps, checkpoints and
// epochs, answers whether to stop, and gives the progress line its power (training_observer.h).
TrainResult fit(AutoEncoder& model, const at::Tensor& x_train, const at::Tensor& x_val, const TrainOptions& options,
                TrainingObserver* observer = nullptr);

struct EvalOptions {
  int64_t batch_size = 512;  // the training batch size: the loss is the mean over batches of this size
  LossKind loss = LossKind::kBalerSum;
  PrecisionPolicy policy;    // autocast as in training
  int64_t chunk_rows = 0;    // rows per forward pass; 0: eval_chunk_rows_for(model, x)
};

struct Evaluation {
  double loss = 0;            // the mean of the per-batch losses, as if evaluated batch by batch
  double relative_error = 0;  // ||x_hat - x|| / ||x|| over all rows (||x_hat - x|| when x is all zeros)
  int64_t chunk_rows = 0;     // rows per forward pass used
};

// Rows per evaluation pass: on CUDA as many as keep the widest activation under 64 MiB (one or a
// few passes for a whole validation set); on the CPU 4096 rows, 6.5 MB of float64 activations
// (BM_Evaluate: 2.4-2.7x the batch-by-batch evaluation at batch 512; larger chunks add ~10%).
int64_t eval_chunk_rows_for(AutoEncoder& model, const at::Tensor& x);

// x in eval mode, without gradients, autocast as the policy says: the loss of every batch of
// `batch_size` rows (a short last batch counts fully, as in training) and the relative error,
// from one forward pass per chunk of rows. The sums stay on x's device in float64 and are read
// once, at the end.
Evaluation evaluate(AutoEncoder& model, const at::Tensor& x, const EvalOptions& options);

}  // namespace balerbench
