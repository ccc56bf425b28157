// flat_adam.h: Adam over one contiguous parameter buffer.
//
// The model's parameters are re-seated as views into one flat tensor and their
// gradients as views into another, so zero_grad is one fill and the update is
// one fused pass over all parameters (a vectorised loop on the CPU, a handful
// of tensor ops elsewhere) instead of ~10 dispatches per parameter tensor.
// The arithmetic is torch::optim::Adam's, in the same order (no weight decay,
// no amsgrad), so results agree with it to rounding.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

namespace balerbench {

class FlatAdam {
 public:
  // `params` must share one dtype and device; they are re-seated in place.
  FlatAdam(const std::vector<at::Tensor>& params, double lr, double beta1 = 0.9, double beta2 = 0.999,
           double eps = 1e-8);
  void zero_grad();
  void step();
  void set_lr(double lr) { lr_ = lr; }
  double lr() const { return lr_; }
  int64_t steps() const { return step_; }
  const at::Tensor& flat_params() const { return params_; }
  const at::Tensor& flat_grads() const { return grads_; }

 private:
  at::Tensor params_, grads_, exp_avg_, exp_avg_sq_;
  double lr_, beta1_, beta2_, eps_;
  int64_t step_ = 0;
};

}  // namespace balerbench
