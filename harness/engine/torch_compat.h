// torch_compat.h: every difference between the LibTorch versions we build
// against, in one place: Debian's 1.13 (CPU) and the 2.x inside PyTorch on
// GPU machines. Nothing else in the code base tests TORCH_VERSION_*.
//
// - Autocast state: 1.13 and 2.0-2.3 have one setter per device
//   (set_enabled for CUDA, set_cpu_enabled, set_autocast_{gpu,cpu}_dtype);
//   2.4 made them generic over the device type and deprecated the old ones.
// - The fused AMP kernels (_amp_foreach_non_finite_check_and_unscale_,
//   _amp_update_scale_) have CUDA kernels in every version, CPU kernels only
//   from 2.3 on; we use them on CUDA only, so CPU runs the same tensor-op code
//   on every version.
// - CUDA pieces (graphs, events, stream sync) exist only when LibTorch was
//   built with CUDA (BALERBENCH_WITH_CUDA, set by CMake from TorchConfig).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <iosfwd>
#include <memory>
#include <string>

namespace balerbench {

// "1.13.1", as LibTorch reports itself at build time.
std::string torch_version_string();
// True when this build links a CUDA-enabled LibTorch.
bool built_with_cuda();

// Thread-local autocast state for one device type (CPU or CUDA).
bool autocast_enabled(c10::DeviceType device);
void set_autocast_enabled(c10::DeviceType device, bool enabled);
at::ScalarType autocast_dtype(c10::DeviceType device);
void set_autocast_dtype(c10::DeviceType device, at::ScalarType dtype);

// Enables autocast to `dtype` on `device` for its lifetime, restoring the
// previous state and clearing the cast cache on exit, as torch.autocast does.
// `cache` false disables the weight-cast cache (needed while capturing a CUDA
// graph).
class AutocastScope {
 public:
  AutocastScope(c10::DeviceType device, at::ScalarType dtype, bool enabled = true, bool cache = true);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  c10::DeviceType device_;
  bool enabled_, prev_enabled_, prev_cache_;
  at::ScalarType prev_dtype_;
};

// TF32 for float32 matrix products and convolutions on CUDA (process-wide).
void set_allow_tf32(bool allow);
bool allow_tf32();

// TF32 on or off for its scope (set_allow_tf32), the previous setting restored on exit or a throw.
class Tf32Scope {
 public:
  explicit Tf32Scope(bool on) : previous_(allow_tf32()) { set_allow_tf32(on); }
  ~Tf32Scope() { set_allow_tf32(previous_); }
  Tf32Scope(const Tf32Scope&) = delete;
  Tf32Scope& operator=(const Tf32Scope&) = delete;

 private:
  bool previous_;
};

// cuBLAS's reduced-precision reductions in float16 and bfloat16 products (split-K partial sums kept in
// the 16-bit type; LibTorch's default: allowed), process-wide. bfloat16's switch exists from LibTorch
// 2.0 on (1.13 has float16's only); there is no portable getter (2.8 made it an enum), so callers
// that turn it off turn it back on, the default.
void set_allow_reduced_precision_reduction(bool allow);

// Waits for all work queued on `device` (no-op on the CPU, whose ops return
// when done).
void synchronize_device(c10::Device device);

// LibTorch's profiler, recording into a Chrome trace (JSON, opens in Perfetto
// and chrome://tracing) from construction to finish(). The legacy profiler's
// RecordProfile exists in 1.13 and 2.x alike; it records CPU-side op events and
// RecordFunction user scopes (PhaseTimer's phases). The file is written to a
// temporary name and renamed by finish(); nothing is left when it is not
// called.
class ProfilerTrace {
 public:
  explicit ProfilerTrace(const std::string& path);
  ~ProfilerTrace();
  ProfilerTrace(const ProfilerTrace&) = delete;
  ProfilerTrace& operator=(const ProfilerTrace&) = delete;
  // Stops the profiler and renames the trace into place; returns the number of
  // events.
  int64_t finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace balerbench
