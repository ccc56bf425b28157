// gpu_floors.cu: the floors a fused training step stands on, measured on this GPU (issue 38: "count the
// floors before you write a kernel ... measure them on your GPU too"). Built and run by
// scripts/gpu_check.sh's fused stage (nvcc there; nothing else needed), markdown on stdout:
//   launch, one by one   an empty kernel launched from the host N times, then one wait: the host's
//                        submission cost per launch (what the fused engine pays per kernel now)
//   launch, in a graph   the same kernels captured once into a CUDA graph of 1000 and replayed
//   grid-wide sync       one cooperative kernel, one block of 256 threads per SM (and two), looping
//                        over grid.sync(): what a persistent kernel pays per barrier
//   two-kernel step      an empty pair of kernels per "step" from the host, as the engine launches
//                        mma_step and reduce_mma: the floor of its step before any work
// Read-only on the GPU: it changes no clock, power limit or mode. Times from cudaEvents, medians of
// 5 repeats.
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace cg = cooperative_groups;

#define CHECK(call)                                                                          \
  do {                                                                                       \
    const cudaError_t e_ = (call);                                                           \
    if (e_ != cudaSuccess) {                                                                 \
      std::fprintf(stderr, "gpu_floors: %s: %s\n", #call, cudaGetErrorString(e_));           \
      std::exit(1);                                                                          \
    }                                                                                        \
  } while (0)

__global__ void empty_kernel() {}

__global__ void grid_sync_kernel(int iterations, int* sink) {
  cg::grid_group grid = cg::this_grid();
  for (int i = 0; i < iterations; ++i) grid.sync();
  if (blockIdx.x == 0 && threadIdx.x == 0) *sink = iterations;
}

template <typename F>
double median_us_per(int count, F run) {  // run() once as a warm-up, then 5 timed repeats
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  run();
  CHECK(cudaDeviceSynchronize());
  std::vector<double> us;
  for (int r = 0; r < 5; ++r) {
    CHECK(cudaEventRecord(a));
    run();
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    us.push_back(1000.0 * ms / count);
  }
  std::sort(us.begin(), us.end());
  CHECK(cudaEventDestroy(a));
  CHECK(cudaEventDestroy(b));
  return us[2];
}

int main() {
  int device = 0, sms = 0, coop = 0;
  CHECK(cudaGetDevice(&device));
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  CHECK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, device));
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, device));
  const int n = 10000;
  const double one_by_one = median_us_per(n, [&] {
    for (int i = 0; i < n; ++i) empty_kernel<<<1, 32>>>();
  });
  const double step_pair = median_us_per(n / 2, [&] {
    for (int i = 0; i < n / 2; ++i) {
      empty_kernel<<<32, 256>>>();
      empty_kernel<<<240, 256>>>();
    }
  });
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < 1000; ++i) empty_kernel<<<1, 32, 0, stream>>>();
  CHECK(cudaStreamEndCapture(stream, &graph));
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  const double in_graph = median_us_per(10 * 1000, [&] {
    for (int i = 0; i < 10; ++i) CHECK(cudaGraphLaunch(exec, 0));
  });
  std::printf("%s (%d SMs)\n\n| floor | µs |\n|---|---:|\n", prop.name, sms);
  std::printf("| empty kernel, launched one by one from the host | %.2f |\n", one_by_one);
  std::printf("| two empty kernels per step from the host (32 and 240 blocks), per step | %.2f |\n", step_pair);
  std::printf("| empty kernel inside a CUDA graph of 1000 | %.2f |\n", in_graph);
  int* sink = nullptr;
  CHECK(cudaMalloc(&sink, sizeof(int)));
  int per_sm = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, grid_sync_kernel, 256, 0));
  for (int blocks_per_sm = 1; coop && blocks_per_sm <= std::min(2, per_sm); ++blocks_per_sm) {
    int iterations = 10000;
    void* args[] = {&iterations, &sink};
    const dim3 grid(sms * blocks_per_sm), block(256);
    const double sync_us = median_us_per(iterations, [&] {
      CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<void*>(grid_sync_kernel), grid, block, args, 0, nullptr));
    });
    std::printf("| grid-wide sync, %d blocks of 256 threads | %.2f |\n", sms * blocks_per_sm, sync_us);
  }
  if (!coop) std::printf("| grid-wide sync | no cooperative launch on this device |\n");
  CHECK(cudaFree(sink));
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaStreamDestroy(stream));
  return 0;
}
