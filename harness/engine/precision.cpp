// precision.cpp: see precision.h.
#include "harness/engine/precision.h"

#include <ATen/ATen.h>

#include <cmath>

#include "common/error.h"
#include "models/autoencoder.h"

namespace balerbench {

std::string dtype_name(at::ScalarType t) {
  switch (t) {
    case at::kDouble:
      return "float64";
    case at::kFloat:
      return "float32";
    case at::kHalf:
      return "float16";
    case at::kBFloat16:
      return "bfloat16";
    default:
      return c10::toString(t);
  }
}

nlohmann::json PrecisionPolicy::to_json() const {
  return {{"name", name()},
          {"param_dtype", dtype_name(param_dtype)},
          {"data_dtype", dtype_name(data_dtype)},
          {"compute_dtype", dtype_name(compute_dtype)},
          {"autocast", autocast},
          {"loss_scaling", loss_scaling},
          {"tf32", tf32}};
}

PrecisionPolicy resolve_precision(Precision mode, at::ScalarType model_dtype, c10::Device device) {
  PrecisionPolicy p;
  p.mode = mode;
  if (mode == Precision::kAuto) p.mode = model_dtype == at::kFloat ? Precision::kFp32 : Precision::kFp64;
  const bool cuda = device.is_cuda();
  auto full = [&p](at::ScalarType t) { p.param_dtype = p.data_dtype = p.compute_dtype = t; };
  auto amp = [&p](at::ScalarType t) {
    p.param_dtype = p.data_dtype = at::kFloat;  // float32 master weights and data; autocast casts per op
    p.compute_dtype = t;
    p.autocast = true;
  };
  switch (p.mode) {
    case Precision::kAuto:  // resolved above
    case Precision::kFp64:
      full(at::kDouble);
      break;
    case Precision::kFp32:
      full(at::kFloat);
      break;
    case Precision::kTf32:
      if (!cuda)
        throw InputError("precision 'tf32' needs a CUDA device: TF32 is a mode of NVIDIA tensor cores",
                         "use fp32 on the CPU, or --set device=cuda");
      full(at::kFloat);
      p.tf32 = true;
      break;
    case Precision::kAmpFp16:
    case Precision::kAmpFp16NoScale:
      if (!cuda)
        throw InputError(std::string("precision '") + p.name() +
                             "' needs a CUDA device: LibTorch autocasts to bfloat16 only on the CPU",
                         "use amp_bf16 on the CPU, or --set device=cuda");
      amp(at::kHalf);
      p.loss_scaling = p.mode == Precision::kAmpFp16;
      break;
    case Precision::kAmpBf16:
      amp(at::kBFloat16);
      break;
  }
  return p;
}

nlohmann::json GradScalerStats::to_json() const {
  return {{"init_scale", init_scale},
          {"final_scale", scale},
          {"steps", steps},
          {"skipped_steps", skipped_steps},
          {"growths", growths}};
}

GradScaler::GradScaler(c10::Device device, GradScalerOptions options, int fused) : o_(options) {
  if (!(o_.init_scale > 0) || !(o_.growth_factor > 1) || !(o_.backoff_factor > 0 && o_.backoff_factor < 1) ||
      o_.growth_interval < 1)
    throw InputError(
        "GradScaler: init_scale > 0, growth_factor > 1, 0 < "
        "backoff_factor < 1 and growth_interval >= 1");
  fused_ = fused < 0 ? device.is_cuda() : fused != 0;
  if (fused_ && !device.is_cuda()) throw InputError("GradScaler: the fused AMP kernels run on CUDA only");
  const auto f32 = at::TensorOptions().dtype(at::kFloat).device(device);
  scale_ = at::full({1}, o_.init_scale, f32);
  growth_tracker_ = at::zeros({1}, f32.dtype(at::kInt));
  found_inf_ = at::zeros({1}, f32);
  skipped_ = at::zeros({1}, f32);  // float32 counts are exact up to 2^24 steps
}

at::Tensor GradScaler::scale(const at::Tensor& loss) const { return loss.to(at::kFloat) * scale_; }

void GradScaler::unscale_(at::Tensor& grads) {
  // PyTorch's GradScaler takes the reciprocal in float64 and rounds it: three kernels, two of them
  // float64, every step. The float32 reciprocal is correctly rounded too, and exact for the
  // power-of-two scales that the default factors keep.
  const at::Tensor inv_scale = scale_.reciprocal();
  found_inf_.zero_();
  if (fused_) {
    std::vector<at::Tensor> list{grads};
    at::_amp_foreach_non_finite_check_and_unscale_(list, found_inf_, inv_scale);
    return;
  }
  // Same semantics as the fused kernel: flag any inf/NaN, multiply by 1/scale
  // in place.
  found_inf_.copy_(at::logical_not(at::isfinite(grads).all()).to(at::kFloat).reshape({1}));
  grads.mul_(inv_scale.to(grads.scalar_type()));
}

void GradScaler::update() {
  ++steps_;
  // aten/src/ATen/native/cuda/AmpKernels.cu (amp_update_scale_cuda_kernel):
  //   inf:    scale *= backoff; tracker = 0
  //   clean:  tracker + 1 == interval ? (scale *= growth if that stays finite;
  //   tracker = 0) : tracker += 1
  // One kernel of bookkeeping per step (the skipped count); growths are counted from the scale in
  // stats(), so the step launches no more than PyTorch's GradScaler does.
  skipped_.add_(found_inf_);
  if (fused_) {
    at::_amp_update_scale_(scale_, growth_tracker_, found_inf_, o_.growth_factor, o_.backoff_factor,
                           o_.growth_interval);
    return;
  }
  const at::Tensor inf = found_inf_.gt(0);  // bool [1]
  const at::Tensor successful = growth_tracker_ + 1;
  const at::Tensor grow = at::logical_and(at::logical_not(inf), successful.ge(o_.growth_interval));
  const at::Tensor grown = scale_ * o_.growth_factor;
  const at::Tensor grown_ok = at::logical_and(grow, at::isfinite(grown));
  scale_.copy_(at::where(inf, scale_ * o_.backoff_factor, at::where(grown_ok, grown, scale_)));
  growth_tracker_.copy_(at::where(at::logical_or(inf, grow), at::zeros_like(successful), successful));
}

GradScalerStats GradScaler::stats() const {
  GradScalerStats s;
  s.init_scale = o_.init_scale;
  s.scale = scale_.item<double>();
  s.steps = steps_;
  s.skipped_steps = static_cast<int64_t>(skipped_.item<float>());
  // scale = init x growth^growths x backoff^skipped: every skipped step backs off once, and a growth
  // that would overflow is not made. Exact for the default factors (powers of two).
  const double logs = std::log(s.scale / o_.init_scale) -
                      static_cast<double>(s.skipped_steps) * std::log(o_.backoff_factor);
  s.growths = s.scale > 0 && std::isfinite(logs) ? std::llround(logs / std::log(o_.growth_factor)) : 0;
  return s;
}

PrecisionPolicy apply_precision(Precision mode, AutoEncoder& model, c10::Device device) {
  PrecisionPolicy p = resolve_precision(mode, model.baler_dtype(), device);
  model.to(device, p.param_dtype);
  return p;
}

}  // namespace balerbench
