// loss.cpp: see loss.h (and loss_kind.h, whose names are here).
#include "harness/engine/loss.h"

#include <ATen/ATen.h>

#include "common/error.h"

namespace balerbench {

LossKind parse_loss_kind(const std::string& name) {
  if (name == "baler_sum") return LossKind::kBalerSum;
  if (name == "mse_mean") return LossKind::kMseMean;
  throw InputError("unknown loss '" + name + "'", "baler_sum or mse_mean");
}

const char* loss_kind_name(LossKind kind) { return kind == LossKind::kMseMean ? "mse_mean" : "baler_sum"; }

at::Tensor batch_loss(const at::Tensor& x_hat, const at::Tensor& x, LossKind kind) {
  // One fused kernel each way (forward and backward) instead of three.
  if (kind == LossKind::kMseMean) return at::mse_loss(x_hat, x, at::Reduction::Mean);
  return at::mse_loss(x_hat, x, at::Reduction::Sum) / static_cast<double>(x.size(1));
}

}  // namespace balerbench
