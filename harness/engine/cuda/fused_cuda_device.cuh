// fused_cuda_device.cuh: device helpers both kernel files use (fused_cuda_kernels.cu for fp32 on the
// SIMT cores, fused_cuda_mma.cu for the tensor-core modes): the activations and their gradients, a
// block's float64 sum in a fixed order, where a flat parameter lives, and Adam's update of one element.
// Included only by .cu files (and scripts/cuda_emulation/, which runs them on the host).
#pragma once

#include "harness/engine/cuda/fused_cuda_kernels.h"

namespace balerbench {
namespace fused_cuda {
namespace {

__device__ __forceinline__ float activate(float v, int act) {
  if (act == kActLeakyRelu) return v > 0.0f ? v : v * 0.01f;  // at::leaky_relu(v, 0.01)
  if (act == kActRelu) return v > 0.0f ? v : 0.0f;
  return v;
}

// g * activation'(at y), y the activation's output (autograd's rule: positive output, slope 1).
__device__ __forceinline__ float activation_grad(float g, float y, int act) {
  if (act == kActLeakyRelu) return y > 0.0f ? g : g * 0.01f;
  if (act == kActRelu) return y > 0.0f ? g : 0.0f;
  return g;
}

// The sum of v over the block (kTileThreads threads), in a fixed order; thread 0's return is the total.
// Ends with a barrier: every shared write before it is visible after it.
__device__ double block_sum(double v, double* warp_sums) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
  if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = v;
  __syncthreads();
  double total = 0.0;
  if (threadIdx.x == 0)
    for (int w = 0; w < kTileThreads / 32; ++w) total += warp_sums[w];
  return total;
}

// The layer whose weight holds flat element i, or -1 (a bias).
__device__ int weight_layer(const LayerTable& net, int64_t i) {
  for (int l = 0; l < net.layers; ++l)
    if (i >= net.weight_offset[l] && i < net.weight_offset[l] + static_cast<int64_t>(net.in[l]) * net.out[l])
      return l;
  return -1;
}

// torch::optim::Adam on element i (dense_loops.inc's order, no weight decay): m = m*b1 + g*(1-b1);
// v = v*b2 + (1-b2)*g*g; p += (-lr/bc1) * (m / (sqrt(v)/sqrt(bc2) + eps)). Returns the new parameter.
__device__ __forceinline__ float adam_update(const ReduceAdamArgs& a, int64_t i, float g, float neg_step,
                                             float bias_correction2_sqrt) {
  const float m = a.exp_avg[i] * a.beta1 + g * a.one_minus_beta1;
  const float v = a.exp_avg_sq[i] * a.beta2 + a.one_minus_beta2 * g * g;
  a.exp_avg[i] = m;
  a.exp_avg_sq[i] = v;
  const float denom = sqrtf(v) / bias_correction2_sqrt + a.eps;
  const float p = a.params[i] + neg_step * (m / denom);
  a.params[i] = p;
  return p;
}

}  // namespace
}  // namespace fused_cuda
}  // namespace balerbench
