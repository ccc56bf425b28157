// flat_adam.cpp: see flat_adam.h.
#include "harness/engine/flat_adam.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>

#include "harness/engine/dense_loops.h"

namespace balerbench {
namespace {

// aten::_fused_adam_.tensor_lr (PyTorch 2.2+): the learning rate as a float32 tensor, so a CUDA
// graph replays the value the scheduler set last. Looked up by name, so a LibTorch without it
// (Debian's 1.13) builds and takes the tensor-op path.
using FusedAdamFn = void(at::TensorList, at::TensorList, at::TensorList, at::TensorList, at::TensorList,
                         at::TensorList, const at::Tensor&, double, double, double, double, bool, bool,
                         const c10::optional<at::Tensor>&, const c10::optional<at::Tensor>&);

const c10::TypedOperatorHandle<FusedAdamFn>* fused_adam_kernel() {
  static const std::optional<c10::TypedOperatorHandle<FusedAdamFn>> handle =
      []() -> std::optional<c10::TypedOperatorHandle<FusedAdamFn>> {
    const auto op = c10::Dispatcher::singleton().findSchema({"aten::_fused_adam_", "tensor_lr"});
    if (!op) return std::nullopt;
    try {
      return op->typed<FusedAdamFn>();
    } catch (const std::exception&) {  // another signature than the one above: use the tensor ops
      return std::nullopt;
    }
  }();
  return handle ? &*handle : nullptr;
}

}  // namespace

FlatAdam::FlatAdam(const std::vector<at::Tensor>& params, double lr, double beta1, double beta2, double eps,
                   bool capturable, bool device_kernel)
    : lr_(lr), beta1_(beta1), beta2_(beta2), eps_(eps) {
  if (params.empty()) throw std::invalid_argument("FlatAdam: no parameters");
  int64_t total = 0;
  for (const auto& p : params) {
    if (p.scalar_type() != params[0].scalar_type() || p.device() != params[0].device())
      throw std::invalid_argument("FlatAdam: parameters must share one dtype and device");
    total += p.numel();
  }
  const auto opts = params[0].options();
  params_ = at::empty({total}, opts);
  grads_ = at::zeros({total}, opts);
  exp_avg_ = at::zeros({total}, opts);
  exp_avg_sq_ = at::zeros({total}, opts);
  int64_t offset = 0;
  for (at::Tensor p : params) {  // a handle to the same Variable
    const int64_t n = p.numel();
    at::Tensor view = params_.narrow(0, offset, n).view(p.sizes());
    view.copy_(p.detach());
    p.set_data(view);
    // AccumulateGrad adds into a defined gradient in place, so backward writes
    // here.
    p.mutable_grad() = grads_.narrow(0, offset, n).view(p.sizes());
    numels_.push_back(n);
    offset += n;
  }
  const bool fused_cpu =
      params_.is_cpu() && (params_.scalar_type() == at::kDouble || params_.scalar_type() == at::kFloat);
  capturable_ = capturable || !fused_cpu;
  if (!capturable_) loops_ = &dense_loops(host_isa_level());
  if (capturable_) {
    // Step and learning rate on the device, in the parameters' dtype when that is float64, else in
    // float32 as PyTorch's capturable Adam keeps them: no float64 kernel in a float32 step.
    const auto book = at::TensorOptions()
                          .dtype(params_.scalar_type() == at::kDouble ? at::kDouble : at::kFloat)
                          .device(params_.device());
    step_t_ = at::zeros({}, book);
    lr_t_ = at::full({}, lr_, book);
  }
  fused_kernel_ = device_kernel && !params_.is_cpu() && fused_adam_kernel() != nullptr;
  if (fused_kernel_) {
    const auto f32 = at::TensorOptions().dtype(at::kFloat).device(params_.device());
    kernel_step_ = at::zeros({}, f32);
    kernel_lr_ = at::full({}, lr_, f32);
    // Pieces of at least 2048 elements, at most 32 of them: one launch (36 tensors at most per
    // launch of a 4-list fused kernel), and enough blocks to spread over the multiprocessors.
    constexpr int64_t kMaxPieces = 32, kMinPiece = 2048;
    const int64_t piece = std::max<int64_t>(kMinPiece, (total + kMaxPieces - 1) / kMaxPieces);
    for (int64_t start = 0; start < total; start += piece) {
      const int64_t n = std::min(piece, total - start);
      piece_params_.push_back(params_.narrow(0, start, n));
      piece_grads_.push_back(grads_.narrow(0, start, n));
      piece_m_.push_back(exp_avg_.narrow(0, start, n));
      piece_v_.push_back(exp_avg_sq_.narrow(0, start, n));
      piece_steps_.push_back(kernel_step_);  // one count, read by every piece
    }
  }
}

const char* FlatAdam::path_name() const {
  if (external_path_) return external_path_;
  if (!capturable_) return "cpu loop";
  return fused_kernel_ ? "aten fused kernel" : "tensor ops";
}

void FlatAdam::set_grads(const std::vector<at::Tensor>& grads) {
  if (grads.size() != numels_.size())
    throw std::invalid_argument("FlatAdam::set_grads: " + std::to_string(grads.size()) + " gradients for " +
                                std::to_string(numels_.size()) + " parameters");
  std::vector<at::Tensor> flat;
  flat.reserve(grads.size());
  for (size_t i = 0; i < grads.size(); ++i) {
    if (grads[i].defined() && grads[i].numel() != numels_[i])
      throw std::invalid_argument("FlatAdam::set_grads: gradient " + std::to_string(i) + " has " +
                                  std::to_string(grads[i].numel()) + " elements, its parameter " +
                                  std::to_string(numels_[i]));
    // A parameter the loss does not reach gets a zero gradient, as after zero_grad().
    flat.push_back(grads[i].defined() ? grads[i].reshape({-1}) : at::zeros({numels_[i]}, grads_.options()));
  }
  at::cat_out(grads_, flat, 0);
}

void FlatAdam::set_lr(double lr) {
  lr_ = lr;
  if (capturable_) lr_t_.fill_(lr);  // a device write, outside any captured step
  if (fused_kernel_) kernel_lr_.fill_(lr);
}

int64_t FlatAdam::steps() const {
  if (external_steps_ > 0) return external_steps_;
  if (fused_kernel_) return std::llround(kernel_step_.item<double>());
  return capturable_ ? std::llround(step_t_.item<double>()) : step_;
}

void FlatAdam::zero_grad() { grads_.zero_(); }

void FlatAdam::step() {
  if (capturable_)
    step_tensor(nullptr);
  else
    step_cpu();
}

void FlatAdam::step(const at::Tensor& found_inf) {
  if (capturable_) {
    step_tensor(&found_inf);
  } else if (found_inf.item<float>() == 0) {  // a CPU tensor: no device to wait for
    step_cpu();
  }
}

void FlatAdam::step_cpu() {
  ++step_;
  step_cpu_part(0, params_.numel(), loops_);
}

void FlatAdam::set_cpu_loops(const DenseLoops& loops) {
  if (capturable_) throw std::logic_error("FlatAdam: the CPU loops are for the CPU path only");
  loops_ = &loops;
}

void FlatAdam::begin_cpu_step() {
  if (capturable_) throw std::logic_error("FlatAdam: the step in parts runs on the CPU only");
  ++step_;
}

void FlatAdam::step_cpu_part(int64_t begin, int64_t end, const DenseLoops* loops) {
  if (capturable_) throw std::logic_error("FlatAdam: the step in parts runs on the CPU only");
  const int64_t n = end - begin;
  if (n <= 0) return;
  const DenseLoops& k = loops ? *loops : *loops_;
  const AdamHyper h{lr_, beta1_, beta2_, eps_, step_};
  if (params_.scalar_type() == at::kDouble) {
    k.f64.adam(params_.data_ptr<double>() + begin, grads_.data_ptr<double>() + begin,
               exp_avg_.data_ptr<double>() + begin, exp_avg_sq_.data_ptr<double>() + begin, n, h);
  } else {
    k.f32.adam(params_.data_ptr<float>() + begin, grads_.data_ptr<float>() + begin,
               exp_avg_.data_ptr<float>() + begin, exp_avg_sq_.data_ptr<float>() + begin, n, h);
  }
}

void FlatAdam::step_kernel(const at::Tensor* found_inf) {
  // As torch.optim.Adam(fused=True, capturable=True): count the step, run the kernel (which leaves
  // everything untouched when found_inf is non-zero), and take the skipped step back off the count.
  kernel_step_.add_(1);
  const c10::optional<at::Tensor> none, inf = found_inf ? c10::optional<at::Tensor>(*found_inf) : none;
  fused_adam_kernel()->call(piece_params_, piece_grads_, piece_m_, piece_v_, {}, piece_steps_, kernel_lr_, beta1_,
                            beta2_, /*weight_decay=*/0.0, eps_, /*amsgrad=*/false, /*maximize=*/false,
                            /*grad_scale=*/none, inf);
  if (found_inf) kernel_step_.sub_(found_inf->reshape({}));
}

void FlatAdam::step_tensor(const at::Tensor* found_inf) {
  if (fused_kernel_) {
    step_kernel(found_inf);
    return;
  }
  // The same arithmetic as adam_cpu, with step and lr read from the device.
  if (found_inf)
    step_t_.add_(1).sub_(found_inf->squeeze(0));  // +1 unless skipped (found_inf is 1 then)
  else
    step_t_.add_(1);
  const at::Tensor bc1 = 1 - at::pow(beta1_, step_t_);
  const at::Tensor bc2_sqrt = (1 - at::pow(beta2_, step_t_)).sqrt();
  const at::Tensor step_size = lr_t_ / bc1;
  if (!found_inf) {
    exp_avg_.mul_(beta1_).add_(grads_, 1 - beta1_);
    exp_avg_sq_.mul_(beta2_).addcmul_(grads_, grads_, 1 - beta2_);
    // p -= m / denom * step_size, as p += -1 * m / (denom / step_size): one kernel fewer.
    const at::Tensor denom = (exp_avg_sq_.sqrt() / bc2_sqrt).add_(eps_).div_(step_size);
    params_.addcdiv_(exp_avg_, denom, -1);
    return;
  }
  // Masked: compute the update, keep the old state where the step is skipped (a
  // NaN gradient makes the new values NaN, so a multiply-by-zero mask would not
  // do).
  const at::Tensor skip = found_inf->gt(0);
  const at::Tensor m = exp_avg_ * beta1_ + grads_ * (1 - beta1_);
  const at::Tensor v = exp_avg_sq_ * beta2_ + grads_ * grads_ * (1 - beta2_);
  const at::Tensor p = params_ - m / ((v.sqrt() / bc2_sqrt) + eps_) * step_size;
  exp_avg_.copy_(at::where(skip, exp_avg_, m));
  exp_avg_sq_.copy_(at::where(skip, exp_avg_sq_, v));
  params_.copy_(at::where(skip, params_, p));
}

}  // namespace balerbench
