// fused_cuda_kernels.cu: see fused_cuda_kernels.h. CUDA toolkit only (no LibTorch), fp32, built for
// sm_80 and sm_90 (harness/CMakeLists.txt).
//
// The arithmetic per training step of Baler's AE (24-200-100-50-15-50-100-200-24) at batch 512:
// 61,100 multiply-adds per row forward, twice that backward (input and weight gradients): 188 MFLOP.
// Bytes: the batch (512 x 24 x 4 = 49 KB) is read once; weights (244 KB) are read from L2/L1 by
// every tile, forward (transposed copy) and backward; each tile writes its gradient row (244 KB) and
// reduce_adam reads them all back (tiles x 244 KB: 7.8 MB at 32 tiles, from L2) and reads and
// writes the parameters and both moments (4 x 244 KB).
#include "harness/engine/cuda/fused_cuda_kernels.h"

#include <cuda_runtime.h>

#include "harness/engine/cuda/fused_cuda_device.cuh"

namespace balerbench {
namespace fused_cuda {
namespace {

// Forward epilogue: the bias, then the activation (addmm's order: product, then bias).
struct BiasActivate {
  const float* bias;
  int act;
  __device__ float operator()(float acc, int, int j) const { return activate(acc + bias[j], act); }
};

// Input-gradient epilogue: times the derivative of the activation below, at its output y (rows, cols).
struct ActivationBackward {
  const float* y;
  int cols;
  int act;
  __device__ float operator()(float acc, int r, int j) const { return activation_grad(acc, y[r * cols + j], act); }
};

// C (rows, N) = epilogue(A (rows, K) . B (K, N)). A and C in shared memory (row strides K and N), B
// in global memory (row stride N; the weights, from L1/L2). Thread items: column j of
// kRowsPerThread rows, consecutive items consecutive columns, so a warp reads consecutive B
// elements (coalesced) and one A element per row (a broadcast). A short tile's last group reads its
// last row again (clamped) and writes only its own rows. 2 * rows * K * N flop.
template <typename Epilogue>
__device__ void block_matmul(const float* A, const float* __restrict__ B, float* C, int rows, int K, int N,
                             const Epilogue& epilogue) {
  const int groups = (rows + kRowsPerThread - 1) / kRowsPerThread;
  for (int item = threadIdx.x; item < groups * N; item += blockDim.x) {
    const int j = item % N;
    const int r0 = item / N * kRowsPerThread;
    const float* a[kRowsPerThread];
#pragma unroll
    for (int rr = 0; rr < kRowsPerThread; ++rr) a[rr] = A + min(r0 + rr, rows - 1) * K;
    float acc[kRowsPerThread] = {};
    for (int k = 0; k < K; ++k) {
      const float b = __ldg(B + static_cast<size_t>(k) * N + j);
#pragma unroll
      for (int rr = 0; rr < kRowsPerThread; ++rr) acc[rr] = fmaf(a[rr][k], b, acc[rr]);
    }
#pragma unroll
    for (int rr = 0; rr < kRowsPerThread; ++rr)
      if (r0 + rr < rows) C[(r0 + rr) * N + j] = epilogue(acc[rr], r0 + rr, j);
  }
}

// This tile's weight gradient dW (out, in) = g^T (out, rows) . a (rows, in), and its bias gradient
// db (out) = the column sums of g (rows, out); g and a in shared memory, dW and db this tile's row of
// the partials (global). Every element of dW and db is written, rows in order: 2 * rows * in * out flop.
__device__ void weight_gradients(const float* g, const float* a, int rows, int in, int out, float* dW, float* db) {
  for (int idx = threadIdx.x; idx < out * in; idx += blockDim.x) {
    const int j = idx / in, k = idx % in;
    float s = 0.0f;
    for (int r = 0; r < rows; ++r) s = fmaf(g[r * out + j], a[r * in + k], s);
    dW[idx] = s;
  }
  for (int j = threadIdx.x; j < out; j += blockDim.x) {
    float s = 0.0f;
    for (int r = 0; r < rows; ++r) s += g[r * out + j];
    db[j] = s;
  }
}

// Shared memory: every activation of the tile (act_row_offset[layers + 1] floats per row), then two
// gradient buffers of tile_rows x widest floats.
__global__ void __launch_bounds__(kTileThreads) tile_step_kernel(const LayerTable net, const int tile_rows,
                                                                  const TileStepArgs args) {
  extern __shared__ float smem[];
  __shared__ double warp_sums[kTileThreads / 32];
  const int first = blockIdx.x * tile_rows;
  const int rows = min(tile_rows, args.rows - first);  // >= 1: the grid has ceil(rows / tile_rows) blocks
  const int L = net.layers, F = net.n_features;
  float* acts = smem;
  float* g = smem + tile_rows * net.act_row_offset[L + 1];
  float* spare = g + tile_rows * net.widest;
  for (int i = threadIdx.x; i < rows * F; i += blockDim.x) acts[i] = args.x[static_cast<size_t>(first) * F + i];
  __syncthreads();
  for (int i = 0; i < L; ++i) {  // forward: act[i + 1] = activation(act[i] . W_i^T + b_i)
    block_matmul(acts + tile_rows * net.act_row_offset[i], args.weights_t + net.weight_offset[i],
                 acts + tile_rows * net.act_row_offset[i + 1], rows, net.in[i], net.out[i],
                 BiasActivate{args.params + net.bias_offset[i], net.act[i]});
    __syncthreads();
  }
  // The loss's gradient g = (norm * (x_hat - x)) * grad_output (mse_loss_backward's order), through
  // the last layer's activation if it has one; the squares summed in float64.
  const float* x_hat = acts + tile_rows * net.act_row_offset[L];
  double squares = 0.0;
  for (int i = threadIdx.x; i < rows * F; i += blockDim.x) {
    const float d = x_hat[i] - acts[i];
    squares += static_cast<double>(d) * static_cast<double>(d);
    g[i] = activation_grad((args.norm * d) * args.grad_output, x_hat[i], net.act[L - 1]);
  }
  const double total = block_sum(squares, warp_sums);
  if (threadIdx.x == 0) args.tile_sq_err[blockIdx.x] = total;
  float* partial = args.partials + static_cast<size_t>(blockIdx.x) * net.params;
  for (int i = L - 1; i >= 0; --i) {  // backward: g holds dLoss/d(layer i's pre-activation), (rows, out_i)
    const float* a_in = acts + tile_rows * net.act_row_offset[i];
    weight_gradients(g, a_in, rows, net.in[i], net.out[i], partial + net.weight_offset[i],
                     partial + net.bias_offset[i]);
    if (i > 0)  // g_in (rows, in_i) = (g . W_i) * activation'_{i-1}(a_in)
      block_matmul(g, args.params + net.weight_offset[i], spare, rows, net.out[i], net.in[i],
                   ActivationBackward{a_in, net.in[i], net.act[i - 1]});
    __syncthreads();
    float* t = g;
    g = spare;
    spare = t;
  }
}

// weights_t's element for flat weight element i of layer l: (out, in) -> (in, out).
__device__ void store_transposed(const LayerTable& net, int l, int64_t i, float value, float* weights_t) {
  const int64_t e = i - net.weight_offset[l];
  const int64_t j = e / net.in[l], k = e % net.in[l];
  weights_t[net.weight_offset[l] + k * net.out[l] + j] = value;
}

__global__ void __launch_bounds__(kAdamThreads) transpose_weights_kernel(const LayerTable net, const float* params,
                                                                          float* weights_t) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= net.params) return;
  const int l = weight_layer(net, i);
  if (l >= 0) store_transposed(net, l, i, params[i], weights_t);
}

// One thread per parameter: 2 * tiles + 10 flop, (tiles + 7) x 4 bytes.
__global__ void __launch_bounds__(kAdamThreads) reduce_adam_kernel(const LayerTable net, const int tiles,
                                                                    const ReduceAdamArgs a) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i == 0) {  // the batch loss, the tiles' squares in tile order
    double squares = 0.0;
    for (int t = 0; t < tiles; ++t) squares += a.tile_sq_err[t];
    *a.loss_sum += squares * a.batch_scale;
  }
  if (i >= net.params) return;
  float g = 0.0f;
  for (int t = 0; t < tiles; ++t) g += a.partials[static_cast<size_t>(t) * net.params + i];
  a.grads[i] = g;
  if (!a.adam) return;
  const float p = adam_update(a, i, g, a.neg_step, a.bias_correction2_sqrt);
  const int l = weight_layer(net, i);
  if (l >= 0) store_transposed(net, l, i, p, a.weights_t);
}

unsigned blocks_for(int64_t n, int threads) { return static_cast<unsigned>((n + threads - 1) / threads); }

}  // namespace

std::size_t tile_shared_bytes(const LayerTable& net, int tile_rows) {
  const std::size_t floats = static_cast<std::size_t>(tile_rows) *
                             (static_cast<std::size_t>(net.act_row_offset[net.layers + 1]) + 2u * net.widest);
  return floats * sizeof(float);
}

int prepare_tile_step(std::size_t bytes) {
  return static_cast<int>(
      cudaFuncSetAttribute(tile_step_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
}

int max_shared_bytes_per_block(int device, std::size_t* bytes) {
  int optin = 0;
  cudaError_t e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  if (e != cudaSuccess) return static_cast<int>(e);
  cudaFuncAttributes attr{};
  e = cudaFuncGetAttributes(&attr, tile_step_kernel);  // its static shared memory counts too
  if (e != cudaSuccess) return static_cast<int>(e);
  *bytes = static_cast<std::size_t>(optin) - attr.sharedSizeBytes;
  return 0;
}

int launch_transpose_weights(const LayerTable& net, const float* params, float* weights_t, void* stream) {
  transpose_weights_kernel<<<blocks_for(net.params, kAdamThreads), kAdamThreads, 0,
                             static_cast<cudaStream_t>(stream)>>>(net, params, weights_t);
  return static_cast<int>(cudaGetLastError());
}

int launch_tile_step(const LayerTable& net, int tile_rows, const TileStepArgs& args, void* stream) {
  tile_step_kernel<<<blocks_for(args.rows, tile_rows), kTileThreads, tile_shared_bytes(net, tile_rows),
                     static_cast<cudaStream_t>(stream)>>>(net, tile_rows, args);
  return static_cast<int>(cudaGetLastError());
}

int launch_reduce_adam(const LayerTable& net, int tiles, const ReduceAdamArgs& args, void* stream) {
  reduce_adam_kernel<<<blocks_for(net.params, kAdamThreads), kAdamThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      net, tiles, args);
  return static_cast<int>(cudaGetLastError());
}

const char* error_text(int code) { return cudaGetErrorString(static_cast<cudaError_t>(code)); }

}  // namespace fused_cuda
}  // namespace balerbench
