// memory_peak.h: the peak memory of one Baler phase (train, compress, decompress), as Baler's own
// energy study measured it with memory-profiler (MiB per phase).
//
// Host: the process's peak resident set (VmHWM in /proc/self/status), reset at the phase's start by
// writing 5 to /proc/self/clear_refs (Linux 4.0 and later). Where that cannot be written, the figure
// is getrusage's ru_maxrss, the process's peak since it started, and `host_basis` says so: a later
// phase then reads at least the earlier phases' peak.
// CUDA (a CUDA build on a CUDA device): the caching allocator's peak allocated and reserved bytes,
// reset at the phase's start (c10::cuda::CUDACachingAllocator). Empty elsewhere.
#pragma once

#include <c10/core/Device.h>
#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace balerbench {

struct MemoryPeak {
  std::optional<double> host_peak_rss_mib;
  std::string host_basis;  // how host_peak_rss_mib was taken
  std::optional<double> cuda_peak_allocated_mib, cuda_peak_reserved_mib;
  nlohmann::json to_json() const;
};

// Peaks from start() to finish(). One tracker per phase; phases run one after the other.
class MemoryPeakTracker {
 public:
  // cuda_device: the CUDA device index whose allocator to follow, or -1 for none.
  explicit MemoryPeakTracker(int cuda_device = -1) : cuda_device_(cuda_device) {}
  void start();
  MemoryPeak finish() const;

 private:
  int cuda_device_;
  bool host_reset_ = false;
  std::string reset_error_;
};

// Adds NVML's device memory at the phase's peak to a phase's memory JSON (MemoryPeak::to_json): the
// highest memory in use the energy sampler read on the GPUs during the phase (every process on them,
// CUDA contexts included), beside the allocator's own peaks. Nothing when no GPU meter read it.
void add_gpu_memory_peak(nlohmann::json& memory, const std::optional<double>& gpu_memory_peak_mib);

// The process's resident set now, in MiB (VmRSS), for tests and live figures; empty off Linux.
std::optional<double> resident_set_mib();

// The CUDA device whose caching allocator a MemoryPeakTracker follows: the device's index, or -1 off CUDA.
int cuda_allocator_index(c10::Device device);

}  // namespace balerbench
