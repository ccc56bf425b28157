// nvml_library.h: libnvidia-ml.so.1 loaded at run time, and the GPUs this
// process may use.
//
// The library path is BALERBENCH_NVML_LIB when set (tests load the fake
// library this way), else libnvidia-ml.so.1 from the loader's search path.
// Visible GPUs honour CUDA_VISIBLE_DEVICES as CUDA reads it: a comma list of
// indices or (prefixes of) UUIDs, ending at the first entry that names no
// GPU; empty or "-1" means none. Indices are NVML's (PCI bus order), which is
// CUDA's order under CUDA_DEVICE_ORDER=PCI_BUS_ID.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "harness/energy/nvml_api.h"

namespace balerbench {

class NvmlLibrary {
 public:
  // Loads and initialises NVML; nullptr with `reason` set when it cannot.
  static std::shared_ptr<NvmlLibrary> open(std::string& reason);
  ~NvmlLibrary();
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  const std::string& path() const { return path_; }
  std::string error_string(nvmlReturn_t code) const;
  std::string driver_version() const;

  struct Gpu {
    unsigned index = 0;  // NVML index
    nvmlDevice_t handle = nullptr;
    std::string name, uuid;
  };
  // The GPUs CUDA_VISIBLE_DEVICES allows (all when unset); `note` says how they were chosen.
  std::vector<Gpu> visible_gpus(std::string& note) const;

  // Entry points (all present once open() succeeded).
  nvmlDeviceGetCount_v2_fn device_get_count = nullptr;
  nvmlDeviceGetHandleByIndex_v2_fn device_get_handle_by_index = nullptr;
  nvmlDeviceGetName_fn device_get_name = nullptr;
  nvmlDeviceGetUUID_fn device_get_uuid = nullptr;
  nvmlDeviceGetTotalEnergyConsumption_fn device_get_total_energy = nullptr;
  nvmlDeviceGetPowerUsage_fn device_get_power_usage = nullptr;
  nvmlDeviceGetEnforcedPowerLimit_fn device_get_enforced_power_limit = nullptr;
  nvmlDeviceGetPowerManagementLimitConstraints_fn device_get_power_limit_constraints = nullptr;
  nvmlDeviceGetPowerManagementDefaultLimit_fn device_get_default_power_limit = nullptr;
  nvmlDeviceGetTemperature_fn device_get_temperature = nullptr;
  nvmlDeviceGetClockInfo_fn device_get_clock_info = nullptr;
  nvmlDeviceGetCurrentClocksThrottleReasons_fn device_get_throttle_reasons = nullptr;
  nvmlDeviceGetMemoryInfo_fn device_get_memory_info = nullptr;
  // Power-limit control (harness/power); loaded when present, not required for measuring.
  nvmlDeviceGetPowerManagementLimit_fn device_get_power_limit = nullptr;
  nvmlDeviceSetPowerManagementLimit_fn device_set_power_limit = nullptr;
  // Per-process SM use (the GPU energy attributable to a process tree); loaded when present.
  nvmlDeviceGetProcessUtilization_fn device_get_process_utilization = nullptr;

 private:
  NvmlLibrary() = default;
  void* handle_ = nullptr;
  std::string path_;
  bool initialised_ = false;
  nvmlShutdown_fn shutdown_ = nullptr;
  nvmlErrorString_fn error_string_ = nullptr;
  nvmlSystemGetDriverVersion_fn driver_version_ = nullptr;
};

// Names of the throttle-reason bits set in `mask` (nvmlClocksThrottleReason*).
std::vector<std::string> throttle_reason_names(unsigned long long mask);

}  // namespace balerbench
