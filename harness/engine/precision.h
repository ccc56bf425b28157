// precision.h: precision policies and dynamic loss scaling.
//
// A policy fixes the dtype of the master weights (and optimizer state), of the
// resident data, and what autocast does in the forward pass:
//   fp64              float64 everywhere (Baler's AE default)
//   fp32              float32 everywhere (Baler's CFD_dense_AE default)
//   tf32              float32 with TF32 matrix products (CUDA only)
//   amp_fp16          float32 master weights, forward autocast to float16,
//   dynamic loss scaling (CUDA only) amp_fp16_noscale  as amp_fp16 without loss
//   scaling (CUDA only) amp_bf16          float32 master weights, forward
//   autocast to bfloat16, no scaling (CPU and CUDA) auto              the
//   model's Baler dtype: fp64 or fp32
// LibTorch autocasts to bfloat16 only on the CPU, so the float16 modes and
// tf32 are refused there with a message that says what to use instead.
//
// GradScaler is torch.cuda.amp.GradScaler on tensor ops: the scale, growth
// tracker and inf flag live on the device, so scaling never waits on the host.
// On CUDA it uses ATen's fused kernels
// (_amp_foreach_non_finite_check_and_unscale_, _amp_update_scale_); elsewhere
// the same arithmetic as tensor ops, which is what the CPU tests exercise.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <nlohmann/json.hpp>

#include <string>

#include "harness/base/precision_mode.h"
#include "harness/engine/train_settings.h"  // GradScalerOptions

namespace balerbench {

struct PrecisionPolicy {
  Precision mode = Precision::kFp64;         // resolved: never kAuto
  at::ScalarType param_dtype = at::kDouble;  // master weights, gradients, optimizer state
  at::ScalarType data_dtype = at::kDouble;   // the data set on the device
  bool autocast = false;
  at::ScalarType compute_dtype = at::kDouble;  // what matrix products run in
  bool loss_scaling = false;
  bool tf32 = false;

  const char* name() const { return precision_name(mode); }
  nlohmann::json to_json() const;  // {name, param_dtype, data_dtype, compute_dtype, autocast,
                                   // loss_scaling, tf32}
};

// `model_dtype` is the model's Baler dtype (for kAuto). InputError for a mode the device cannot run.
PrecisionPolicy resolve_precision(Precision mode, at::ScalarType model_dtype, c10::Device device);

// "float64", "float32", "float16", "bfloat16".
std::string dtype_name(at::ScalarType t);

struct GradScalerStats {
  double init_scale = 0;
  double scale = 0;           // the scale the next step will use
  int64_t steps = 0;          // update() calls
  int64_t skipped_steps = 0;  // steps with an inf/NaN gradient (optimizer step
                              // skipped, scale backed off)
  int64_t growths = 0;        // times the scale grew
  nlohmann::json to_json() const;
};

class GradScaler {
 public:
  // `fused`: use ATen's fused AMP kernels (CUDA only); default: on CUDA
  // devices.
  explicit GradScaler(c10::Device device, GradScalerOptions options = {}, int fused = -1);

  // loss * scale, in float32 (the loss is upcast first, as PyTorch does for
  // float16 outputs).
  at::Tensor scale(const at::Tensor& loss) const;
  // Multiplies `grads` in place by 1/scale and records in found_inf() whether
  // any element was inf or NaN. Call once per step, before the optimizer.
  void unscale_(at::Tensor& grads);
  // 1.0 when the last unscale_ saw an inf/NaN gradient, else 0.0 (float32, on
  // the device).
  const at::Tensor& found_inf() const { return found_inf_; }
  // Backs off and resets the tracker on inf; grows after growth_interval clean
  // steps.
  void update();

  // The live scale tensor (float32, 1 element, on the device).
  const at::Tensor& scale_tensor() const { return scale_; }
  // For an engine that unscales and updates in its own device kernels (the fused CUDA engine's
  // amp_fp16): the state it updates as unscale_ and update would, and count_external_update() once
  // per step in place of update().
  const at::Tensor& growth_tracker_tensor() const { return growth_tracker_; }
  const at::Tensor& skipped_tensor() const { return skipped_; }
  const GradScalerOptions& options() const { return o_; }
  void count_external_update() { ++steps_; }
  bool fused() const { return fused_; }
  // Reads the counters from the device (a synchronisation; call at epoch ends).
  GradScalerStats stats() const;

 private:
  GradScalerOptions o_;
  bool fused_;
  at::Tensor scale_;           // float32 [1]
  at::Tensor growth_tracker_;  // int32 [1]: clean steps since the last change
  at::Tensor found_inf_;       // float32 [1]
  at::Tensor skipped_;         // float32 [1]: steps with inf (exact to 2^24)
  int64_t steps_ = 0;
};

class AutoEncoder;
// The policy of `mode` for `model` on `device` (resolve_precision), with the model moved to the
// device and converted to the policy's parameter dtype.
PrecisionPolicy apply_precision(Precision mode, AutoEncoder& model, c10::Device device);

}  // namespace balerbench
