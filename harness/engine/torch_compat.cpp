// torch_compat.cpp: see torch_compat.h.
#include "harness/engine/torch_compat.h"

#include <ATen/Context.h>
#include <ATen/autocast_mode.h>
#include <torch/version.h>

#include <torch/csrc/autograd/profiler_legacy.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "common/error.h"
#include "common/paths.h"

#if BALERBENCH_WITH_CUDA
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#endif

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
#define BALERBENCH_AUTOCAST_GENERIC 1
#else
#define BALERBENCH_AUTOCAST_GENERIC 0
#endif

namespace balerbench {
namespace {

void check_device(c10::DeviceType device) {
  if (device != c10::DeviceType::CPU && device != c10::DeviceType::CUDA)
    throw std::invalid_argument("autocast: only CPU and CUDA are supported");
}

}  // namespace

std::string torch_version_string() { return TORCH_VERSION; }

bool built_with_cuda() { return BALERBENCH_WITH_CUDA != 0; }

bool autocast_enabled(c10::DeviceType device) {
  check_device(device);
#if BALERBENCH_AUTOCAST_GENERIC
  return at::autocast::is_autocast_enabled(device);
#else
  return device == c10::DeviceType::CPU ? at::autocast::is_cpu_enabled() : at::autocast::is_enabled();
#endif
}

void set_autocast_enabled(c10::DeviceType device, bool enabled) {
  check_device(device);
#if BALERBENCH_AUTOCAST_GENERIC
  at::autocast::set_autocast_enabled(device, enabled);
#else
  if (device == c10::DeviceType::CPU)
    at::autocast::set_cpu_enabled(enabled);
  else
    at::autocast::set_enabled(enabled);
#endif
}

at::ScalarType autocast_dtype(c10::DeviceType device) {
  check_device(device);
#if BALERBENCH_AUTOCAST_GENERIC
  return at::autocast::get_autocast_dtype(device);
#else
  return device == c10::DeviceType::CPU ? at::autocast::get_autocast_cpu_dtype()
                                        : at::autocast::get_autocast_gpu_dtype();
#endif
}

void set_autocast_dtype(c10::DeviceType device, at::ScalarType dtype) {
  check_device(device);
#if BALERBENCH_AUTOCAST_GENERIC
  at::autocast::set_autocast_dtype(device, dtype);
#else
  if (device == c10::DeviceType::CPU)
    at::autocast::set_autocast_cpu_dtype(dtype);
  else
    at::autocast::set_autocast_gpu_dtype(dtype);
#endif
}

AutocastScope::AutocastScope(c10::DeviceType device, at::ScalarType dtype, bool enabled, bool cache)
    : device_(device), enabled_(enabled), prev_enabled_(false), prev_cache_(true), prev_dtype_(dtype) {
  if (!enabled_) return;  // a disabled scope (every fp32/fp64 step) reads and writes no autocast state
  prev_enabled_ = autocast_enabled(device);
  prev_cache_ = at::autocast::is_autocast_cache_enabled();
  prev_dtype_ = autocast_dtype(device);
  set_autocast_dtype(device_, dtype);
  set_autocast_enabled(device_, true);
  at::autocast::set_autocast_cache_enabled(cache);
  at::autocast::increment_nesting();
}

AutocastScope::~AutocastScope() {
  if (!enabled_) return;
  // As torch.autocast.__exit__: the weight-cast cache lives until the outermost
  // scope ends.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  set_autocast_enabled(device_, prev_enabled_);
  set_autocast_dtype(device_, prev_dtype_);
  at::autocast::set_autocast_cache_enabled(prev_cache_);
}

void set_allow_tf32(bool allow) {
  at::globalContext().setAllowTF32CuBLAS(allow);
  at::globalContext().setAllowTF32CuDNN(allow);
}

bool allow_tf32() { return at::globalContext().allowTF32CuBLAS(); }

void set_allow_reduced_precision_reduction(bool allow) {
  at::globalContext().setAllowFP16ReductionCuBLAS(allow);  // (bool) everywhere; 2.8+ adds a defaulted split-K flag
#if TORCH_VERSION_MAJOR >= 2
  at::globalContext().setAllowBF16ReductionCuBLAS(allow);
#endif
}

void synchronize_device(c10::Device device) {
  if (!device.is_cuda()) return;
#if BALERBENCH_WITH_CUDA
  c10::cuda::CUDAGuard guard(device);
  c10::cuda::device_synchronize();
#else
  throw std::runtime_error("this build of balerbench has no CUDA support");
#endif
}

struct ProfilerTrace::Impl {
  std::string path, partial;
  std::ofstream out;
  std::unique_ptr<torch::autograd::profiler::RecordProfile> profile;
};

ProfilerTrace::ProfilerTrace(const std::string& path) : impl_(std::make_unique<Impl>()) {
  namespace fs = std::filesystem;
  const fs::path parent = fs::absolute(path).parent_path();
  if (!fs::is_directory(parent))
    throw InputError(path + ": the folder for the profiler trace does not exist",
                     "create " + parent.string() + " first");
  check_output_file(path, "give --profile-trace a regular file's path");
  impl_->path = output_target(path);  // a link's file is replaced, the link kept
  impl_->partial = impl_->path + ".partial";
  impl_->out.open(impl_->partial, std::ios::binary | std::ios::trunc);
  if (!impl_->out)
    throw InputError(impl_->partial + ": cannot write the profiler trace", "check the folder's permissions");
  impl_->profile = std::make_unique<torch::autograd::profiler::RecordProfile>(impl_->out);
}

ProfilerTrace::~ProfilerTrace() {
  if (!impl_ || !impl_->profile) return;
  try {
    impl_->profile.reset();  // stops the profiler and writes into the stream
  } catch (...) {
  }
  impl_->out.close();
  std::error_code ec;
  std::filesystem::remove(impl_->partial, ec);
}

int64_t ProfilerTrace::finish() {
  impl_->profile.reset();
  impl_->out.close();
  if (!impl_->out) throw std::runtime_error(impl_->partial + ": writing the profiler trace failed");
  std::ifstream in(impl_->partial);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  int64_t events = 0;
  for (std::size_t at = text.find("\"ph\""); at != std::string::npos; at = text.find("\"ph\"", at + 1)) ++events;
  std::filesystem::rename(impl_->partial, impl_->path);
  return events;
}

}  // namespace balerbench
