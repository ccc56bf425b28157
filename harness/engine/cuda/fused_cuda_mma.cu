// fused_cuda_mma.cu: the fused CUDA engine's tensor-core modes (fused_cuda_kernels.h: MmaMode), tf32,
// bf16 and fp16, built for sm_80 and sm_90. The step has the fp32 step's shape (fused_cuda_kernels.cu):
// a block per tile of rows, the tile's activations in shared memory through every layer forward and
// backward, each tile's gradient to its own row of a buffer, then one thread per parameter sums the
// tiles and runs Adam. The products run on warp MMA (wmma, 16 x 16 blocks, float32 accumulators):
//   forward    act[i + 1] (16 x out) = act[i] (16 x in) . W_i^T, bias and activation in the epilogue
//   weight     dW_i (out x in) = g^T (out x 16) . act[i] (16 x in), stored straight to the tile's row
//   input      g_in (16 x in) = g (16 x out) . W_i, the activation's derivative in the epilogue
// Autocast's roundings are kept: the input is cast to the mode's type, each product's output (with
// its bias) rounded to it, the activation computed in float32 and rounded, the loss in float32 on
// the output cast back, the loss's gradient and every activation gradient rounded to the mode's type,
// the weights' gradient rounded once over the batch (reduce_mma) and then taken as float32. tf32
// keeps float32 storage and rounds the products' inputs to tf32 only (wmma's rule), as
// allow_tf32 does. Widths are padded to 16 with zeros (fill_mma_layout); a short tile's rows past
// the batch are zero at every layer with a zero gradient, so they add nothing.
#include "harness/engine/cuda/fused_cuda_kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <type_traits>

#include "harness/engine/cuda/fused_cuda_device.cuh"

namespace balerbench {
namespace fused_cuda {
namespace {

namespace wmma = nvcuda::wmma;

// What a mode stores (activations, gradients, the weights' copy), what wmma multiplies, and its k.
template <int Mode>
struct Mma;
template <>
struct Mma<kMmaFp16> {
  using Stored = __half;
  using Input = __half;
  static constexpr int K = 16;
  __device__ static Stored store(float v) { return __float2half_rn(v); }
  __device__ static float load(Stored v) { return __half2float(v); }
};
template <>
struct Mma<kMmaBf16> {
  using Stored = __nv_bfloat16;
  using Input = __nv_bfloat16;
  static constexpr int K = 16;
  __device__ static Stored store(float v) { return __float2bfloat16_rn(v); }
  __device__ static float load(Stored v) { return __bfloat162float(v); }
};
template <>
struct Mma<kMmaTf32> {
  using Stored = float;
  using Input = wmma::precision::tf32;
  static constexpr int K = 8;
  __device__ static Stored store(float v) { return v; }
  __device__ static float load(Stored v) { return v; }
};

template <int Mode, typename Use, typename Layout>
using Fragment = wmma::fragment<Use, 16, 16, Mma<Mode>::K, typename Mma<Mode>::Input, Layout>;
template <int Mode>
using Accumulator = wmma::fragment<wmma::accumulator, 16, 16, Mma<Mode>::K, float>;

// acc += A (16 x K) . B (K x 16), k-blocks of Mma<Mode>::K: A's next block a_step elements on (1 for a
// row-major A, its ld for a column-major one), B's b_step (its ld for a row-major B, 1 for column-major).
// tf32's inputs are float32 in memory, rounded to tf32 after the load (wmma's rule).
template <int Mode, typename LayoutA, typename LayoutB>
__device__ void warp_product(Accumulator<Mode>& acc, const typename Mma<Mode>::Stored* a, int lda, int a_step,
                             const typename Mma<Mode>::Stored* b, int ldb, int b_step, int K) {
  Fragment<Mode, wmma::matrix_a, LayoutA> fa;
  Fragment<Mode, wmma::matrix_b, LayoutB> fb;
  for (int k = 0; k < K; k += Mma<Mode>::K) {
    wmma::load_matrix_sync(fa, a + k * a_step, lda);
    wmma::load_matrix_sync(fb, b + k * b_step, ldb);
    if constexpr (Mode == kMmaTf32) {
      for (int t = 0; t < fa.num_elements; ++t) fa.x[t] = wmma::__float_to_tf32(fa.x[t]);
      for (int t = 0; t < fb.num_elements; ++t) fb.x[t] = wmma::__float_to_tf32(fb.x[t]);
    }
    wmma::mma_sync(acc, fa, fb, acc);
  }
}

// The warp's 16 x 16 result through its scratch (256 floats): f(row, column, value) for each element,
// 8 per lane. The scratch is free again on return.
template <int Mode, typename F>
__device__ void for_each_result(const Accumulator<Mode>& acc, float* scratch, const F& f) {
  wmma::store_matrix_sync(scratch, acc, 16, wmma::mem_row_major);
  __syncwarp();
  for (int e = threadIdx.x & 31; e < 256; e += 32) f(e >> 4, e & 15, scratch[e]);
  __syncwarp();
}

// Where flat parameter i sits in the padded layout (every flat element is a chain layer's weight or bias).
__device__ int64_t padded_index(const LayerTable& net, int64_t i) {
  for (int l = 0; l < net.layers; ++l) {
    const int64_t w = i - net.weight_offset[l];
    if (w >= 0 && w < static_cast<int64_t>(net.in[l]) * net.out[l])
      return net.pad_weight_offset[l] + w / net.in[l] * net.pad_in[l] + w % net.in[l];
    const int64_t b = i - net.bias_offset[l];
    if (b >= 0 && b < net.out[l]) return net.pad_bias_offset[l] + b;
  }
  return 0;  // not reached: seat() checked that every layer's weight and bias is in the flat buffer
}

// The tile's forward pass: activation i + 1 = activation(round(act[i] . W_i^T + b_i)), rounded.
// Rows past the batch (a short tile) are written as 0 at every layer, so that nothing they compute
// can reach the tile's weight gradient (0 x inf would be NaN).
template <int Mode>
__device__ void mma_forward(const LayerTable& net, int rows, typename Mma<Mode>::Stored* acts,
                            const typename Mma<Mode>::Stored* ws, float* scratch) {
  using T = Mma<Mode>;
  const int warp = threadIdx.x >> 5, warps = kTileThreads / 32;
  for (int i = 0; i < net.layers; ++i) {
    const typename T::Stored* in = acts + kMmaTileRows * net.pad_act_offset[i];
    typename T::Stored* out = acts + kMmaTileRows * net.pad_act_offset[i + 1];
    const typename T::Stored* w = ws + net.pad_weight_offset[i];
    const typename T::Stored* bias = ws + net.pad_bias_offset[i];
    const int pin = net.pad_in[i], pout = net.pad_out[i], n_out = net.out[i], act = net.act[i];
    for (int nt = warp; nt < pout / 16; nt += warps) {
      Accumulator<Mode> acc;
      wmma::fill_fragment(acc, 0.0f);
      // W_i^T's (k, n) is w[n * pin + k]: column-major, the next k-block one element on.
      warp_product<Mode, wmma::row_major, wmma::col_major>(acc, in, pin, 1, w + nt * 16 * pin, pin, 1, pin);
      for_each_result<Mode>(acc, scratch, [&](int r, int c, float v) {
        const int j = nt * 16 + c;
        out[r * pout + j] =
            j < n_out && r < rows ? T::store(activate(T::load(T::store(v + T::load(bias[j]))), act)) : T::store(0.0f);
      });
    }
    __syncthreads();
  }
}

// The tile's backward pass from g = dLoss/d(last pre-activation), (16 x pad_out): each layer's weight
// gradient (stored to `partial`, the tile's row) and bias gradient, and the gradient below it.
template <int Mode>
__device__ void mma_backward(const LayerTable& net, const typename Mma<Mode>::Stored* acts, typename Mma<Mode>::Stored* g,
                             typename Mma<Mode>::Stored* spare, const typename Mma<Mode>::Stored* ws, float* partial,
                             float* scratch) {
  using T = Mma<Mode>;
  const int warp = threadIdx.x >> 5, warps = kTileThreads / 32;
  for (int i = net.layers - 1; i >= 0; --i) {
    const typename T::Stored* a_in = acts + kMmaTileRows * net.pad_act_offset[i];
    const int pin = net.pad_in[i], pout = net.pad_out[i], blocks_in = pin / 16;
    for (int item = warp; item < pout / 16 * blocks_in; item += warps) {  // dW = g^T . a_in
      const int mt = item / blocks_in, nt = item % blocks_in;
      Accumulator<Mode> acc;
      wmma::fill_fragment(acc, 0.0f);
      // g^T's (m, k) is g[k * pout + m]: column-major, the next k-block pout elements on.
      warp_product<Mode, wmma::col_major, wmma::row_major>(acc, g + mt * 16, pout, pout, a_in + nt * 16, pin, pin,
                                                           kMmaTileRows);
      wmma::store_matrix_sync(partial + net.pad_weight_offset[i] + static_cast<int64_t>(mt) * 16 * pin + nt * 16, acc, pin,
                              wmma::mem_row_major);
    }
    for (int j = threadIdx.x; j < pout; j += blockDim.x) {  // db: the column sums of g
      float s = 0.0f;
      for (int r = 0; r < kMmaTileRows; ++r) s += T::load(g[r * pout + j]);
      partial[net.pad_bias_offset[i] + j] = s;
    }
    if (i > 0) {  // g_in = round(g . W_i), times the derivative of the activation below
      const typename T::Stored* w = ws + net.pad_weight_offset[i];
      const int n_in = net.in[i], act = net.act[i - 1];
      for (int nt = warp; nt < blocks_in; nt += warps) {
        Accumulator<Mode> acc;
        wmma::fill_fragment(acc, 0.0f);
        // W_i's (k, n) is w[k * pin + n]: row-major, the next k-block 16 rows on.
        warp_product<Mode, wmma::row_major, wmma::row_major>(acc, g, pout, 1, w + nt * 16, pin, pin, pout);
        for_each_result<Mode>(acc, scratch, [&](int r, int c, float v) {
          const int k = nt * 16 + c;
          spare[r * pin + k] =
              k < n_in ? T::store(activation_grad(T::load(T::store(v)), T::load(a_in[r * pin + k]), act)) : T::store(0.0f);
        });
      }
    }
    __syncthreads();
    typename T::Stored* t = g;
    g = spare;
    spare = t;
  }
}

// Shared memory (mma_shared_bytes): the tile's activations (kMmaTileRows x pad_act_offset[layers + 1]),
// two gradient buffers (kMmaTileRows x pad_widest), all in the mode's type, then 256 floats per warp.
template <int Mode>
__global__ void __launch_bounds__(kTileThreads) mma_step_kernel(const LayerTable net, const MmaStepArgs args) {
  using T = Mma<Mode>;
  using S = typename T::Stored;
  extern __shared__ __align__(128) unsigned char mma_smem[];
  __shared__ double warp_sums[kTileThreads / 32];
  constexpr int R = kMmaTileRows;
  const int first = blockIdx.x * R;
  const int rows = min(R, args.rows - first);  // >= 1: the grid has ceil(rows / R) blocks
  const int L = net.layers, F = net.n_features, PF = net.pad_act_offset[1];
  S* acts = reinterpret_cast<S*>(mma_smem);
  S* g = acts + R * net.pad_act_offset[L + 1];
  S* spare = g + R * net.pad_widest;
  float* scratch = reinterpret_cast<float*>(spare + R * net.pad_widest) + (threadIdx.x >> 5) * 256;
  const S* ws = static_cast<const S*>(args.weights_mma);
  for (int e = threadIdx.x; e < R * PF; e += blockDim.x) {  // the input, cast; padding and rows past the batch 0
    const int r = e / PF, f = e % PF;
    acts[e] = T::store(r < rows && f < F ? args.x[static_cast<size_t>(first + r) * F + f] : 0.0f);
  }
  __syncthreads();
  mma_forward<Mode>(net, rows, acts, ws, scratch);
  // The loss in float32 on the output cast back; its gradient (mse_loss_backward's order, times the
  // loss scale) rounded to the mode's type, through the last layer's activation if it has one.
  const S* x_hat = acts + R * net.pad_act_offset[L];
  const float grad_output = args.grad_output * (args.scale ? *args.scale : 1.0f);
  double squares = 0.0;
  for (int e = threadIdx.x; e < R * PF; e += blockDim.x) {
    const int r = e / PF, f = e % PF;
    float gv = 0.0f;
    if (r < rows && f < F) {
      const float y = T::load(x_hat[e]);
      const float d = y - args.x[static_cast<size_t>(first + r) * F + f];
      squares += static_cast<double>(d) * static_cast<double>(d);
      gv = activation_grad(T::load(T::store((args.norm * d) * grad_output)), y, net.act[L - 1]);
    }
    g[e] = T::store(gv);
  }
  const double total = block_sum(squares, warp_sums);  // its barrier publishes g
  if (threadIdx.x == 0) args.tile_sq_err[blockIdx.x] = total;
  mma_backward<Mode>(net, acts, g, spare, ws, args.partials + static_cast<size_t>(blockIdx.x) * net.padded_params, scratch);
}

template <int Mode>
__global__ void __launch_bounds__(kAdamThreads) convert_weights_kernel(const LayerTable net, const float* params,
                                                                        void* weights_mma) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < net.params) static_cast<typename Mma<Mode>::Stored*>(weights_mma)[padded_index(net, i)] = Mma<Mode>::store(params[i]);
}

// One thread per parameter: the tiles' gradients summed in tile order, rounded to the mode's type (the
// batch's product writes it so), unscaled and checked when loss scaling (GradScaler.unscale_:
// _amp_foreach_non_finite_check_and_unscale_), then Adam unless adam_scaled runs it.
template <int Mode>
__global__ void __launch_bounds__(kAdamThreads) reduce_mma_kernel(const LayerTable net, const int tiles,
                                                                   const ReduceAdamArgs a) {
  using T = Mma<Mode>;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i == 0) {
    double squares = 0.0;
    for (int t = 0; t < tiles; ++t) squares += a.tile_sq_err[t];
    *a.loss_sum += squares * a.batch_scale;
  }
  if (i >= net.params) return;
  const int64_t pi = padded_index(net, i);
  float g = 0.0f;
  for (int t = 0; t < tiles; ++t) g += a.partials[static_cast<size_t>(t) * net.padded_params + pi];
  g = T::load(T::store(g));
  if (a.scale) {
    if (!isfinite(g)) *a.found_inf = 1.0f;
    const float inv_scale = 1.0f / *a.scale;
    g = inv_scale == 1.0f ? g : g * inv_scale;
  }
  a.grads[i] = g;
  if (!a.adam) return;
  const float p = adam_update(a, i, g, a.neg_step, a.bias_correction2_sqrt);
  static_cast<typename T::Stored*>(a.weights_mma)[pi] = T::store(p);
}

// amp_fp16's Adam and GradScaler.update (ScaledAdamArgs). Every block reads found_inf and the step
// count before it counts itself done; the last block alone writes them, after all have counted.
template <int Mode>
__global__ void __launch_bounds__(kAdamThreads) adam_scaled_kernel(const LayerTable net, const ScaledAdamArgs s) {
  __shared__ bool last;
  const ReduceAdamArgs& a = s.adam;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const float inf = *a.found_inf;
  const double step = static_cast<double>(*s.adam_steps + 1);
  if (i < net.params && inf == 0.0f) {  // the host's rounding of the bias corrections (reduce_args)
    const float bias_correction1 = static_cast<float>(1.0 - pow(s.beta1, step));
    const float bias_correction2_sqrt = static_cast<float>(sqrt(1.0 - pow(s.beta2, step)));
    const float p = adam_update(a, i, a.grads[i], -s.lr / bias_correction1, bias_correction2_sqrt);
    static_cast<typename Mma<Mode>::Stored*>(a.weights_mma)[padded_index(net, i)] = Mma<Mode>::store(p);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();  // release: this block's reads and writes before its count
    last = atomicAdd(s.blocks_done, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last || threadIdx.x != 0) return;
  __threadfence();  // acquire: every other block counted itself after its reads
  *s.skipped += inf;
  if (inf != 0.0f) {  // aten/src/ATen/native/cuda/AmpKernels.cu, amp_update_scale_cuda_kernel
    *s.scale = static_cast<float>(*s.scale * s.backoff_factor);
    *s.growth_tracker = 0;
  } else if (*s.growth_tracker + 1 == s.growth_interval) {
    const float grown = static_cast<float>(*s.scale * s.growth_factor);
    if (isfinite(grown)) *s.scale = grown;
    *s.growth_tracker = 0;
  } else {
    *s.growth_tracker += 1;
  }
  if (inf == 0.0f) *s.adam_steps += 1;
  *a.found_inf = 0.0f;
  *s.blocks_done = 0;
}

// Host side: the launchers.
unsigned mma_blocks_for(int64_t n, int threads) { return static_cast<unsigned>((n + threads - 1) / threads); }

template <typename F>
int with_mode(MmaMode mode, const F& f) {
  switch (mode) {
    case kMmaTf32: return f(std::integral_constant<int, kMmaTf32>());
    case kMmaBf16: return f(std::integral_constant<int, kMmaBf16>());
    case kMmaFp16: return f(std::integral_constant<int, kMmaFp16>());
  }
  return static_cast<int>(cudaErrorInvalidValue);
}

}  // namespace

std::size_t mma_element_bytes(MmaMode mode) { return mode == kMmaTf32 ? 4u : 2u; }

std::size_t mma_shared_bytes(const LayerTable& net, MmaMode mode) {
  const std::size_t stored = static_cast<std::size_t>(kMmaTileRows) *
                             (static_cast<std::size_t>(net.pad_act_offset[net.layers + 1]) + 2u * net.pad_widest);
  return stored * mma_element_bytes(mode) + (kTileThreads / 32) * 256 * sizeof(float);
}

int prepare_mma_step(MmaMode mode, std::size_t bytes) {
  return with_mode(mode, [&](auto m) {
    return static_cast<int>(cudaFuncSetAttribute(mma_step_kernel<decltype(m)::value>,
                                                 cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  });
}

int max_mma_shared_bytes_per_block(int device, MmaMode mode, std::size_t* bytes) {
  int optin = 0;
  cudaError_t e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  if (e != cudaSuccess) return static_cast<int>(e);
  return with_mode(mode, [&](auto m) {
    cudaFuncAttributes attr{};
    const cudaError_t code = cudaFuncGetAttributes(&attr, mma_step_kernel<decltype(m)::value>);
    if (code == cudaSuccess) *bytes = static_cast<std::size_t>(optin) - attr.sharedSizeBytes;
    return static_cast<int>(code);
  });
}

int launch_convert_weights(const LayerTable& net, MmaMode mode, const float* params, void* weights_mma, void* stream) {
  return with_mode(mode, [&](auto m) {
    convert_weights_kernel<decltype(m)::value><<<mma_blocks_for(net.params, kAdamThreads), kAdamThreads, 0,
                                                 static_cast<cudaStream_t>(stream)>>>(net, params, weights_mma);
    return static_cast<int>(cudaGetLastError());
  });
}

int launch_mma_step(const LayerTable& net, MmaMode mode, const MmaStepArgs& args, void* stream) {
  return with_mode(mode, [&](auto m) {
    mma_step_kernel<decltype(m)::value><<<mma_blocks_for(args.rows, kMmaTileRows), kTileThreads,
                                          mma_shared_bytes(net, mode), static_cast<cudaStream_t>(stream)>>>(net, args);
    return static_cast<int>(cudaGetLastError());
  });
}

int launch_reduce_mma(const LayerTable& net, MmaMode mode, int tiles, const ReduceAdamArgs& args, void* stream) {
  return with_mode(mode, [&](auto m) {
    reduce_mma_kernel<decltype(m)::value><<<mma_blocks_for(net.params, kAdamThreads), kAdamThreads, 0,
                                            static_cast<cudaStream_t>(stream)>>>(net, tiles, args);
    return static_cast<int>(cudaGetLastError());
  });
}

int launch_adam_scaled(const LayerTable& net, MmaMode mode, const ScaledAdamArgs& args, void* stream) {
  return with_mode(mode, [&](auto m) {
    adam_scaled_kernel<decltype(m)::value><<<mma_blocks_for(net.params, kAdamThreads), kAdamThreads, 0,
                                             static_cast<cudaStream_t>(stream)>>>(net, args);
    return static_cast<int>(cudaGetLastError());
  });
}

}  // namespace fused_cuda
}  // namespace balerbench
