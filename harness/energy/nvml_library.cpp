// nvml_library.cpp: see nvml_library.h.
#include "harness/energy/nvml_library.h"

#include <dlfcn.h>

#include <cstdlib>
#include <sstream>

namespace balerbench {
namespace {

template <typename F>
bool load(void* handle, const char* symbol, F& out, std::string& missing) {
  out = reinterpret_cast<F>(dlsym(handle, symbol));
  if (!out) missing += (missing.empty() ? "" : ", ") + std::string(symbol);
  return out != nullptr;
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto b = item.find_first_not_of(" \t");
    const auto e = item.find_last_not_of(" \t");
    out.push_back(b == std::string::npos ? "" : item.substr(b, e - b + 1));
  }
  return out;
}

bool all_digits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

}  // namespace

std::shared_ptr<NvmlLibrary> NvmlLibrary::open(std::string& reason) {
  const char* env = std::getenv("BALERBENCH_NVML_LIB");
  const std::string path = env && *env ? env : "libnvidia-ml.so.1";
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* err = dlerror();
    reason = "cannot load " + path + " (" + (err ? err : "unknown error") +
             "): no NVIDIA driver here; set BALERBENCH_NVML_LIB to its path if it is elsewhere";
    return nullptr;
  }
  std::shared_ptr<NvmlLibrary> lib(new NvmlLibrary());
  lib->handle_ = handle;
  lib->path_ = path;
  std::string missing;
  nvmlInit_v2_fn init = nullptr;
  load(handle, "nvmlInit_v2", init, missing);
  load(handle, "nvmlShutdown", lib->shutdown_, missing);
  load(handle, "nvmlErrorString", lib->error_string_, missing);
  load(handle, "nvmlSystemGetDriverVersion", lib->driver_version_, missing);
  load(handle, "nvmlDeviceGetCount_v2", lib->device_get_count, missing);
  load(handle, "nvmlDeviceGetHandleByIndex_v2", lib->device_get_handle_by_index, missing);
  load(handle, "nvmlDeviceGetName", lib->device_get_name, missing);
  load(handle, "nvmlDeviceGetUUID", lib->device_get_uuid, missing);
  load(handle, "nvmlDeviceGetTotalEnergyConsumption", lib->device_get_total_energy, missing);
  load(handle, "nvmlDeviceGetPowerUsage", lib->device_get_power_usage, missing);
  load(handle, "nvmlDeviceGetEnforcedPowerLimit", lib->device_get_enforced_power_limit, missing);
  load(handle, "nvmlDeviceGetPowerManagementLimitConstraints", lib->device_get_power_limit_constraints, missing);
  load(handle, "nvmlDeviceGetPowerManagementDefaultLimit", lib->device_get_default_power_limit, missing);
  load(handle, "nvmlDeviceGetTemperature", lib->device_get_temperature, missing);
  load(handle, "nvmlDeviceGetClockInfo", lib->device_get_clock_info, missing);
  load(handle, "nvmlDeviceGetCurrentClocksThrottleReasons", lib->device_get_throttle_reasons, missing);
  load(handle, "nvmlDeviceGetMemoryInfo", lib->device_get_memory_info, missing);
  std::string optional_missing;
  load(handle, "nvmlDeviceGetPowerManagementLimit", lib->device_get_power_limit, optional_missing);
  load(handle, "nvmlDeviceSetPowerManagementLimit", lib->device_set_power_limit, optional_missing);
  load(handle, "nvmlDeviceGetProcessUtilization", lib->device_get_process_utilization, optional_missing);
  if (!missing.empty()) {
    reason = path + " lacks " + missing + " (a driver older than NVML API v2?)";
    return nullptr;
  }
  const nvmlReturn_t rc = init();
  if (rc != NVML_SUCCESS) {
    reason = "nvmlInit failed: " + lib->error_string(rc) + " (is the NVIDIA driver loaded? try nvidia-smi)";
    return nullptr;
  }
  lib->initialised_ = true;
  return lib;
}

NvmlLibrary::~NvmlLibrary() {
  if (initialised_ && shutdown_) shutdown_();
  if (handle_) dlclose(handle_);
}

std::string NvmlLibrary::error_string(nvmlReturn_t code) const {
  const char* s = error_string_ ? error_string_(code) : nullptr;
  return (s ? std::string(s) : "error") + " (NVML code " + std::to_string(code) + ")";
}

std::string NvmlLibrary::driver_version() const {
  char buf[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
  return driver_version_(buf, sizeof buf) == NVML_SUCCESS ? std::string(buf) : std::string();
}

std::vector<NvmlLibrary::Gpu> NvmlLibrary::visible_gpus(std::string& note) const {
  std::vector<Gpu> all;
  unsigned count = 0;
  if (device_get_count(&count) != NVML_SUCCESS) count = 0;
  for (unsigned i = 0; i < count; ++i) {
    Gpu g;
    g.index = i;
    if (device_get_handle_by_index(i, &g.handle) != NVML_SUCCESS) continue;
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
    if (device_get_name(g.handle, name, sizeof name) == NVML_SUCCESS) g.name = name;
    if (device_get_uuid(g.handle, uuid, sizeof uuid) == NVML_SUCCESS) g.uuid = uuid;
    all.push_back(g);
  }
  const char* cvd = std::getenv("CUDA_VISIBLE_DEVICES");
  if (!cvd) {
    note = "all " + std::to_string(all.size()) + " GPUs (CUDA_VISIBLE_DEVICES unset)";
    return all;
  }
  std::vector<Gpu> visible;
  for (const std::string& entry : split_list(cvd)) {
    const Gpu* match = nullptr;
    if (all_digits(entry)) {
      const unsigned long i = std::stoul(entry);
      for (const auto& g : all)
        if (g.index == i) match = &g;
    } else if (!entry.empty()) {
      // "GPU-8f3c..." or a unique prefix of it, as CUDA accepts.
      const std::string want = entry.rfind("GPU-", 0) == 0 ? entry : "GPU-" + entry;
      int hits = 0;
      for (const auto& g : all)
        if (g.uuid.rfind(want, 0) == 0) {
          match = &g;
          ++hits;
        }
      if (hits > 1) match = nullptr;
    }
    if (!match) break;  // CUDA ignores everything after the first invalid entry
    visible.push_back(*match);
  }
  note = "CUDA_VISIBLE_DEVICES='" + std::string(cvd) + "' selects " + std::to_string(visible.size()) + " of " +
         std::to_string(all.size()) + " GPUs";
  return visible;
}

std::vector<std::string> throttle_reason_names(unsigned long long mask) {
  static const std::pair<unsigned long long, const char*> kBits[] = {
      {0x1, "gpu_idle"},           {0x2, "applications_clocks_setting"}, {0x4, "sw_power_cap"},
      {0x8, "hw_slowdown"},        {0x10, "sync_boost"},                 {0x20, "sw_thermal_slowdown"},
      {0x40, "hw_thermal_slowdown"}, {0x80, "hw_power_brake_slowdown"},  {0x100, "display_clock_setting"}};
  std::vector<std::string> out;
  for (const auto& [bit, name] : kBits)
    if (mask & bit) out.push_back(name);
  return out;
}

}  // namespace balerbench
