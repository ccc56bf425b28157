// flat_adam.h: Adam over one contiguous parameter buffer.
//
// The model's parameters are re-seated as views into one flat tensor and their
// gradients as views into another, so zero_grad is one fill and the update is
// one fused pass over all parameters (a vectorised loop on the CPU, a handful
// of tensor ops elsewhere) instead of ~10 dispatches per parameter tensor.
// The arithmetic is torch::optim::Adam's, in the same order (no weight decay,
// no amsgrad), so results agree with it to rounding.
//
// Two paths: a fused loop on CPU float64/float32 buffers, and whole-buffer
// tensor ops with the step count and learning rate as device tensors
// ("capturable", as torch.optim.Adam(capturable=True)), which every other
// device and dtype takes: no host value changes between steps, so the step can
// be captured in a CUDA graph, and a step skipped for an inf gradient (loss
// scaling) is masked on the device instead of being decided on the host.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

namespace balerbench {

class FlatAdam {
 public:
  // `params` must share one dtype and device; they are re-seated in place.
  // `capturable` forces the tensor-op path (always taken off the CPU).
  FlatAdam(const std::vector<at::Tensor>& params, double lr, double beta1 = 0.9, double beta2 = 0.999,
           double eps = 1e-8, bool capturable = false);
  void zero_grad();
  void step();
  // As step(), but leaves parameters, moments and the step count untouched
  // when found_inf (float, one element, on the parameters' device) is non-zero.
  void step(const at::Tensor& found_inf);
  void set_lr(double lr);
  double lr() const { return lr_; }
  bool capturable() const { return capturable_; }
  int64_t steps() const;  // optimizer steps taken (skipped ones not counted);
                          // reads the device when capturable
  const at::Tensor& flat_params() const { return params_; }
  const at::Tensor& flat_grads() const { return grads_; }

 private:
  void step_cpu();
  void step_tensor(const at::Tensor* found_inf);

  at::Tensor params_, grads_, exp_avg_, exp_avg_sq_;
  double lr_, beta1_, beta2_, eps_;
  bool capturable_;
  int64_t step_ = 0;          // fused CPU path
  // Capturable path: scalars on the device, float64 for float64 parameters, else float32 (step
  // counts exact to 2^24, PyTorch's choice too).
  at::Tensor step_t_, lr_t_;
};

}  // namespace balerbench
