// libtorch_engine.cpp: the reference engine, LibTorch's autograd on every model, precision and
// device (engine.h).
//
// A step: the forward pass under autocast when the policy says so, the loss in the master dtype,
// the gradients from torch::autograd::grad as fresh tensors copied into FlatAdam's flat buffer at
// once (no zero_grad, no per-parameter accumulation), then amp_fp16's unscale and masked step, or
// a plain Adam step. The batch losses are summed on the device and read once per epoch.
//
// On CUDA, full batches replay one captured CUDA graph of the whole step after kGraphWarmupSteps
// eager warm-ups (cuda_graph.h); the short last batch and profiled runs go eagerly.
#include <torch/torch.h>

#include <memory>

#include "harness/engine/cuda_graph.h"
#include "harness/engine/engine_registry.h"
#include "harness/engine/flat_adam.h"
#include "harness/engine/torch_compat.h"
#include "harness/engine/trainer.h"

namespace balerbench {
namespace {

// Batches in the graph are replayed only after this many eager warm-up steps.
constexpr int kGraphWarmupSteps = 3;

class LibtorchEngine final : public Engine {
 public:
  // Inference only.
  LibtorchEngine(AutoEncoder& model, const PrecisionPolicy& policy)
      : model_(model), policy_(policy), device_type_(model.device().type()) {}

  LibtorchEngine(AutoEncoder& model, const TrainingSetup& setup)
      : model_(model), policy_(setup.options.precision), device_type_(setup.device.type()) {
    const TrainOptions& o = setup.options;
    train_.emplace(Training{setup.opt, setup.scaler, setup.timer, o.loss, o.batch_size, model.parameters(),
                            torch::zeros({}, at::TensorOptions().dtype(policy_.data_dtype).device(setup.device))});
    plan_cuda_graph(setup);
  }

  EngineKind kind() const override { return EngineKind::kLibtorch; }
  EngineStatus status() const override { return {0, graph_note_, graph_ != nullptr, replays_}; }

  void begin_epoch() override { training().loss_sum.zero_(); }
  double epoch_loss_sum() override { return training().loss_sum.item<double>(); }

  void step(const at::Tensor& xb) override {
    Training& t = training();
    if (!graph_ || xb.size(0) != t.batch_size) return run(xb);
    {
      PhaseTimer::Scope s(t.timer, Phase::kData);
      static_x_.copy_(xb, /*non_blocking=*/true);
    }
    if (graph_->captured()) {
      graph_->replay();
      ++replays_;
    } else if (warmups_ < kGraphWarmupSteps) {
      graph_->warmup([&] { run(static_x_); });
      ++warmups_;
    } else {
      autocast_cache_ = false;  // a cached cast would outlive the capture's memory pool
      graph_->capture([&] { run(static_x_); });
      autocast_cache_ = true;
      graph_->replay();
      ++replays_;
    }
  }

  at::Tensor encode(const at::Tensor& x) override {
    AutocastScope autocast(device_type_, policy_.compute_dtype, policy_.autocast);
    return model_.encode(x);
  }
  at::Tensor decode(const at::Tensor& z) override {
    AutocastScope autocast(device_type_, policy_.compute_dtype, policy_.autocast);
    return model_.decode(z);
  }

 private:
  struct Training {
    FlatAdam& opt;
    GradScaler* scaler;
    PhaseTimer& timer;
    LossKind loss;
    int64_t batch_size;
    std::vector<at::Tensor> params;  // the model's parameters, in FlatAdam's order
    at::Tensor loss_sum;             // on the device, in the data's dtype
  };

  Training& training() {
    if (!train_) throw std::logic_error("libtorch engine: made for inference, asked to train");
    return *train_;
  }

  void plan_cuda_graph(const TrainingSetup& setup) {
    const TrainOptions& o = setup.options;
    if (device_type_ != c10::kCUDA || !o.cuda_graphs) return;
    if (o.profile) {
      graph_note_ = "off while profiling: phases are timed on eager steps";
    } else if (setup.train_rows / o.batch_size <= kGraphWarmupSteps) {
      graph_note_ = "off: too few full batches to warm up and capture";
    } else {
      graph_ = std::make_unique<CudaGraphStep>(setup.device);
      static_x_ = torch::empty({o.batch_size, setup.features},
                               at::TensorOptions().dtype(policy_.data_dtype).device(setup.device));
    }
  }

  at::Tensor forward_loss(const at::Tensor& xb) {
    Training& t = *train_;
    at::Tensor x_hat;
    {
      AutocastScope autocast(device_type_, policy_.compute_dtype, policy_.autocast, autocast_cache_);
      at::Tensor z;
      {
        PhaseTimer::Scope s(t.timer, Phase::kEncode);
        z = model_.encode(xb);
      }
      PhaseTimer::Scope s(t.timer, Phase::kDecode);
      x_hat = model_.decode(z);
    }
    PhaseTimer::Scope s(t.timer, Phase::kLoss);
    // Under autocast the output is float16/bfloat16; the loss is taken in the master dtype.
    return batch_loss(x_hat.scalar_type() == xb.scalar_type() ? x_hat : x_hat.to(xb.scalar_type()), xb, t.loss);
  }

  void run(const at::Tensor& xb) {
    Training& t = *train_;
    const at::Tensor loss = forward_loss(xb);
    {
      PhaseTimer::Scope s(t.timer, Phase::kBackward);
      t.opt.set_grads(torch::autograd::grad({t.scaler ? t.scaler->scale(loss) : loss}, t.params,
                                            /*grad_outputs=*/{}, /*retain_graph=*/false, /*create_graph=*/false,
                                            /*allow_unused=*/true));
    }
    PhaseTimer::Scope s(t.timer, Phase::kOptimizer);
    if (t.scaler) {
      at::Tensor grads = t.opt.flat_grads();
      t.scaler->unscale_(grads);
      t.opt.step(t.scaler->found_inf());  // masked (or skipped) when a gradient was inf/NaN
      t.scaler->update();
    } else {
      t.opt.step();
    }
    t.loss_sum.add_(loss.detach());
  }

  AutoEncoder& model_;
  PrecisionPolicy policy_;
  c10::DeviceType device_type_;
  std::optional<Training> train_;
  bool autocast_cache_ = true;  // off while a CUDA graph is captured
  std::unique_ptr<CudaGraphStep> graph_;
  at::Tensor static_x_;  // the graph's input batch
  int warmups_ = 0;
  int64_t replays_ = 0;
  std::string graph_note_;  // why graphs were not used on CUDA, if they were not
};

std::string runs_everything(const AutoEncoder&, const PrecisionPolicy&, c10::Device) { return ""; }
std::string infers_everything(const PrecisionPolicy&, c10::Device) { return ""; }

}  // namespace

const EngineEntry& libtorch_engine_entry() {
  static const EngineEntry entry{
      "libtorch",
      "LibTorch autograd: every model, precision and device",
      runs_everything,
      runs_everything,
      infers_everything,
      [](AutoEncoder& model, const TrainingSetup& s) -> std::unique_ptr<Engine> {
        return std::make_unique<LibtorchEngine>(model, s);
      },
      [](AutoEncoder& model, const InferenceSetup& s) -> std::unique_ptr<Engine> {
        return std::make_unique<LibtorchEngine>(model, s.policy);
      }};
  return entry;
}

}  // namespace balerbench
