// flat_adam.cpp: see flat_adam.h.
#include "harness/engine/flat_adam.h"

#include <ATen/ATen.h>

#include <cmath>
#include <stdexcept>

namespace balerbench {
namespace {

// torch::optim::Adam (1.13), per element:
//   m = m*b1 + g*(1-b1);  v = v*b2 + (1-b2)*g*g
//   denom = sqrt(v) / sqrt(bc2) + eps;  p = p + (-lr/bc1) * (m / denom)
template <typename T>
void adam_cpu(T* __restrict p, const T* __restrict g, T* __restrict m, T* __restrict v, int64_t n, double lr, double b1,
              double b2, double eps, int64_t step) {
  const T bc1 = static_cast<T>(1 - std::pow(b1, static_cast<double>(step)));
  const T bc2_sqrt = static_cast<T>(std::sqrt(1 - std::pow(b2, static_cast<double>(step))));
  const T tb1 = static_cast<T>(b1), tb2 = static_cast<T>(b2), one_b1 = static_cast<T>(1 - b1),
          one_b2 = static_cast<T>(1 - b2), teps = static_cast<T>(eps);
  const T neg_step = -static_cast<T>(lr) / bc1;
  for (int64_t i = 0; i < n; ++i) {
    const T gi = g[i];
    const T mi = m[i] * tb1 + gi * one_b1;
    const T vi = v[i] * tb2 + one_b2 * gi * gi;
    m[i] = mi;
    v[i] = vi;
    const T denom = std::sqrt(vi) / bc2_sqrt + teps;
    p[i] = p[i] + neg_step * (mi / denom);
  }
}

}  // namespace

FlatAdam::FlatAdam(const std::vector<at::Tensor>& params, double lr, double beta1, double beta2, double eps,
                   bool capturable)
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
    offset += n;
  }
  const bool fused_cpu =
      params_.is_cpu() && (params_.scalar_type() == at::kDouble || params_.scalar_type() == at::kFloat);
  capturable_ = capturable || !fused_cpu;
  if (capturable_) {
    // Step and learning rate on the device, in the parameters' dtype when that is float64, else in
    // float32 as PyTorch's capturable Adam keeps them: no float64 kernel in a float32 step.
    const auto book = at::TensorOptions()
                          .dtype(params_.scalar_type() == at::kDouble ? at::kDouble : at::kFloat)
                          .device(params_.device());
    step_t_ = at::zeros({}, book);
    lr_t_ = at::full({}, lr_, book);
  }
}

void FlatAdam::set_lr(double lr) {
  lr_ = lr;
  if (capturable_) lr_t_.fill_(lr);  // a device write, outside any captured step
}

int64_t FlatAdam::steps() const { return capturable_ ? std::llround(step_t_.item<double>()) : step_; }

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
  if (params_.scalar_type() == at::kDouble) {
    adam_cpu(params_.data_ptr<double>(), grads_.data_ptr<double>(), exp_avg_.data_ptr<double>(),
             exp_avg_sq_.data_ptr<double>(), params_.numel(), lr_, beta1_, beta2_, eps_, step_);
  } else {
    adam_cpu(params_.data_ptr<float>(), grads_.data_ptr<float>(), exp_avg_.data_ptr<float>(),
             exp_avg_sq_.data_ptr<float>(), params_.numel(), lr_, beta1_, beta2_, eps_, step_);
  }
}

void FlatAdam::step_tensor(const at::Tensor* found_inf) {
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
