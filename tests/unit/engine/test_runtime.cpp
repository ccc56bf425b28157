// test_runtime.cpp: thread count and subnormal flushing on every pool thread.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <atomic>
#include <limits>

#include "harness/engine/runtime.h"

namespace balerbench {
namespace {

// Counts pool iterations on which a subnormal result survived.
int subnormal_results(int threads) {
  std::atomic<int> survived{0};
  at::parallel_for(0, threads * 64, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      volatile double tiny = std::numeric_limits<double>::min();  // smallest normal
      volatile double half = 0.5 + 1e-3 * static_cast<double>(i % 2);
      const double r = tiny * half;  // subnormal unless flushed
      if (r != 0.0) ++survived;
    }
  });
  return survived.load();
}

TEST(Runtime, FlushDenormalReachesEveryPoolThread) {
  EXPECT_EQ(configure_cpu_runtime(2, true), 2);
  EXPECT_EQ(subnormal_results(2), 0);
  configure_cpu_runtime(2, false);
  EXPECT_EQ(subnormal_results(2), 2 * 64);
  configure_cpu_runtime(0, true);
  EXPECT_EQ(at::get_num_threads(), available_cpus());
}

}  // namespace
}  // namespace balerbench
