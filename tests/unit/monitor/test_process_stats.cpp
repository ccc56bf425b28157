// test_process_stats.cpp: this process's own figures and the fake NVML GPUs' memory.
#include <chrono>
#include <cstdlib>

#include "harness/monitor/process_stats.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

TEST(ProcessStats, ThisProcessAndTheFakeGpusMemory) {
  const ProcessStats p = read_process_stats();
  EXPECT_GT(p.resident_memory_bytes, 1e6);
  EXPECT_GE(p.virtual_memory_bytes, p.resident_memory_bytes);
  EXPECT_GE(p.threads, 1);
  EXPECT_GT(p.cpu_s, 0.0);
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_LE(p.start_time_unix_s, now + 1);
  EXPECT_GT(p.start_time_unix_s, now - 86400);

  TempDir dir;
  write_text(dir.path("nvml.json"), R"({"devices": [{"name": "Fake H100", "uuid": "GPU-a", "memory_total_bytes": 85899345920,
                                       "memory_used_bytes": 1073741824}, {"name": "Fake L4", "uuid": "GPU-b"}]})");
  setenv("BALERBENCH_NVML_LIB", FAKE_NVML_LIB, 1);
  setenv("FAKE_NVML_CONFIG", dir.path("nvml.json").c_str(), 1);
  setenv("CUDA_VISIBLE_DEVICES", "GPU-a", 1);
  {
    GpuMemoryReader reader;
    ASSERT_TRUE(reader.available());
    const auto gpus = reader.read();
    ASSERT_EQ(gpus.size(), 1u);  // CUDA_VISIBLE_DEVICES hides the L4
    EXPECT_EQ(gpus[0].name, "Fake H100");
    EXPECT_EQ(gpus[0].used_bytes, 1073741824.0);
    EXPECT_EQ(gpus[0].total_bytes, 85899345920.0);
  }
  unsetenv("CUDA_VISIBLE_DEVICES");
  setenv("BALERBENCH_NVML_LIB", "/nonexistent/libnvidia-ml.so.1", 1);
  EXPECT_TRUE(GpuMemoryReader().read().empty());  // no driver: no GPU series, no error
  unsetenv("BALERBENCH_NVML_LIB");
  unsetenv("FAKE_NVML_CONFIG");
}

}  // namespace
}  // namespace balerbench
