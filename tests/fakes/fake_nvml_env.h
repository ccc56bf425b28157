// fake_nvml_env.h: points balerbench at the fake NVML library (fake_nvml.cpp) for the life of one
// object, in this process: BALERBENCH_NVML_LIB at the library the test target names as FAKE_NVML_LIB,
// FAKE_NVML_CONFIG at a file holding `config`, and CUDA_VISIBLE_DEVICES as asked (unset otherwise).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdlib>

#include "tests/test_util.h"

namespace balerbench {

class FakeNvml {
 public:
  explicit FakeNvml(const nlohmann::json& config, const char* cuda_visible = nullptr) {
    write_text(dir_.path("nvml.json"), config.dump());
    setenv("BALERBENCH_NVML_LIB", FAKE_NVML_LIB, 1);
    setenv("FAKE_NVML_CONFIG", dir_.path("nvml.json").c_str(), 1);
    if (cuda_visible) setenv("CUDA_VISIBLE_DEVICES", cuda_visible, 1);
    else unsetenv("CUDA_VISIBLE_DEVICES");
  }
  ~FakeNvml() {
    unsetenv("BALERBENCH_NVML_LIB");
    unsetenv("FAKE_NVML_CONFIG");
    unsetenv("CUDA_VISIBLE_DEVICES");
  }
  FakeNvml(const FakeNvml&) = delete;
  FakeNvml& operator=(const FakeNvml&) = delete;

 private:
  TempDir dir_;
};

}  // namespace balerbench
