// loss_kind.h: which of Baler's two training losses a run trains with, as one enum and its names
// (the losses themselves: loss.h). Without LibTorch, so that the run config can hold the choice.
//   baler_sum  Baler HEAD's loss (the default)
//   mse_mean   Baler v1.0.0's and its paper's
#pragma once

#include <string>

namespace balerbench {

enum class LossKind { kBalerSum, kMseMean };

// "baler_sum" or "mse_mean"; InputError otherwise.
LossKind parse_loss_kind(const std::string& name);
// The run config's name of `kind`: parse_loss_kind(loss_kind_name(k)) == k.
const char* loss_kind_name(LossKind kind);

}  // namespace balerbench
