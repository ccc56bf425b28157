// trainer.cpp: see trainer.h.
#include "harness/engine/trainer.h"

#include <torch/torch.h>

#include <chrono>

#include "datasets/error.h"
#include "harness/engine/flat_adam.h"
#include "harness/engine/progress.h"
#include "harness/engine/schedulers.h"

namespace balerbench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// One pass over x in batches; returns the plain mean of the batch losses.
double train_epoch(AutoEncoder& model, FlatAdam& opt, const at::Tensor& x, const TrainOptions& o,
                   Progress& progress, int64_t epoch) {
  const int64_t rows = x.size(0);
  const int64_t batches = (rows + o.batch_size - 1) / o.batch_size;
  at::Tensor loss_sum = torch::zeros({}, x.options());  // stays on the device
  for (int64_t b = 0; b < batches; ++b) {
    const int64_t start = b * o.batch_size;
    const at::Tensor xb = x.narrow(0, start, std::min(o.batch_size, rows - start));
    opt.zero_grad();
    const at::Tensor loss = batch_loss(model.forward(xb), xb, o.loss);
    loss.backward();
    opt.step();
    loss_sum += loss.detach();
    progress.batch(epoch + 1, o.epochs, b, batches);
  }
  return loss_sum.item<double>() / static_cast<double>(batches);
}

}  // namespace

LossKind parse_loss_kind(const std::string& name) {
  if (name == "baler_sum") return LossKind::kBalerSum;
  if (name == "mse_mean") return LossKind::kMseMean;
  throw InputError("unknown loss '" + name + "'", "baler_sum or mse_mean");
}

at::Tensor batch_loss(const at::Tensor& x_hat, const at::Tensor& x, LossKind kind) {
  // One fused kernel each way (forward and backward) instead of three.
  if (kind == LossKind::kMseMean) return at::mse_loss(x_hat, x, at::Reduction::Mean);
  return at::mse_loss(x_hat, x, at::Reduction::Sum) / static_cast<double>(x.size(1));
}

double evaluate(AutoEncoder& model, const at::Tensor& x, int64_t batch_size, LossKind loss) {
  torch::NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  const int64_t rows = x.size(0);
  const int64_t batches = (rows + batch_size - 1) / batch_size;
  at::Tensor sum = torch::zeros({}, x.options());
  for (int64_t b = 0; b < batches; ++b) {
    const int64_t start = b * batch_size;
    const at::Tensor xb = x.narrow(0, start, std::min(batch_size, rows - start));
    sum += batch_loss(model.forward(xb), xb, loss);
  }
  model.train(was_training);
  return sum.item<double>() / static_cast<double>(batches);
}

TrainResult fit(AutoEncoder& model, const at::Tensor& x_train, const at::Tensor& x_val, const TrainOptions& o,
                const std::function<void(const EpochRecord&)>& on_epoch) {
  if (o.batch_size <= 0) throw InputError("batch_size must be positive (got " + std::to_string(o.batch_size) + ")");
  if (x_train.size(0) == 0) throw InputError("no training rows", "lower test_size");
  FlatAdam opt(model.parameters(), o.lr, 0.9, 0.999, 1e-8);
  ReduceLROnPlateau plateau(o.lr, o.lr_scheduler_patience);
  EarlyStopping stopper(o.early_stopping_patience, o.min_delta);
  Progress progress(o.progress, o.progress_context);
  auto gen = at::make_generator<at::CPUGeneratorImpl>(o.seed + 1);
  TrainResult result;
  result.has_validation = x_val.defined() && x_val.size(0) > 0;
  result.train_rows = x_train.size(0);
  result.val_rows = result.has_validation ? x_val.size(0) : 0;
  const auto t_fit = Clock::now();
  double lr = o.lr;
  for (int64_t e = 0; e < o.epochs; ++e) {
    const auto t0 = Clock::now();
    if (o.on_phase) o.on_phase("train", false);
    model.train();
    at::Tensor x = x_train;
    if (o.shuffle) {  // one gather per epoch; the permutation is drawn on the CPU for reproducibility
      const at::Tensor perm = at::randperm(x_train.size(0), gen, at::kLong).to(x_train.device());
      x = x_train.index_select(0, perm);
    }
    EpochRecord rec;
    rec.epoch = e;
    rec.lr = lr;
    rec.train_loss = train_epoch(model, opt, x, o, progress, e);
    if (o.on_phase) o.on_phase("train", true);
    rec.val_loss = rec.train_loss;
    if (result.has_validation) {
      if (o.on_phase) o.on_phase("evaluation", false);
      rec.val_loss = evaluate(model, x_val, o.batch_size, o.loss);
      if (o.on_phase) o.on_phase("evaluation", true);
    }
    if (o.lr_scheduler) {
      lr = plateau.step(rec.val_loss);
      rec.lr_reduced = plateau.reduced_last_step();
      if (rec.lr_reduced) opt.set_lr(lr);
    }
    bool stop = false;
    if (o.early_stopping) {
      stop = stopper.step(rec.val_loss);
      rec.early_stopping_counter = stopper.counter();
    }
    if (o.save_every_epochs > 0 && o.save_checkpoint && e % o.save_every_epochs == 0) o.save_checkpoint(e);
    rec.duration_s = seconds_since(t0);
    result.epochs.push_back(rec);
    EpochLine line{e + 1, o.epochs, rec.train_loss, rec.val_loss, result.has_validation, rec.lr,
                   rec.early_stopping_counter, o.early_stopping_patience, rec.lr_reduced, rec.duration_s,
                   static_cast<double>(x_train.size(0)) / std::max(rec.duration_s, 1e-12)};
    line.final = stop || e + 1 == o.epochs;
    progress.epoch(line);
    if (on_epoch) on_epoch(rec);
    if (stop) {
      result.early_stopped = true;
      break;
    }
  }
  result.duration_s = seconds_since(t_fit);
  return result;
}

}  // namespace balerbench
