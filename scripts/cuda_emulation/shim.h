// shim.h: the few CUDA features fused_cuda_kernels.cu uses, emulated on the host (scripts/cuda_emulation/run.sh):
// one OS thread per CUDA thread, one block at a time, __syncthreads as a std::barrier of the block's
// threads, __shfl_down_sync through a per-warp exchange and a barrier of the warp's 32 threads, shared
// memory as one static buffer. Under ThreadSanitizer a missing barrier is a data race on that buffer.
#pragma once
#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstddef>
#include <memory>
#include <thread>
#include <vector>

using std::min;
struct dim3 { unsigned x = 1, y = 1, z = 1; };
inline thread_local dim3 threadIdx, blockIdx;
inline dim3 blockDim;
inline float g_smem[1 << 22];
inline std::unique_ptr<std::barrier<>> g_block_barrier;
inline std::vector<std::unique_ptr<std::barrier<>>> g_warp_barriers;
inline double g_xch[64][32];
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(x)
#define __restrict__
inline void __syncthreads() { g_block_barrier->arrive_and_wait(); }
inline double __shfl_down_sync(unsigned, double v, int offset) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  g_xch[warp][lane] = v;
  g_warp_barriers[warp]->arrive_and_wait();
  const double r = lane + offset < 32 ? g_xch[warp][lane + offset] : v;
  g_warp_barriers[warp]->arrive_and_wait();
  return r;
}
template <typename F>
void launch(unsigned blocks, unsigned threads, F kernel) {
  blockDim.x = threads;
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
