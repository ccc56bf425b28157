// loss.h: Baler's two training losses, as every engine computes them.
//   baler_sum  sum((x_hat - x)^2) / n_features per batch (Baler HEAD's mse_sum_loss_l1, validate=True)
//   mse_mean   mean((x_hat - x)^2) per batch (Baler v1.0.0 and its paper)
// The epoch's loss is the plain mean of its batch losses (trainer.h).
#pragma once

#include <ATen/core/Tensor.h>

#include "harness/engine/loss_kind.h"

namespace balerbench {

// Per-batch loss of x_hat against x, both (rows, n_features) in one dtype.
at::Tensor batch_loss(const at::Tensor& x_hat, const at::Tensor& x, LossKind kind);

}  // namespace balerbench
