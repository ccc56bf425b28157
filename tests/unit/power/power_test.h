// power_test.h: the fixture of the power-limit tests (test_power_limit.cpp, test_optimizer.cpp):
// one fake NVML GPU with limits 100-300 W, its set calls logged. Outside an anonymous namespace, so
// that both files' PowerTest tests share one fixture class, as GoogleTest requires of a suite.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "harness/power/power_limit.h"
#include "tests/test_util.h"

namespace balerbench {

// Power limits against the fake NVML library: one GPU, limits 100-300 W.
class PowerTest : public ::testing::Test {
 protected:
  void SetUp() override { configure(""); }
  void configure(const std::string& extra) {
    write_text(dir_.path("nvml.json"),
               R"({"driver_version": "550.00", "devices": [{"name": "Fake A100", "uuid": "GPU-aaaa",
                   "power_w": 100, "power_limit_w": 300, "min_limit_w": 100, "max_limit_w": 300)" +
                   extra + "}]}");
    setenv("BALERBENCH_NVML_LIB", FAKE_NVML_LIB, 1);
    setenv("FAKE_NVML_CONFIG", dir_.path("nvml.json").c_str(), 1);
    setenv("FAKE_NVML_SET_LOG", dir_.path("sets.log").c_str(), 1);
    unsetenv("FAKE_NVML_STATE");
  }
  void TearDown() override {
    for (const char* v : {"BALERBENCH_NVML_LIB", "FAKE_NVML_CONFIG", "FAKE_NVML_SET_LOG", "FAKE_NVML_STATE"})
      unsetenv(v);
  }
  std::vector<std::string> sets() const { return read_lines(dir_.path("sets.log")); }
  std::unique_ptr<NvmlPowerControl> open() {
    std::string reason;
    auto c = NvmlPowerControl::open(reason);
    EXPECT_TRUE(c) << reason;
    return c;
  }
  TempDir dir_;
};

}  // namespace balerbench
