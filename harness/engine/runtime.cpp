// runtime.cpp: see runtime.h.
#include "harness/engine/runtime.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>

#include <malloc.h>
#include <sched.h>

#include <algorithm>
#include <thread>

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

}  // namespace balerbench
