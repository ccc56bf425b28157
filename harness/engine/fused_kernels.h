// fused_kernels.h: the fused engine's bfloat16 loops for amp_bf16 (the activation, the loss with its
// gradient, the activation's derivative with the bias gradient), and the plain activation of its
// addmm path. The fp64 and fp32 loops are compiled per instruction-set level (dense_loops.h). Each
// says its shapes; none allocates. Included by fused_engine.cpp only, which compiles them with its
// own optimisation flags (harness/CMakeLists.txt).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "harness/engine/fused_engine.h"
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

using BF16 = c10::BFloat16;

// bfloat16 <-> float as c10::BFloat16 converts (round to nearest even, NaN kept as a quiet NaN),
// written on the bits so that the loops below vectorise.
inline float widen(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
inline uint16_t narrow_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  const uint16_t rounded = static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
  return f != f ? static_cast<uint16_t>(0x7FC0) : rounded;
}
inline uint16_t* bits(BF16* p) { return reinterpret_cast<uint16_t*>(p); }
inline const uint16_t* bits(const BF16* p) { return reinterpret_cast<const uint16_t*>(p); }

// amp_bf16's loops, each the float arithmetic of LibTorch's bfloat16 CPU kernel, rounded to
// bfloat16 where that kernel stores bfloat16.
inline void activate_bf16(BF16* data, int64_t n, Activation a) {
  uint16_t* __restrict v = bits(data);
  if (a == Activation::kLeakyRelu) {
    for (int64_t i = 0; i < n; ++i) {
      const float f = widen(v[i]);
      v[i] = f > 0 ? v[i] : narrow_bf16(f * 0.01f);
    }
  } else if (a == Activation::kRelu) {
    for (int64_t i = 0; i < n; ++i) v[i] = widen(v[i]) > 0 ? v[i] : static_cast<uint16_t>(0);
  }
}

// The bias gradient as autograd takes it under autocast: the column sums of the bfloat16 gradient,
// accumulated in float, rounded to bfloat16, then widened to the float32 master gradient.
inline void store_bias_bf16(const float* sums, int64_t cols, float* db) {
  for (int64_t c = 0; c < cols; ++c) db[c] = widen(narrow_bf16(sums[c]));
}

inline void activation_backward_and_bias_bf16(BF16* g_data, const BF16* y_data, int64_t rows, int64_t cols, Activation a,
                                       float* __restrict sums, float* __restrict db) {
  uint16_t* __restrict g = bits(g_data);
  const uint16_t* __restrict y = bits(y_data);
  std::fill(sums, sums + cols, 0.0f);
  const float slope = a == Activation::kLeakyRelu ? 0.01f : 0.0f;
  for (int64_t r = 0; r < rows; ++r) {
    uint16_t* __restrict gr = g + r * cols;
    const uint16_t* __restrict yr = y + r * cols;
    if (a != Activation::kNone)
      for (int64_t c = 0; c < cols; ++c) {
        const float gf = widen(gr[c]);
        gr[c] = widen(yr[c]) > 0 ? gr[c] : narrow_bf16(gf * slope);
      }
    for (int64_t c = 0; c < cols; ++c) sums[c] += widen(gr[c]);
  }
  store_bias_bf16(sums, cols, db);
}

// The loss in float32 on the widened bfloat16 output, its gradient rounded to bfloat16 for the
// backward pass (the cast's backward), and the output layer's bias gradient.
inline double loss_backward_bf16(const BF16* x_hat_data, const float* __restrict x, BF16* g_data, int64_t rows, int64_t cols,
                          float norm, float grad_output, float* __restrict sums, float* __restrict db) {
  const uint16_t* __restrict x_hat = bits(x_hat_data);
  uint16_t* __restrict g = bits(g_data);
  std::fill(sums, sums + cols, 0.0f);
  double sum = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const uint16_t* xh = x_hat + r * cols;
    const float* xr = x + r * cols;
    uint16_t* gr = g + r * cols;
    for (int64_t c = 0; c < cols; ++c) {
      const float d = widen(xh[c]) - xr[c];
      sum += static_cast<double>(d) * static_cast<double>(d);
      gr[c] = narrow_bf16((norm * d) * grad_output);
      sums[c] += widen(gr[c]);
    }
  }
  store_bias_bf16(sums, cols, db);
  return sum;
}

}  // namespace fused_kernels
}  // namespace balerbench
