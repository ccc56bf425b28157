// runtime.cpp: see runtime.h.
#include "harness/engine/runtime.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include <malloc.h>
#include <sched.h>

#include <algorithm>
#include <thread>

#include "common/error.h"

namespace balerbench {

int available_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

void tune_allocator() {
#if defined(__GLIBC__)
  // LibTorch's CPU allocator is plain malloc. glibc serves blocks over 128 KiB
  // with mmap and trims the heap top after frees, so the ~1-2 MB temporaries
  // of every batch were faulted in afresh.
  // Keep blocks under 64 MiB on the heap and trim only past 512 MiB of slack.
  static const bool done = [] {
    mallopt(M_MMAP_THRESHOLD, 64 << 20);
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
    return true;
  }();
  (void)done;
#endif
}

int configure_cpu_runtime(int threads, bool flush_denormal) {
  tune_allocator();
  const int n = threads > 0 ? threads : available_cpus();
  at::set_num_threads(n);
  at::globalContext().setFlushDenormal(flush_denormal);
  // One iteration per pool thread (grain 1), so each worker sets its own MXCSR.
  at::parallel_for(0, at::get_num_threads(), 1, [flush_denormal](int64_t, int64_t) {
    at::globalContext().setFlushDenormal(flush_denormal);
  });
  return at::get_num_threads();
}

void configure_runtime(int threads, bool flush_denormal, bool deterministic_algorithms) {
  configure_cpu_runtime(threads, flush_denormal);
  at::globalContext().setDeterministicAlgorithms(deterministic_algorithms, /*warn_only=*/false);
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
  // Baler's deterministic_algorithm picks deterministic kernels. PyTorch 2.1+ also fills every new
  // tensor with NaN under it, a debugging aid that costs a fill kernel per allocation: on an H100,
  // 35 extra kernels in each amp_fp16 training step, more than a tenth of the step. Every tensor
  // balerbench allocates is written before it is read, so the kernels stay deterministic without it.
  at::globalContext().setDeterministicFillUninitializedMemory(false);
#endif
}

c10::Device resolve_device(const std::string& name) {
  c10::Device device(c10::kCPU);
  try {
    device = c10::Device(name);
  } catch (const std::exception&) {
    throw InputError("invalid device '" + name + "'", "cpu, cuda or cuda:N");
  }
  if (device.is_cuda() && !torch::cuda::is_available())
    throw InputError("device '" + name + "' requested but no CUDA GPU is available to this LibTorch build",
                     "device cpu: --set device=cpu for train, compress and decompress, or \"device\": \"cpu\" in an "
                     "experiment's \"training\" section");
  return device;
}

}  // namespace balerbench
