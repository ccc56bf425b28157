// fused_kernels.h: the fused engine's activations by name, and the plain activation of its addmm
// path. The fp64 and fp32 loops are compiled per instruction-set level (dense_loops.h), amp_bf16's
// kernels per level too (bf16_kernels.h).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "harness/engine/dense_loops.h"
#include "harness/engine/loss.h"

namespace balerbench {
namespace fused_kernels {

inline std::optional<Activation> activation_of(const std::string& after) {
  if (after.empty()) return Activation::kNone;
  if (after == "leaky_relu(0.01)") return Activation::kLeakyRelu;
  if (after == "relu") return Activation::kRelu;
  return std::nullopt;
}

// The same arithmetic as at::leaky_relu_(x, 0.01) and at::relu, in place.
template <typename T>
void activate(T* __restrict v, int64_t n, Activation a) {
  if (a == Activation::kLeakyRelu) {
    const T slope = static_cast<T>(0.01);
    for (int64_t i = 0; i < n; ++i) v[i] = v[i] > 0 ? v[i] : v[i] * slope;
  } else if (a == Activation::kRelu) {
    for (int64_t i = 0; i < n; ++i) v[i] = v[i] > 0 ? v[i] : T(0);
  }
}

}  // namespace fused_kernels
}  // namespace balerbench
