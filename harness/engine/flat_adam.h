// flat_adam.h: Adam over one contiguous parameter buffer.
//
// The model's parameters are re-seated as views into one flat tensor and their
// gradients as views into another, so zero_grad is one fill and the update is
// one fused pass over all parameters (a vectorised loop on the CPU, a handful
// of tensor ops elsewhere) instead of ~10 dispatches per parameter tensor.
// The arithmetic is torch::optim::Adam's, in the same order (no weight decay,
// no amsgrad), so results agree with it to rounding.
//
// Three paths: a fused loop on CPU float64/float32 buffers (dense_loops.h, at the host's widest
// instruction-set level, which gives every level's bits); off the CPU, where
// the LibTorch has it (PyTorch 2.2 and later), ATen's fused Adam kernel
// (torch.optim.Adam(fused=True, capturable=True)) on the flat buffers, one
// kernel per step; and otherwise whole-buffer tensor ops. The last two keep the
// step count and learning rate as device tensors ("capturable"): no host value
// changes between steps, so the step can be captured in a CUDA graph, and a step
// skipped for an inf gradient (loss scaling) is masked on the device instead of
// being decided on the host.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

namespace balerbench {

struct DenseLoops;

class FlatAdam {
 public:
  // `params` must share one dtype and device; they are re-seated in place.
  // `capturable` forces the tensor-op path (always taken off the CPU).
  // `device_kernel`: allow ATen's fused Adam kernel off the CPU (false: the tensor-op path, for tests).
  FlatAdam(const std::vector<at::Tensor>& params, double lr, double beta1 = 0.9, double beta2 = 0.999,
           double eps = 1e-8, bool capturable = false, bool device_kernel = true);
  void zero_grad();
  // Writes `grads` (one per parameter, in the constructor's order; undefined = zero) into the flat
  // gradient buffer: one copy instead of a fill and an accumulation per parameter.
  void set_grads(const std::vector<at::Tensor>& grads);
  void step();
  // As step(), but leaves parameters, moments and the step count untouched
  // when found_inf (float, one element, on the parameters' device) is non-zero.
  void step(const at::Tensor& found_inf);
  // The CPU step in parts, for an engine that runs them on its own threads: begin_cpu_step() counts
  // the step, then step_cpu_part(begin, end) for disjoint ranges covering [0, numel) updates those
  // elements. Element by element the same arithmetic as step(). std::logic_error when capturable.
  // `loops`: the level's loops to run it with (the engine's); null: the host's widest.
  void begin_cpu_step();
  void step_cpu_part(int64_t begin, int64_t end, const DenseLoops* loops = nullptr);
  // The level whose loop step() runs on the CPU (the fused engine sets its own, so that `fused_isa`
  // holds for Adam too); the default is the host's widest. Every level gives the same bits.
  void set_cpu_loops(const DenseLoops& loops);
  const DenseLoops* cpu_loops() const { return loops_; }  // null when capturable
  // An engine that runs Adam in its own device kernel (the fused CUDA engine, engine/cuda/): counts
  // one step and returns the count (>= 1); the kernel updates flat_params() and the moments
  // (flat_exp_avg(), flat_exp_avg_sq()) with lr(), beta1(), beta2() and eps(), as step() would.
  // Not to be mixed with step() on one optimizer.
  int64_t count_external_step() { return ++external_steps_; }
  // Such an engine that counts its steps on the device (skipping some: loss scaling) says the count.
  void set_external_steps(int64_t steps) { external_steps_ = steps; }
  // Such an engine names what runs its Adam (a static string); path_name() then says it.
  void set_external_path(const char* name) { external_path_ = name; }
  const at::Tensor& flat_exp_avg() const { return exp_avg_; }
  const at::Tensor& flat_exp_avg_sq() const { return exp_avg_sq_; }
  double beta1() const { return beta1_; }
  double beta2() const { return beta2_; }
  double eps() const { return eps_; }
  void set_lr(double lr);
  double lr() const { return lr_; }
  bool capturable() const { return capturable_; }
  // True when steps run ATen's fused Adam kernel (off the CPU, PyTorch 2.2+).
  bool device_kernel() const { return fused_kernel_; }
  // Which path steps take: "cpu loop", "aten fused kernel" or "tensor ops", or the name an engine
  // that runs Adam itself gave (set_external_path).
  const char* path_name() const;
  int64_t steps() const;  // optimizer steps taken (skipped ones not counted);
                          // reads the device when capturable
  const at::Tensor& flat_params() const { return params_; }
  const at::Tensor& flat_grads() const { return grads_; }

 private:
  void step_cpu();
  void step_tensor(const at::Tensor* found_inf);
  void step_kernel(const at::Tensor* found_inf);

  at::Tensor params_, grads_, exp_avg_, exp_avg_sq_;
  double lr_, beta1_, beta2_, eps_;
  bool capturable_;
  int64_t step_ = 0;          // fused CPU path
  int64_t external_steps_ = 0;  // count_external_step()
  const char* external_path_ = nullptr;  // set_external_path()
  const DenseLoops* loops_ = nullptr;  // its loop: the host's widest level, or set_cpu_loops()'s
  // Capturable path: scalars on the device, float64 for float64 parameters, else float32 (step
  // counts exact to 2^24, PyTorch's choice too).
  at::Tensor step_t_, lr_t_;
  // Fused kernel: it reads a float32 step count and learning rate, whatever the parameters' dtype.
  bool fused_kernel_ = false;
  at::Tensor kernel_step_, kernel_lr_;
  // The flat buffers as equal pieces: the kernel gives each listed tensor at most one block per
  // 65,536 elements, so one 62k-element buffer would run on one block (measured 3x slower on an
  // H100 than PyTorch's per-parameter lists); 32 pieces are 32 blocks in one launch.
  std::vector<at::Tensor> piece_params_, piece_grads_, piece_m_, piece_v_, piece_steps_;
  std::vector<int64_t> numels_;  // per parameter, for set_grads
};

}  // namespace balerbench
