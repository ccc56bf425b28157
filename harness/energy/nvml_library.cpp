// nvml_library.cpp: see nvml_library.h.
#include "harness/energy/nvml_library.h"

#include <dlfcn.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <sstream>
#include <tuple>

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
  load(handle, "nvmlDeviceGetPersistenceMode", lib->device_get_persistence_mode, optional_missing);
  load(handle, "nvmlDeviceGetComputeMode", lib->device_get_compute_mode, optional_missing);
  load(handle, "nvmlDeviceGetMigMode", lib->device_get_mig_mode, optional_missing);
  load(handle, "nvmlDeviceGetFieldValues", lib->device_get_field_values, optional_missing);
  if (!load(handle, "nvmlDeviceGetComputeRunningProcesses_v3", lib->device_get_compute_processes, optional_missing))
    load(handle, "nvmlDeviceGetComputeRunningProcesses_v2", lib->device_get_compute_processes, optional_missing);
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

namespace {

// The name and UUID of each GPU this process has seen answer, by NVML index: a GPU lost later (between
// a sweep's trials) answers neither, and is still named by them.
struct SeenGpus {
  std::mutex mu;
  std::map<unsigned, std::pair<std::string, std::string>> by_index;
};
SeenGpus& seen_gpus() {
  static SeenGpus seen;
  return seen;
}

}  // namespace

std::vector<NvmlLibrary::Gpu> NvmlLibrary::visible_gpus(std::string& note) const {
  std::vector<Gpu> all;
  unsigned count = 0;
  if (device_get_count(&count) != NVML_SUCCESS) count = 0;
  SeenGpus& seen = seen_gpus();
  std::lock_guard<std::mutex> lock(seen.mu);
  for (unsigned i = 0; i < count; ++i) {
    Gpu g;
    g.index = i;
    const nvmlReturn_t handle_rc = device_get_handle_by_index(i, &g.handle);
    if (handle_rc != NVML_SUCCESS && handle_rc != NVML_ERROR_GPU_IS_LOST) continue;
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
    const nvmlReturn_t name_rc = handle_rc == NVML_SUCCESS ? device_get_name(g.handle, name, sizeof name) : handle_rc;
    const nvmlReturn_t uuid_rc = handle_rc == NVML_SUCCESS ? device_get_uuid(g.handle, uuid, sizeof uuid) : handle_rc;
    if (name_rc == NVML_SUCCESS) g.name = name;
    if (uuid_rc == NVML_SUCCESS) g.uuid = uuid;
    g.lost = handle_rc == NVML_ERROR_GPU_IS_LOST || name_rc == NVML_ERROR_GPU_IS_LOST || uuid_rc == NVML_ERROR_GPU_IS_LOST;
    auto known = seen.by_index.find(i);
    if (!g.lost && !g.uuid.empty()) seen.by_index[i] = {g.name, g.uuid};
    else if (g.lost && known != seen.by_index.end()) std::tie(g.name, g.uuid) = known->second;
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

namespace {

const char* compute_mode_name(int mode) {
  switch (mode) {
    case NVML_COMPUTEMODE_DEFAULT: return "default";
    case NVML_COMPUTEMODE_EXCLUSIVE_THREAD: return "exclusive_thread";
    case NVML_COMPUTEMODE_PROHIBITED: return "prohibited";
    case NVML_COMPUTEMODE_EXCLUSIVE_PROCESS: return "exclusive_process";
    default: return "unknown";
  }
}

template <typename T>
nlohmann::json or_null(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

NvmlLibrary::GpuState NvmlLibrary::gpu_state(const Gpu& gpu) const {
  GpuState s;
  s.index = gpu.index;
  s.name = gpu.name;
  s.uuid = gpu.uuid;
  const auto ok = [&](const char* what, nvmlReturn_t rc) {
    if (rc != NVML_SUCCESS) s.errors.push_back(std::string(what) + ": " + error_string(rc));
    return rc == NVML_SUCCESS;
  };
  unsigned u = 0;
  if (ok("sm_clock_mhz", device_get_clock_info(gpu.handle, NVML_CLOCK_SM, &u))) s.sm_clock_mhz = u;
  if (ok("mem_clock_mhz", device_get_clock_info(gpu.handle, NVML_CLOCK_MEM, &u))) s.mem_clock_mhz = u;
  if (ok("power_limit_w", device_get_enforced_power_limit(gpu.handle, &u))) s.power_limit_w = u / 1e3;
  if (ok("temperature_c", device_get_temperature(gpu.handle, NVML_TEMPERATURE_GPU, &u))) {
    if (gpu_temperature_c(u)) s.temperature_c = u;
    else s.errors.push_back("temperature_c: NVML gave " + std::to_string(u) + " C, no reading");
  }
  unsigned long long mask = 0;
  if (ok("throttle_reasons", device_get_throttle_reasons(gpu.handle, &mask))) {
    s.throttle_mask = mask;
    s.throttle_reasons = throttle_reason_names(mask);
  }
  int mode = 0;
  if (device_get_persistence_mode && ok("persistence_mode", device_get_persistence_mode(gpu.handle, &mode)))
    s.persistence_mode = mode == NVML_FEATURE_ENABLED ? "enabled" : "disabled";
  if (device_get_compute_mode && ok("compute_mode", device_get_compute_mode(gpu.handle, &mode)))
    s.compute_mode = compute_mode_name(mode);
  unsigned current = 0, pending = 0;
  if (device_get_mig_mode && device_get_mig_mode(gpu.handle, &current, &pending) == NVML_SUCCESS)
    s.mig_mode = current == NVML_DEVICE_MIG_ENABLE ? "enabled" : "disabled";  // NOT_SUPPORTED: not a MIG GPU
  if (device_get_compute_processes) s.compute_processes = compute_processes(gpu.handle, s.errors);
  return s;
}

NvmlLibrary::Thermal NvmlLibrary::thermal(const Gpu& gpu) const {
  Thermal t;
  unsigned u = 0;
  unsigned long long mask = 0;
  const nvmlReturn_t rc = device_get_temperature(gpu.handle, NVML_TEMPERATURE_GPU, &u);
  if (rc == NVML_SUCCESS) t.temperature_c = gpu_temperature_c(u);
  if (rc != NVML_SUCCESS) t.temperature_error = error_string(rc);
  else if (!t.temperature_c)
    t.temperature_error = "NVML gave " + std::to_string(u) + " C, no reading (above " +
                          std::to_string(kMaxGpuTemperatureC) + " C)";
  if (device_get_clock_info(gpu.handle, NVML_CLOCK_SM, &u) == NVML_SUCCESS) t.sm_clock_mhz = u;
  if (device_get_throttle_reasons(gpu.handle, &mask) == NVML_SUCCESS) t.throttle_mask = mask;
  return t;
}

nlohmann::json NvmlLibrary::Thermal::to_json() const {
  return {{"temperature_c", or_null(temperature_c)},
          {"sm_clock_mhz", or_null(sm_clock_mhz)},
          {"throttle_reasons", throttle_mask ? nlohmann::json(throttle_reason_names(*throttle_mask)) : nullptr}};
}

NvmlLibrary::Limits NvmlLibrary::limits(const Gpu& gpu) const {
  Limits l;
  unsigned a = 0, b = 0;
  if (device_get_power_limit_constraints(gpu.handle, &a, &b) == NVML_SUCCESS) {
    l.min_w = a / 1e3;
    l.max_w = b / 1e3;
  }
  if (device_get_default_power_limit(gpu.handle, &a) == NVML_SUCCESS) l.default_w = a / 1e3;
  if (device_get_enforced_power_limit(gpu.handle, &a) == NVML_SUCCESS) l.enforced_w = a / 1e3;
  return l;
}

nlohmann::json NvmlLibrary::Limits::to_json() const {
  return {{"min_limit_w", or_null(min_w)},
          {"max_limit_w", or_null(max_w)},
          {"default_limit_w", or_null(default_w)},
          {"enforced_limit_w", or_null(enforced_w)}};
}

NvmlLibrary::PowerFields NvmlLibrary::power_fields(const Gpu& gpu) const {
  PowerFields p;
  if (!device_get_field_values) return p;
  nvmlFieldValue_t v[2] = {};
  v[0].fieldId = NVML_FI_DEV_POWER_AVERAGE;
  v[1].fieldId = NVML_FI_DEV_POWER_INSTANT;
  if (device_get_field_values(gpu.handle, 2, v) != NVML_SUCCESS) return p;
  const auto watts = [](const nvmlFieldValue_t& f) -> std::optional<double> {
    if (f.nvmlReturn != NVML_SUCCESS) return std::nullopt;
    if (f.valueType == NVML_VALUE_TYPE_DOUBLE) return f.value.dVal / 1e3;
    return f.value.uiVal / 1e3;
  };
  p.average_w = watts(v[0]);
  p.instant_w = watts(v[1]);
  return p;
}

std::optional<std::vector<NvmlLibrary::GpuState::Process>> NvmlLibrary::compute_processes(
    nvmlDevice_t handle, std::vector<std::string>& errors) const {
  // The list can grow between the sizing call and the reading one: a few tries with room to spare.
  std::vector<nvmlProcessInfo_t> buf(16);
  for (int attempt = 0; attempt < 4; ++attempt) {
    unsigned count = static_cast<unsigned>(buf.size());
    const nvmlReturn_t rc = device_get_compute_processes(handle, &count, buf.data());
    if (rc == NVML_ERROR_INSUFFICIENT_SIZE) {
      buf.resize(count + 8);
      continue;
    }
    if (rc != NVML_SUCCESS) {
      errors.push_back("compute_processes: " + error_string(rc));
      return std::nullopt;
    }
    std::vector<GpuState::Process> out;
    for (unsigned i = 0; i < count && i < buf.size(); ++i) {
      GpuState::Process p;
      p.pid = buf[i].pid;
      if (buf[i].usedGpuMemory != ~0ULL) p.used_memory_mib = buf[i].usedGpuMemory / (1024.0 * 1024.0);
      out.push_back(p);
    }
    return out;
  }
  errors.push_back("compute_processes: the list kept growing while it was read");
  return std::nullopt;
}

nlohmann::json NvmlLibrary::GpuState::to_json() const {
  nlohmann::json processes = nullptr;
  if (compute_processes) {
    processes = nlohmann::json::array();
    for (const auto& p : *compute_processes)
      processes.push_back({{"pid", p.pid}, {"used_memory_mib", or_null(p.used_memory_mib)}});
  }
  return {{"index", index},
          {"name", name},
          {"uuid", uuid},
          {"sm_clock_mhz", or_null(sm_clock_mhz)},
          {"mem_clock_mhz", or_null(mem_clock_mhz)},
          {"persistence_mode", persistence_mode},
          {"compute_mode", compute_mode},
          {"mig_mode", mig_mode},
          {"power_limit_w", or_null(power_limit_w)},
          {"temperature_c", or_null(temperature_c)},
          {"throttle_reasons", throttle_reasons},
          {"compute_processes", processes},
          {"errors", errors}};
}

std::string lost_gpu_text(const NvmlLibrary::Gpu& gpu) {
  return "gpu" + std::to_string(gpu.index) + " (" + (gpu.name.empty() ? "name unknown" : gpu.name) + ", " +
         (gpu.uuid.empty() ? "UUID unknown" : gpu.uuid) + ") is lost (NVML_ERROR_GPU_IS_LOST)";
}

std::optional<double> gpu_temperature_c(unsigned raw_c) {
  if (raw_c > kMaxGpuTemperatureC) return std::nullopt;
  return static_cast<double>(raw_c);
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
