// shim.h: the few CUDA features fused_cuda_kernels.cu and fused_cuda_mma.cu use, emulated on the host
// (scripts/cuda_emulation/run.sh): one OS thread per CUDA thread, one block at a time, __syncthreads as
// a std::barrier of the block's threads, __syncwarp and __shfl_down_sync through a barrier of the
// warp's 32 threads, shared memory as one static buffer; half and bfloat16 with CUDA's round-to-nearest
// conversions; wmma's fragments as the whole matrix in every lane (CUDA leaves the spread across lanes
// unspecified, so code that keeps to the API cannot tell), each lane storing a contiguous 32nd of it.
// Under ThreadSanitizer a missing barrier is a data race on shared memory.
#pragma once
#include <algorithm>
#include <atomic>
#include <barrier>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <type_traits>
#include <vector>

using std::isfinite;
using std::min;
struct dim3 { unsigned x = 1, y = 1, z = 1; };
inline thread_local dim3 threadIdx, blockIdx;
inline dim3 blockDim, gridDim;
alignas(256) inline float g_smem[1 << 22];
inline std::unique_ptr<std::barrier<>> g_block_barrier;
inline std::vector<std::unique_ptr<std::barrier<>>> g_warp_barriers;
inline double g_xch[64][32];
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(x)
#define __restrict__
#define __align__(n) alignas(n)
inline void __syncthreads() { g_block_barrier->arrive_and_wait(); }
inline double __shfl_down_sync(unsigned, double v, int offset) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  g_xch[warp][lane] = v;
  g_warp_barriers[warp]->arrive_and_wait();
  const double r = lane + offset < 32 ? g_xch[warp][lane + offset] : v;
  g_warp_barriers[warp]->arrive_and_wait();
  return r;
}
inline void __syncwarp() { g_warp_barriers[threadIdx.x >> 5]->arrive_and_wait(); }
inline void __threadfence() {}  // blocks run one after another here: nothing to order
inline unsigned atomicAdd(unsigned* p, unsigned v) { return std::atomic_ref<unsigned>(*p).fetch_add(v); }

struct __half {
  _Float16 v;
};
inline __half __float2half_rn(float f) { return {static_cast<_Float16>(f)}; }  // round to nearest even
inline float __half2float(__half h) { return static_cast<float>(h.v); }
struct __nv_bfloat16 {
  uint16_t bits;
};
inline __nv_bfloat16 __float2bfloat16_rn(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return {static_cast<uint16_t>((u >> 16) | 0x40u)};  // NaN stays NaN
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
  return {static_cast<uint16_t>(u >> 16)};
}
inline float __bfloat162float(__nv_bfloat16 b) {
  const uint32_t u = static_cast<uint32_t>(b.bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline float shim_float(float v) { return v; }
inline float shim_float(__half v) { return __half2float(v); }
inline float shim_float(__nv_bfloat16 v) { return __bfloat162float(v); }

namespace nvcuda {
namespace wmma {
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
namespace precision {
struct tf32 {};
}
enum layout_t { mem_row_major, mem_col_major };
template <class T> struct element { using type = T; };
template <> struct element<precision::tf32> { using type = float; };
template <class Use, int M, int N, int K> struct dims;
template <int M, int N, int K> struct dims<matrix_a, M, N, K> { static constexpr int rows = M, cols = K; };
template <int M, int N, int K> struct dims<matrix_b, M, N, K> { static constexpr int rows = K, cols = N; };
template <int M, int N, int K> struct dims<accumulator, M, N, K> { static constexpr int rows = M, cols = N; };
template <class Use, int M, int N, int K, class T, class Layout = void>
struct fragment {
  static constexpr int rows = dims<Use, M, N, K>::rows, cols = dims<Use, M, N, K>::cols, num_elements = rows * cols;
  typename element<T>::type x[rows * cols];
};
template <class Use, int M, int N, int K, class T, class Layout, class P>
void load_matrix_sync(fragment<Use, M, N, K, T, Layout>& f, const P* p, unsigned ldm) {
  using F = fragment<Use, M, N, K, T, Layout>;
  for (int r = 0; r < F::rows; ++r)
    for (int c = 0; c < F::cols; ++c)
      f.x[r * F::cols + c] = std::is_same_v<Layout, row_major> ? p[r * ldm + c] : p[c * ldm + r];
}
template <int M, int N, int K>
void fill_fragment(fragment<accumulator, M, N, K, float>& f, float v) {
  for (float& e : f.x) e = v;
}
template <int M, int N, int K, class T, class LA, class LB>
void mma_sync(fragment<accumulator, M, N, K, float>& d, const fragment<matrix_a, M, N, K, T, LA>& a,
              const fragment<matrix_b, M, N, K, T, LB>& b, const fragment<accumulator, M, N, K, float>& c) {
  float out[M * N];
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      float s = c.x[m * N + n];
      for (int k = 0; k < K; ++k) s += shim_float(a.x[m * K + k]) * shim_float(b.x[k * N + n]);
      out[m * N + n] = s;
    }
  std::copy(out, out + M * N, d.x);
}
// Each lane stores a contiguous 32nd of the result (on a GPU the spread is the hardware's): unlike a
// reader striding by 32, so that a missing __syncwarp between the store and the reads is a race.
template <int M, int N, int K>
void store_matrix_sync(float* p, const fragment<accumulator, M, N, K, float>& f, unsigned ldm, layout_t layout) {
  const int per_lane = M * N / 32, lane = threadIdx.x & 31;
  for (int e = lane * per_lane; e < (lane + 1) * per_lane; ++e)
    (layout == mem_row_major ? p[(e / N) * ldm + e % N] : p[(e % N) * ldm + e / N]) = f.x[e];
}
inline float __float_to_tf32(float f) {  // cvt.rna.tf32.f32: 10 mantissa bits, nearest, ties away
  if (!std::isfinite(f)) return f;
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u = (u + 0x1000u) & 0xffffe000u;
  std::memcpy(&f, &u, 4);
  return f;
}
}  // namespace wmma
}  // namespace nvcuda

template <typename F>
void launch(unsigned blocks, unsigned threads, F kernel) {
  blockDim.x = threads;
  gridDim.x = blocks;
  for (unsigned b = 0; b < blocks; ++b) {
    g_block_barrier = std::make_unique<std::barrier<>>(threads);
    g_warp_barriers.clear();
    for (unsigned w = 0; w < threads / 32; ++w) g_warp_barriers.push_back(std::make_unique<std::barrier<>>(32));
    std::vector<std::thread> ts;
    for (unsigned t = 0; t < threads; ++t)
      ts.emplace_back([=] { threadIdx.x = t; blockIdx.x = b; kernel(); });
    for (auto& t : ts) t.join();
  }
}
