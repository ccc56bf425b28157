// memory_peak.cpp: see memory_peak.h.
#include "harness/engine/memory_peak.h"

#include <sys/resource.h>

#include <algorithm>

#include "harness/base/proc_fs.h"

#if BALERBENCH_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace balerbench {
namespace {

constexpr double kKibPerMib = 1024.0;
constexpr double kBytesPerMib = 1024.0 * 1024.0;

// A "Key:   123 kB" line of /proc/self/status, in KiB.
std::optional<double> status_kib(const char* key) { return read_status_kib("/proc", 0, key); }

}  // namespace

std::optional<double> resident_set_mib() {
  const auto kib = status_kib("VmRSS");
  if (!kib) return std::nullopt;
  return *kib / kKibPerMib;
}

nlohmann::json MemoryPeak::to_json() const {
  const auto opt = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  return {{"host_peak_rss_mib", opt(host_peak_rss_mib)},
          {"host_basis", host_basis},
          {"cuda_peak_allocated_mib", opt(cuda_peak_allocated_mib)},
          {"cuda_peak_reserved_mib", opt(cuda_peak_reserved_mib)}};
}

void MemoryPeakTracker::start() {
  reset_error_ = reset_self_peak_rss();
  host_reset_ = reset_error_.empty();
#if BALERBENCH_WITH_CUDA
  if (cuda_device_ >= 0) c10::cuda::CUDACachingAllocator::resetPeakStats(static_cast<c10::DeviceIndex>(cuda_device_));
#endif
}

MemoryPeak MemoryPeakTracker::finish() const {
  MemoryPeak p;
  const auto hwm = host_reset_ ? status_kib("VmHWM") : std::nullopt;
  if (hwm) {
    p.host_peak_rss_mib = *hwm / kKibPerMib;
    p.host_basis = "peak resident set of the phase (VmHWM, reset at its start)";
  } else {
    rusage u{};
    if (getrusage(RUSAGE_SELF, &u) == 0) p.host_peak_rss_mib = static_cast<double>(u.ru_maxrss) / kKibPerMib;
    p.host_basis = "peak resident set of the process since it started (getrusage; VmHWM could not be reset: " +
                   (host_reset_ ? std::string("no VmHWM in /proc/self/status") : "/proc/self/clear_refs: " + reset_error_) +
                   ")";
  }
#if BALERBENCH_WITH_CUDA
  if (cuda_device_ >= 0) {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(cuda_device_));
    // StatType::AGGREGATE is index 0 in every PyTorch since 1.x; the enum's namespace moved in 2.x.
    const std::size_t aggregate = 0;
    p.cuda_peak_allocated_mib = static_cast<double>(stats.allocated_bytes[aggregate].peak) / kBytesPerMib;
    p.cuda_peak_reserved_mib = static_cast<double>(stats.reserved_bytes[aggregate].peak) / kBytesPerMib;
  }
#endif
  return p;
}

void add_gpu_memory_peak(nlohmann::json& memory, const std::optional<double>& gpu_memory_peak_mib) {
  if (!memory.is_object() || !gpu_memory_peak_mib) return;
  memory["gpu_memory_used_peak_mib"] = *gpu_memory_peak_mib;
  memory["gpu_memory_basis"] =
      "NVML device memory used (every process on the GPU, CUDA contexts included): the highest energy-sampler read "
      "in the phase, a lower bound of the true peak";
}

int cuda_allocator_index(c10::Device device) { return device.is_cuda() ? std::max<int>(0, device.index()) : -1; }

}  // namespace balerbench
