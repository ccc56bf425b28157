// trainer.cpp: see trainer.h.
#include "harness/engine/trainer.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>

#include "common/error.h"
#include "harness/base/clock.h"
#include "harness/engine/engine_registry.h"
#include "harness/engine/flat_adam.h"
#include "harness/monitor/progress.h"
#include "harness/engine/schedulers.h"
#include "harness/engine/torch_compat.h"

namespace balerbench {
namespace {

using Clock = std::chrono::steady_clock;

void check_fit_inputs(const AutoEncoder& model, const at::Tensor& x_train, const TrainOptions& o) {
  if (o.batch_size <= 0) throw InputError("batch_size must be positive (got " + std::to_string(o.batch_size) + ")");
  if (x_train.size(0) == 0) throw InputError("no training rows", "lower test_size");
  const PrecisionPolicy& policy = o.precision;
  if (model.dtype() != policy.param_dtype || x_train.scalar_type() != policy.data_dtype)
    throw InputError(std::string("precision ") + policy.name() + " trains " + dtype_name(policy.param_dtype) +
                         " parameters on " + dtype_name(policy.data_dtype) + " data; got " + dtype_name(model.dtype()) +
                         " and " + dtype_name(x_train.scalar_type()),
                     "convert the model and data with the policy's dtypes first");
  if (o.engine == EngineKind::kAuto) throw std::logic_error("fit: resolve engine auto with choose_engine first");
}

// One pass over x in batches, each a step of the engine; returns the plain mean of the batch losses.
double train_epoch(Engine& engine, PhaseTimer& timer, const TrainOptions& o, const at::Tensor& x, Progress& progress,
                   int64_t epoch, TrainingObserver& observer) {
  const int64_t rows = x.size(0);
  const int64_t batches = (rows + o.batch_size - 1) / o.batch_size;
  engine.begin_epoch();
  for (int64_t b = 0; b < batches; ++b) {
    const int64_t start = b * o.batch_size;
    observer.step(false);
    at::Tensor xb;
    {
      PhaseTimer::Scope s(timer, Phase::kData);
      xb = x.narrow(0, start, std::min(o.batch_size, rows - start));
    }
    engine.step(xb);
    observer.step(true);
    progress.batch(epoch + 1, o.epochs, b, batches);
  }
  return engine.epoch_loss_sum() / static_cast<double>(batches);
}

// The training rows of an epoch: a seeded shuffle (one gather; the permutation is drawn on the
// CPU for reproducibility) or the rows as they are.
at::Tensor epoch_rows(const at::Tensor& x_train, bool shuffle, at::Generator& gen, PhaseTimer& timer) {
  if (!shuffle) return x_train;
  PhaseTimer::Scope s(timer, Phase::kData);
  const at::Tensor perm = at::randperm(x_train.size(0), gen, at::kLong).to(x_train.device());
  return x_train.index_select(0, perm);
}

// The epoch's evaluation (validation loss, relative error) into `rec`, inside its phase.
void evaluate_epoch(AutoEncoder& model, const at::Tensor& x_train, const at::Tensor& x_val, const TrainOptions& o,
                    PhaseTimer& timer, EpochRecord& rec, TrainResult& result, TrainingObserver& observer) {
  rec.val_loss = rec.train_loss;
  if (!result.has_validation && !o.relative_error) return;
  // The epoch's loss was read, so the device is idle: this is the evaluation's own time.
  observer.phase("evaluation", false);
  const auto t_eval = Clock::now();
  {
    PhaseTimer::Scope s(timer, Phase::kEvaluation);
    const Evaluation ev = evaluate(model, result.has_validation ? x_val : x_train,
                                   {o.batch_size, o.loss, o.precision, o.eval_chunk_rows});
    if (result.has_validation) rec.val_loss = ev.loss;
    if (o.relative_error) rec.relative_error = ev.relative_error;
    result.eval_chunk_rows = ev.chunk_rows;
  }
  rec.eval_duration_s = seconds_since(t_eval);
  observer.phase("evaluation", true);
}

// The schedulers after an epoch: the learning rate for the next one, and whether to stop early.
struct Schedules {
  ReduceLROnPlateau plateau;
  EarlyStopping stopper;
  double lr;

  bool after_epoch(const TrainOptions& o, FlatAdam& opt, EpochRecord& rec) {
    if (o.lr_scheduler) {
      lr = plateau.step(rec.val_loss);
      rec.lr_reduced = plateau.reduced_last_step();
      if (rec.lr_reduced) opt.set_lr(lr);
    }
    if (!o.early_stopping) return false;
    const bool stop = stopper.step(rec.val_loss);
    rec.early_stopping_counter = stopper.counter();
    return stop;
  }
};

void print_epoch(Progress& progress, const TrainOptions& o, const EpochRecord& rec, bool has_validation,
                 int64_t train_rows, bool final) {
  EpochLine line{rec.number(),
                 o.epochs,
                 rec.train_loss,
                 rec.val_loss,
                 has_validation,
                 rec.lr,
                 rec.early_stopping_counter,
                 o.early_stopping_patience,
                 rec.lr_reduced,
                 rec.duration_s,
                 static_cast<double>(train_rows) / std::max(rec.duration_s, 1e-12)};
  line.final = final;
  progress.epoch(line);
}

TrainResult start_result(const at::Tensor& x_train, const at::Tensor& x_val, const TrainOptions& o,
                         const FlatAdam& opt) {
  TrainResult result;
  result.has_validation = x_val.defined() && x_val.size(0) > 0;
  result.train_rows = x_train.size(0);
  result.val_rows = result.has_validation ? x_val.size(0) : 0;
  result.precision = o.precision;
  result.loss_scaling = o.precision.loss_scaling;
  result.profiled = o.profile;
  result.engine = o.engine;
  result.optimizer_path = opt.path_name();
  return result;
}

void finish_result(TrainResult& result, const Engine& engine, const GradScaler* scaler, PhaseTimer& timer,
                   const TrainOptions& o) {
  result.engine_status = engine.status();
  if (scaler) result.scaler = scaler->stats();
  if (o.profile) result.phases = timer.totals();
}

}  // namespace

int64_t eval_chunk_rows_for(AutoEncoder& model, const at::Tensor& x) {
  if (!x.is_cuda()) return 4096;
  int64_t widest = x.size(1);
  for (const auto& l : model.architecture().layers) widest = std::max({widest, l.in_features, l.out_features});
  constexpr int64_t kActivationBytes = 64 << 20;
  return std::max<int64_t>(1024, kActivationBytes / (widest * static_cast<int64_t>(x.element_size())));
}

Evaluation evaluate(AutoEncoder& model, const at::Tensor& x, const EvalOptions& o) {
  if (o.batch_size <= 0) throw InputError("batch_size must be positive (got " + std::to_string(o.batch_size) + ")");
  torch::NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  const int64_t rows = x.size(0);
  const int64_t features = x.size(1);
  const int64_t chunk = o.chunk_rows > 0 ? o.chunk_rows : eval_chunk_rows_for(model, x);
  const int64_t full_rows = rows / o.batch_size * o.batch_size;  // rows in full training batches
  // sums[0]: squared error over rows in full batches; sums[1]: over the short last batch; sums[2]: sum of x^2.
  at::Tensor sums = torch::zeros({3}, x.options().dtype(at::kDouble));
  for (int64_t start = 0; start < rows; start += chunk) {
    const int64_t n = std::min(chunk, rows - start);
    const at::Tensor xb = x.narrow(0, start, n);
    at::Tensor x_hat;
    {
      AutocastScope autocast(x.device().type(), o.policy.compute_dtype, o.policy.autocast);
      x_hat = model.forward(xb);
    }
    const at::Tensor d2 = (x_hat.to(xb.scalar_type()) - xb).square_();  // (n, features)
    const int64_t in_full = std::clamp<int64_t>(full_rows - start, 0, n);
    if (in_full > 0) sums[0].add_(d2.narrow(0, 0, in_full).sum(at::kDouble));
    if (in_full < n) sums[1].add_(d2.narrow(0, in_full, n - in_full).sum(at::kDouble));
    sums[2].add_(xb.square().sum(at::kDouble));
  }
  model.train(was_training);
  const at::Tensor host = sums.cpu();  // the one read
  const double* h = host.data_ptr<double>();
  const int64_t batches = (rows + o.batch_size - 1) / o.batch_size;
  const int64_t short_rows = rows - full_rows;
  const double scale = static_cast<double>(features) * static_cast<double>(batches);
  Evaluation e;
  e.chunk_rows = chunk;
  if (o.loss == LossKind::kBalerSum)
    e.loss = (h[0] + h[1]) / scale;
  else
    e.loss = (h[0] / static_cast<double>(o.batch_size) + (short_rows ? h[1] / static_cast<double>(short_rows) : 0)) /
             scale;
  const double err = h[0] + h[1];
  e.relative_error = h[2] > 0 ? std::sqrt(err / h[2]) : std::sqrt(err);
  return e;
}

std::string batch_size_note(int64_t batch_size, int64_t train_rows) {
  if (batch_size <= train_rows) return "";
  // train_epoch: ceil(rows / batch_size) = 1 batch of min(batch_size, rows) = rows rows.
  return "batch_size " + std::to_string(batch_size) + " is larger than the " + std::to_string(train_rows) +
         " training rows: every epoch is one step of " + std::to_string(train_rows) + " rows";
}

namespace {

// The progress line's context, its power from the observer (when the caller gave none).
ProgressContext progress_context(const TrainOptions& o, TrainingObserver& observer) {
  ProgressContext ctx = o.progress_context;
  ctx.line_interval_s = o.progress_interval_s;
  if (!ctx.power_w) ctx.power_w = [&observer] { return observer.power_w(); };
  return ctx;
}

// One epoch, trained and evaluated, into `rec`; true when the schedulers stop training early.
struct EpochLoop {
  AutoEncoder& model;
  const at::Tensor& x_train;
  const at::Tensor& x_val;
  const TrainOptions& o;
  Engine& engine;
  FlatAdam& opt;
  GradScaler* scaler;
  PhaseTimer& timer;
  Progress& progress;
  TrainingObserver& observer;

  bool run(int64_t e, at::Generator& gen, Schedules& schedules, EpochRecord& rec, TrainResult& result) {
    rec.epoch = e;
    rec.lr = schedules.lr;
    observer.phase("train", false);
    model.train();
    rec.train_loss = train_epoch(engine, timer, o, epoch_rows(x_train, o.shuffle, gen, timer), progress, e, observer);
    if (scaler) {
      const GradScalerStats st = scaler->stats();
      rec.loss_scale = st.scale;
      rec.skipped_steps = st.skipped_steps;
    }
    observer.phase("train", true);
    evaluate_epoch(model, x_train, x_val, o, timer, rec, result, observer);
    const bool stop = schedules.after_epoch(o, opt, rec);
    if (o.save_every_epochs > 0 && e % o.save_every_epochs == 0) observer.save_checkpoint(e);
    return stop;
  }
};

}  // namespace

TrainResult fit(AutoEncoder& model, const at::Tensor& x_train, const at::Tensor& x_val, const TrainOptions& o,
                TrainingObserver* observer_or_null) {
  check_fit_inputs(model, x_train, o);
  TrainingObserver none;
  TrainingObserver& observer = observer_or_null ? *observer_or_null : none;
  const c10::Device device = x_train.device();
  const Tf32Scope tf32(o.precision.tf32);  // restored when fit returns or throws
  const double lr = o.effective_lr();  // lr, scaled by the batch size when the settings say so
  FlatAdam opt(model.parameters(), lr, 0.9, 0.999, 1e-8);
  std::unique_ptr<GradScaler> scaler;
  if (o.precision.loss_scaling) scaler = std::make_unique<GradScaler>(device, o.grad_scaler);
  PhaseTimer timer(device, o.profile, o.profile_sync);
  const std::unique_ptr<Engine> engine = make_training_engine(
      o.engine, model, TrainingSetup{o, opt, scaler.get(), timer, x_train.size(0), x_train.size(1), device});
  Schedules schedules{ReduceLROnPlateau(lr, o.lr_scheduler_patience), EarlyStopping(o.early_stopping_patience, o.min_delta),
                      lr};
  Progress progress(o.progress, progress_context(o, observer));
  auto gen = at::make_generator<at::CPUGeneratorImpl>(static_cast<uint64_t>(o.seed) + 1);
  TrainResult result = start_result(x_train, x_val, o, opt);
  EpochLoop loop{model, x_train, x_val, o, *engine, opt, scaler.get(), timer, progress, observer};
  const auto t_fit = Clock::now();
  for (int64_t e = 0; e < o.epochs; ++e) {
    const auto t0 = Clock::now();
    EpochRecord rec;
    const bool stop = loop.run(e, gen, schedules, rec, result);
    rec.duration_s = seconds_since(t0);
    result.epoch_records.push_back(rec);
    print_epoch(progress, o, rec, result.has_validation, x_train.size(0), stop || e + 1 == o.epochs);
    observer.epoch(rec);
    if (stop) {
      result.early_stopped = true;
      break;
    }
    if (observer.stop_training()) {
      result.stopped = true;
      break;
    }
  }
  result.duration_s = seconds_since(t_fit);
  finish_result(result, *engine, scaler.get(), timer, o);
  return result;
}

}  // namespace balerbench
