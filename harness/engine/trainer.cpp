// trainer.cpp: see trainer.h.
#include "harness/engine/trainer.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>

#include "datasets/error.h"
#include "harness/base/clock.h"
#include "harness/engine/cuda_graph.h"
#include "harness/engine/flat_adam.h"
#include "harness/engine/fused_engine.h"
#include "harness/engine/progress.h"
#include "harness/engine/schedulers.h"
#include "harness/engine/torch_compat.h"

namespace balerbench {
namespace {

using Clock = std::chrono::steady_clock;

// Batches in the graph are replayed only after this many eager warm-up steps.
constexpr int kGraphWarmupSteps = 3;

// Restores the process-wide TF32 setting when fit returns or throws.
struct Tf32Guard {
  explicit Tf32Guard(bool on) : previous(allow_tf32()) { set_allow_tf32(on); }
  ~Tf32Guard() { set_allow_tf32(previous); }
  bool previous;
};

// Everything one training step touches.
struct Step {
  AutoEncoder& model;
  FlatAdam& opt;
  GradScaler* scaler;  // loss scaling, or null
  const TrainOptions& o;
  PhaseTimer& timer;
  c10::DeviceType device_type;
  bool autocast_cache;  // off while a CUDA graph is captured
  at::Tensor loss_sum;  // stays on the device; zeroed per epoch
  FusedDenseEngine* fused = nullptr;  // engine fused: forward and backward by hand
  double fused_loss_sum = 0;          // engine fused: the epoch's batch losses, on the host
  std::vector<at::Tensor> params;     // the model's parameters, in FlatAdam's order

  at::Tensor forward_loss(const at::Tensor& xb) {
    at::Tensor x_hat;
    {
      AutocastScope autocast(device_type, o.precision.compute_dtype, o.precision.autocast, autocast_cache);
      at::Tensor z;
      {
        PhaseTimer::Scope s(timer, Phase::kEncode);
        z = model.encode(xb);
      }
      PhaseTimer::Scope s(timer, Phase::kDecode);
      x_hat = model.decode(z);
    }
    PhaseTimer::Scope s(timer, Phase::kLoss);
    // Under autocast the output is float16/bfloat16; the loss is taken in the
    // master dtype.
    return batch_loss(x_hat.scalar_type() == xb.scalar_type() ? x_hat : x_hat.to(xb.scalar_type()), xb, o.loss);
  }

  void run(const at::Tensor& xb) {
    if (fused) {
      fused_loss_sum += fused->forward_backward(xb, &timer);  // books encode, decode, loss, backward
      PhaseTimer::Scope s(timer, Phase::kOptimizer);
      opt.step();  // the engine overwrote the gradients: no zero_grad needed
      return;
    }
    const at::Tensor loss = forward_loss(xb);
    {
      PhaseTimer::Scope s(timer, Phase::kBackward);
      // Gradients as fresh tensors, copied into the flat buffer at once: no fill and no
      // accumulation kernel per parameter, as backward() into zeroed gradients would take.
      opt.set_grads(torch::autograd::grad({scaler ? scaler->scale(loss) : loss}, params, /*grad_outputs=*/{},
                                          /*retain_graph=*/false, /*create_graph=*/false, /*allow_unused=*/true));
    }
    PhaseTimer::Scope s(timer, Phase::kOptimizer);
    if (scaler) {
      at::Tensor grads = opt.flat_grads();
      scaler->unscale_(grads);
      opt.step(scaler->found_inf());  // masked (or skipped) when a gradient was inf/NaN
      scaler->update();
    } else {
      opt.step();
    }
    loss_sum.add_(loss.detach());
  }
};

// One pass over x in batches; returns the plain mean of the batch losses.
double train_epoch(Step& step, CudaGraphStep* graph, at::Tensor& static_x, int& warmups, int64_t& replays,
                   const at::Tensor& x, Progress& progress, int64_t epoch) {
  const TrainOptions& o = step.o;
  const int64_t rows = x.size(0);
  const int64_t batches = (rows + o.batch_size - 1) / o.batch_size;
  step.loss_sum.zero_();
  step.fused_loss_sum = 0;
  for (int64_t b = 0; b < batches; ++b) {
    const int64_t start = b * o.batch_size;
    const int64_t n = std::min(o.batch_size, rows - start);
    if (o.on_step) o.on_step(false);
    step.timer.begin(Phase::kData);
    const at::Tensor xb = x.narrow(0, start, n);
    if (graph && n == o.batch_size) {
      static_x.copy_(xb, /*non_blocking=*/true);
      step.timer.end(Phase::kData);
      if (graph->captured()) {
        graph->replay();
        ++replays;
      } else if (warmups < kGraphWarmupSteps) {
        graph->warmup([&] { step.run(static_x); });
        ++warmups;
      } else {
        step.autocast_cache = false;
        graph->capture([&] { step.run(static_x); });
        step.autocast_cache = true;
        graph->replay();
        ++replays;
      }
    } else {
      step.timer.end(Phase::kData);
      step.run(xb);
    }
    if (o.on_step) o.on_step(true);
    progress.batch(epoch + 1, o.epochs, b, batches);
  }
  const double sum = step.fused ? step.fused_loss_sum : step.loss_sum.item<double>();
  return sum / static_cast<double>(batches);
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

TrainResult fit(AutoEncoder& model, const at::Tensor& x_train, const at::Tensor& x_val, const TrainOptions& o,
                const std::function<void(const EpochRecord&)>& on_epoch) {
  if (o.batch_size <= 0) throw InputError("batch_size must be positive (got " + std::to_string(o.batch_size) + ")");
  if (x_train.size(0) == 0) throw InputError("no training rows", "lower test_size");
  const PrecisionPolicy& policy = o.precision;
  if (model.dtype() != policy.param_dtype || x_train.scalar_type() != policy.data_dtype)
    throw InputError(std::string("precision ") + policy.name() + " trains " + dtype_name(policy.param_dtype) + " parameters on " +
                         dtype_name(policy.data_dtype) + " data; got " + dtype_name(model.dtype()) + " and " +
                         dtype_name(x_train.scalar_type()),
                     "convert the model and data with the policy's dtypes first");
  const c10::Device device = x_train.device();
  Tf32Guard tf32(policy.tf32);
  FlatAdam opt(model.parameters(), o.lr, 0.9, 0.999, 1e-8);
  std::unique_ptr<GradScaler> scaler;
  if (policy.loss_scaling) scaler = std::make_unique<GradScaler>(device, o.scaler);
  PhaseTimer timer(device, o.profile, o.profile_sync);
  Step step{model, opt, scaler.get(), o, timer, device.type(), true, torch::zeros({}, x_train.options())};
  step.params = model.parameters();
  std::unique_ptr<FusedDenseEngine> fused;
  if (o.engine == Engine::kAuto) throw std::logic_error("fit: resolve engine auto with choose_engine first");
  if (o.engine == Engine::kFused) {
    const int workers = o.engine_workers > 0 ? o.engine_workers : std::max(1, at::get_num_threads());
    fused = std::make_unique<FusedDenseEngine>(
        model, opt, o.loss, std::min<int64_t>(o.batch_size, x_train.size(0)), workers,
        policy.autocast ? policy.compute_dtype : at::ScalarType::Undefined);
    step.fused = fused.get();
  }
  std::unique_ptr<CudaGraphStep> graph;
  at::Tensor static_x;
  int warmups = 0;
  ReduceLROnPlateau plateau(o.lr, o.lr_scheduler_patience);
  EarlyStopping stopper(o.early_stopping_patience, o.min_delta);
  Progress progress(o.progress, o.progress_context);
  auto gen = at::make_generator<at::CPUGeneratorImpl>(o.seed + 1);
  TrainResult result;
  result.has_validation = x_val.defined() && x_val.size(0) > 0;
  result.train_rows = x_train.size(0);
  result.val_rows = result.has_validation ? x_val.size(0) : 0;
  result.precision = policy;
  result.loss_scaling = policy.loss_scaling;
  result.profiled = o.profile;
  result.engine = o.engine;
  result.engine_workers = fused ? fused->workers() : 0;
  result.optimizer_path = opt.path_name();
  if (device.is_cuda() && o.cuda_graphs && !fused) {
    if (o.profile)
      result.cuda_graph_note = "off while profiling: phases are timed on eager steps";
    else if (x_train.size(0) / o.batch_size <= kGraphWarmupSteps)
      result.cuda_graph_note = "off: too few full batches to warm up and capture";
    else {
      graph = std::make_unique<CudaGraphStep>(device);
      static_x = torch::empty({o.batch_size, x_train.size(1)}, x_train.options());
      result.cuda_graph = true;
    }
  }
  const auto t_fit = Clock::now();
  double lr = o.lr;
  for (int64_t e = 0; e < o.epochs; ++e) {
    const auto t0 = Clock::now();
    if (o.on_phase) o.on_phase("train", false);
    model.train();
    at::Tensor x = x_train;
    if (o.shuffle) {  // one gather per epoch; the permutation is drawn on the
                      // CPU for reproducibility
      PhaseTimer::Scope s(timer, Phase::kData);
      const at::Tensor perm = at::randperm(x_train.size(0), gen, at::kLong).to(x_train.device());
      x = x_train.index_select(0, perm);
    }
    EpochRecord rec;
    rec.epoch = e;
    rec.lr = lr;
    rec.train_loss = train_epoch(step, graph.get(), static_x, warmups, result.graph_replays, x, progress, e);
    if (scaler) {
      const GradScalerStats st = scaler->stats();
      rec.loss_scale = st.scale;
      rec.skipped_steps = st.skipped_steps;
    }
    if (o.on_phase) o.on_phase("train", true);
    rec.val_loss = rec.train_loss;
    if (result.has_validation || o.relative_error) {
      // The epoch's loss was read above, so the device is idle: this is the evaluation's own time.
      if (o.on_phase) o.on_phase("evaluation", false);
      const auto t_eval = Clock::now();
      {
        PhaseTimer::Scope s(timer, Phase::kEvaluation);
        const Evaluation ev = evaluate(model, result.has_validation ? x_val : x_train,
                                       {o.batch_size, o.loss, policy, o.eval_chunk_rows});
        if (result.has_validation) rec.val_loss = ev.loss;
        if (o.relative_error) rec.relative_error = ev.relative_error;
        result.eval_chunk_rows = ev.chunk_rows;
      }
      rec.eval_duration_s = seconds_since(t_eval);
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
    result.epoch_records.push_back(rec);
    EpochLine line{rec.number(),
                   o.epochs,
                   rec.train_loss,
                   rec.val_loss,
                   result.has_validation,
                   rec.lr,
                   rec.early_stopping_counter,
                   o.early_stopping_patience,
                   rec.lr_reduced,
                   rec.duration_s,
                   static_cast<double>(x_train.size(0)) / std::max(rec.duration_s, 1e-12)};
    line.final = stop || e + 1 == o.epochs;
    progress.epoch(line);
    if (on_epoch) on_epoch(rec);
    if (stop) {
      result.early_stopped = true;
      break;
    }
    if (o.stop_training && o.stop_training()) {
      result.stopped = true;
      break;
    }
  }
  result.duration_s = seconds_since(t_fit);
  if (scaler) result.scaler = scaler->stats();
  if (o.profile) result.phases = timer.totals();
  return result;
}

}  // namespace balerbench
