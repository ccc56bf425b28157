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
void adam_cpu(T* __restrict p, const T* __restrict g, T* __restrict m, T* __restrict v, int64_t n, double lr,
              double b1, double b2, double eps, int64_t step) {
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

FlatAdam::FlatAdam(const std::vector<at::Tensor>& params, double lr, double beta1, double beta2, double eps)
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
    // AccumulateGrad adds into a defined gradient in place, so backward writes here.
    p.mutable_grad() = grads_.narrow(0, offset, n).view(p.sizes());
    offset += n;
  }
}

void FlatAdam::zero_grad() { grads_.zero_(); }

void FlatAdam::step() {
  ++step_;
  if (params_.is_cpu() && params_.scalar_type() == at::kDouble) {
    adam_cpu(params_.data_ptr<double>(), grads_.data_ptr<double>(), exp_avg_.data_ptr<double>(),
             exp_avg_sq_.data_ptr<double>(), params_.numel(), lr_, beta1_, beta2_, eps_, step_);
    return;
  }
  if (params_.is_cpu() && params_.scalar_type() == at::kFloat) {
    adam_cpu(params_.data_ptr<float>(), grads_.data_ptr<float>(), exp_avg_.data_ptr<float>(),
             exp_avg_sq_.data_ptr<float>(), params_.numel(), lr_, beta1_, beta2_, eps_, step_);
    return;
  }
  // Other devices and dtypes: the same arithmetic as whole-buffer tensor ops.
  const double bc1 = 1 - std::pow(beta1_, static_cast<double>(step_));
  const double bc2 = 1 - std::pow(beta2_, static_cast<double>(step_));
  exp_avg_.mul_(beta1_).add_(grads_, 1 - beta1_);
  exp_avg_sq_.mul_(beta2_).addcmul_(grads_, grads_, 1 - beta2_);
  const at::Tensor denom = (exp_avg_sq_.sqrt() / std::sqrt(bc2)).add_(eps_);
  params_.addcdiv_(exp_avg_, denom, -lr_ / bc1);
}

}  // namespace balerbench
