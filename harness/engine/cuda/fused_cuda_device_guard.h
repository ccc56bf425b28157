// fused_cuda_device_guard.h: the current CUDA device set for a scope and restored after it, for the
// fused CUDA engine (fused_cuda_engine.cpp; built only with BALERBENCH_CUDA_ENGINE). CUDA runtime only.
#pragma once

#include <cuda_runtime_api.h>

namespace balerbench {
namespace fused_cuda {

// Sets `device` as the current CUDA device for its scope and restores the previous one on exit, so
// that the engine leaves the process's current device as it found it. code(): cudaSetDevice's result.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    if (previous_ != device) {
      code_ = cudaSetDevice(device);
      changed_ = code_ == cudaSuccess && previous_ >= 0;
    }
  }
  ~DeviceGuard() {
    if (changed_) cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;
  int code() const { return code_; }

 private:
  int previous_ = -1;
  int code_ = cudaSuccess;
  bool changed_ = false;
};

}  // namespace fused_cuda
}  // namespace balerbench
