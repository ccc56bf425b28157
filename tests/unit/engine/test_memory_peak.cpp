// test_memory_peak.cpp: the per-phase peak resident set (engine/memory_peak).
#include <cstring>
#include <vector>

#include "harness/engine/memory_peak.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

// A known allocation: 256 MiB written inside a phase raises its peak resident set by at least that much
// over the set at its start; the next phase, reset, reads below that peak again once the block is
// returned (glibc gives blocks this large back to the kernel at once).
TEST(MemoryPeak, PhasePeakSeesAKnownAllocationAndTheNextPhaseIsReset) {
  constexpr std::size_t kBlockMib = 256;
  MemoryPeakTracker tracker;
  tracker.start();
  const auto before = resident_set_mib();
  ASSERT_TRUE(before);
  {
    std::vector<char> block(kBlockMib << 20);
    std::memset(block.data(), 1, block.size());  // resident once written
    volatile char sink = block[block.size() / 2];
    (void)sink;
  }
  const MemoryPeak first = tracker.finish();
  ASSERT_TRUE(first.host_peak_rss_mib) << first.host_basis;
  EXPECT_GE(*first.host_peak_rss_mib, *before + kBlockMib - 1) << first.host_basis;
  EXPECT_FALSE(first.cuda_peak_reserved_mib);  // no CUDA device followed
  const nlohmann::json j = first.to_json();
  EXPECT_TRUE(j["cuda_peak_allocated_mib"].is_null());
  EXPECT_EQ(j["host_basis"], first.host_basis);
  if (first.host_basis.find("VmHWM, reset") == std::string::npos)
    GTEST_SKIP() << "this kernel refuses /proc/self/clear_refs: " << first.host_basis;
  tracker.start();
  const MemoryPeak second = tracker.finish();
  ASSERT_TRUE(second.host_peak_rss_mib);
  EXPECT_LT(*second.host_peak_rss_mib, *first.host_peak_rss_mib - kBlockMib / 2);
}

}  // namespace
}  // namespace balerbench
