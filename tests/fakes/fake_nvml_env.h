// fake_nvml_env.h: points balerbench at the fake NVML library (fake_nvml.cpp) for the life of one
// object, in this process: BALERBENCH_NVML_LIB at the library the test target names as FAKE_NVML_LIB,
// FAKE_NVML_CONFIG at a file holding `config`, and CUDA_VISIBLE_DEVICES as asked (unset otherwise).
// Given a FakeClock, the fake's GPUs run on that clock's time (their schedules, counters and samples),
// as the meters reading them do when opened with the same clock.
#pragma once

#include <dlfcn.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "tests/fakes/fake_clock.h"
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
  // The library is loaded here and held until the end, so that the NvmlLibrary instances opened
  // meanwhile (dlopen of the same path gives the same copy) all read `clock`.
  FakeNvml(const nlohmann::json& config, const FakeClock& clock, const char* cuda_visible = nullptr)
      : FakeNvml(config, cuda_visible) {
    library_ = dlopen(FAKE_NVML_LIB, RTLD_NOW | RTLD_LOCAL);
    if (!library_) throw std::runtime_error(std::string("cannot load ") + FAKE_NVML_LIB);
    set_clock_ = reinterpret_cast<SetClock>(dlsym(library_, "fake_nvml_set_clock"));
    if (!set_clock_) throw std::runtime_error(std::string(FAKE_NVML_LIB) + " has no fake_nvml_set_clock");
    set_clock_([](const void* c) { return static_cast<const FakeClock*>(c)->steady_now_us(); },
               [](const void* c) { return static_cast<const FakeClock*>(c)->unix_now_us(); }, &clock);
  }
  ~FakeNvml() {
    if (set_clock_) set_clock_(nullptr, nullptr, nullptr);
    if (library_) dlclose(library_);
    unsetenv("BALERBENCH_NVML_LIB");
    unsetenv("FAKE_NVML_CONFIG");
    unsetenv("CUDA_VISIBLE_DEVICES");
  }
  FakeNvml(const FakeNvml&) = delete;
  FakeNvml& operator=(const FakeNvml&) = delete;

 private:
  using SetClock = void (*)(long long (*)(const void*), long long (*)(const void*), const void*);
  TempDir dir_;
  void* library_ = nullptr;
  SetClock set_clock_ = nullptr;
};

}  // namespace balerbench
