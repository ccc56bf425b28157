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

#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
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
    // NVML_ERROR_GPU_IS_LOST when it was listed: gone from the bus. Its name and UUID are then those
    // this process read while it answered (empty when it never did).
    bool lost = false;
  };
  // The GPUs CUDA_VISIBLE_DEVICES allows (all when unset); `note` says how they were chosen. The name
  // and UUID of every GPU that answers are remembered for the life of the process, so that one lost
  // later (between a sweep's trials) is still named.
  std::vector<Gpu> visible_gpus(std::string& note) const;

  // What a GPU is set to and doing now (clocks, modes, limit, temperature, throttle reasons, compute
  // processes), for the system description and the hazard list (harness/energy/hazards.h). Only
  // getters are called. A value NVML does not give (an entry point missing from an older driver,
  // NOT_SUPPORTED, no permission) stays empty or "unknown", and `errors` says why.
  struct GpuState {
    unsigned index = 0;
    std::string name, uuid;
    std::optional<unsigned> sm_clock_mhz, mem_clock_mhz;
    std::string persistence_mode = "unknown";  // enabled | disabled | unknown
    std::string compute_mode = "unknown";      // default | exclusive_thread | prohibited | exclusive_process | unknown
    std::string mig_mode = "unknown";          // enabled | disabled | unknown (no nvmlDeviceGetMigMode, not a MIG GPU)
    std::optional<double> power_limit_w;       // enforced
    std::optional<unsigned> temperature_c;
    std::optional<unsigned long long> throttle_mask;  // nvmlClocksThrottleReason* bits
    std::vector<std::string> throttle_reasons;        // their names (throttle_reason_names)
    struct Process {
      unsigned pid = 0;
      std::optional<double> used_memory_mib;  // empty when NVML does not say (no permission)
    };
    std::optional<std::vector<Process>> compute_processes;  // empty when NVML cannot list them
    std::vector<std::string> errors;                        // "persistence_mode: Not Supported (NVML code 3)"
    nlohmann::json to_json() const;
  };
  GpuState gpu_state(const Gpu& gpu) const;

  // What a measurement needs to know of a GPU's heat as it runs: temperature, SM clock and throttle
  // reasons, each empty where NVML does not give it. Three getters: cheap enough for every sampler read.
  struct Thermal {
    std::optional<double> temperature_c, sm_clock_mhz;
    std::optional<unsigned long long> throttle_mask;  // nvmlClocksThrottleReason* bits
    std::string temperature_error;  // why temperature_c is empty: NVML's error, or a value out of range
    nlohmann::json to_json() const;  // {"temperature_c", "sm_clock_mhz", "throttle_reasons": [names]}
  };
  Thermal thermal(const Gpu& gpu) const;

  // The power-limit constraints, default and enforced limit (read only), each empty where NVML does
  // not give it.
  struct Limits {
    std::optional<double> min_w, max_w, default_w, enforced_w;
    nlohmann::json to_json() const;
  };
  Limits limits(const Gpu& gpu) const;

  // NVML_FI_DEV_POWER_AVERAGE and NVML_FI_DEV_POWER_INSTANT in one nvmlDeviceGetFieldValues call, W;
  // each empty where the driver has no such call or does not support the field on this GPU.
  struct PowerFields {
    std::optional<double> average_w, instant_w;
  };
  PowerFields power_fields(const Gpu& gpu) const;

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
  // Modes and processes (gpu_state); loaded when present. The processes entry point is the _v3 one,
  // else _v2 (the same structure).
  nvmlDeviceGetPersistenceMode_fn device_get_persistence_mode = nullptr;
  nvmlDeviceGetComputeMode_fn device_get_compute_mode = nullptr;
  nvmlDeviceGetMigMode_fn device_get_mig_mode = nullptr;
  nvmlDeviceGetComputeRunningProcesses_fn device_get_compute_processes = nullptr;
  // Field values (the instantaneous and 1 s average power, doctor's power check); loaded when present.
  nvmlDeviceGetFieldValues_fn device_get_field_values = nullptr;

 private:
  NvmlLibrary() = default;
  std::optional<std::vector<GpuState::Process>> compute_processes(nvmlDevice_t handle,
                                                                  std::vector<std::string>& errors) const;
  void* handle_ = nullptr;
  std::string path_;
  bool initialised_ = false;
  nvmlShutdown_fn shutdown_ = nullptr;
  nvmlErrorString_fn error_string_ = nullptr;
  nvmlSystemGetDriverVersion_fn driver_version_ = nullptr;
};

// "gpu0 (NAME, UUID) is lost (NVML_ERROR_GPU_IS_LOST)": the line every lost GPU is reported with.
std::string lost_gpu_text(const NvmlLibrary::Gpu& gpu);

// A GPU temperature NVML gave, or empty when it is no reading: above kMaxGpuTemperatureC (no GPU
// runs that hot; 4294967295 is an unsigned -1, a sentinel some drivers return for a failed sensor).
constexpr unsigned kMaxGpuTemperatureC = 150;
std::optional<double> gpu_temperature_c(unsigned raw_c);

// Names of the throttle-reason bits set in `mask` (nvmlClocksThrottleReason*).
std::vector<std::string> throttle_reason_names(unsigned long long mask);

// The throttle reasons that mean a GPU ran slower for power or heat, not by choice (idle,
// application or display clocks): sw_power_cap, hw_slowdown, sw_thermal_slowdown,
// hw_thermal_slowdown, hw_power_brake_slowdown.
constexpr unsigned long long kThrottlePowerBits = 0x4 | 0x80;        // sw_power_cap, hw_power_brake_slowdown
constexpr unsigned long long kThrottleThermalBits = 0x8 | 0x20 | 0x40;  // hw_slowdown, sw/hw_thermal_slowdown

}  // namespace balerbench
