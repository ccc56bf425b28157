// fake_nvml.cpp: a fake libnvidia-ml.so.1 for tests, loaded through BALERBENCH_NVML_LIB: the NVML
// entry points of harness/energy/nvml_api.h with the real signatures, answering from the devices that
// FAKE_NVML_CONFIG scripts (fake_nvml_device.h says how).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <unistd.h>
#include <string>
#include <vector>

#include "harness/energy/nvml_api.h"
#include "tests/fakes/fake_nvml_device.h"

namespace {

using namespace fake_nvml;

FakeDevice* device(nvmlDevice_t h) {
  const auto i = reinterpret_cast<std::uintptr_t>(h);
  State& s = state();
  if (i == 0 || i > s.devices.size()) return nullptr;
  return &s.devices[i - 1];
}

nvmlReturn_t copy_string(const std::string& s, char* buf, unsigned n) {
  if (!buf || n == 0) return NVML_ERROR_INVALID_ARGUMENT;
  std::strncpy(buf, s.c_str(), n - 1);
  buf[n - 1] = '\0';
  return NVML_SUCCESS;
}

#define FAKE_DEVICE_OR_FAIL(h)                          \
  FakeDevice* d = device(h);                            \
  if (state().init_count <= 0) return NVML_ERROR_UNINITIALIZED; \
  if (!d) return NVML_ERROR_INVALID_ARGUMENT;           \
  if (is_lost(*d)) return NVML_ERROR_GPU_IS_LOST

}  // namespace

extern "C" {

// Not NVML's: tests run the fake on their FakeClock (fake_nvml_env.h); null hooks restore the real
// clocks. Set before nvmlInit: time zero is read there.
void fake_nvml_set_clock(long long (*steady_us)(const void*), long long (*unix_us)(const void*), const void* ctx) {
  time_hooks() = TimeHooks{steady_us, unix_us, ctx};
}

nvmlReturn_t nvmlInit_v2(void) {
  if (state().init_count == 0) load_config();
  if (state().init_error != 0) return state().init_error;
  if (state().init_count++ == 0) start_time();
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void) {
  if (state().init_count <= 0) return NVML_ERROR_UNINITIALIZED;
  --state().init_count;
  return NVML_SUCCESS;
}

const char* nvmlErrorString(nvmlReturn_t r) {
  switch (r) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    default: return "Unknown Error";
  }
}

nvmlReturn_t nvmlSystemGetDriverVersion(char* buf, unsigned n) { return copy_string(state().driver_version, buf, n); }

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned* count) {
  if (state().init_count <= 0) return NVML_ERROR_UNINITIALIZED;
  *count = static_cast<unsigned>(state().devices.size());
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t* h) {
  if (state().init_count <= 0) return NVML_ERROR_UNINITIALIZED;
  if (i >= state().devices.size()) return NVML_ERROR_INVALID_ARGUMENT;
  *h = reinterpret_cast<nvmlDevice_t>(static_cast<std::uintptr_t>(i + 1));
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t h, char* buf, unsigned n) {
  FAKE_DEVICE_OR_FAIL(h);
  return copy_string(d->name, buf, n);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t h, char* buf, unsigned n) {
  FAKE_DEVICE_OR_FAIL(h);
  return copy_string(d->uuid, buf, n);
}

nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t h, unsigned long long* mj) {
  FAKE_DEVICE_OR_FAIL(h);
  if (!d->energy_counter) return NVML_ERROR_NOT_SUPPORTED;
  const double t = sensor_time_s(*d);
  double j = energy_j_until(*d, t);
  for (const auto& [ts, step_j] : d->energy_steps)
    if (ts <= t) j += step_j;
  const double mj_now = static_cast<double>(d->energy_start_mj) + j * 1e3;
  *mj = mj_now > 0 ? static_cast<unsigned long long>(mj_now) : 0;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t h, unsigned* mw) {
  FAKE_DEVICE_OR_FAIL(h);
  if (d->power_error) return d->power_error;
  const double t = sensor_time_s(*d);
  *mw = static_cast<unsigned>((d->power_average_1s ? average_power_1s(*d, t) : power_at(*d, t)) *
                              d->power_reading_scale * 1e3);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t h, int count, nvmlFieldValue_t* values) {
  FAKE_DEVICE_OR_FAIL(h);
  if (!d->field_values) return NVML_ERROR_NOT_SUPPORTED;
  const double t = sensor_time_s(*d);
  for (int i = 0; i < count; ++i) {
    nvmlFieldValue_t& v = values[i];
    v.valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
    v.nvmlReturn = NVML_SUCCESS;
    if (v.fieldId == NVML_FI_DEV_POWER_INSTANT) v.value.uiVal = static_cast<unsigned>(power_at(*d, t) * 1e3);
    else if (v.fieldId == NVML_FI_DEV_POWER_AVERAGE && d->power_average_field)
      v.value.uiVal = static_cast<unsigned>(average_power_1s(*d, t) * 1e3);
    else v.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
  }
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t h, unsigned* mw) {
  FAKE_DEVICE_OR_FAIL(h);
  *mw = static_cast<unsigned>(std::lround((d->power_limit_w + d->enforce_offset_w) * 1e3));
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t h, unsigned* mw) {
  FAKE_DEVICE_OR_FAIL(h);
  *mw = static_cast<unsigned>(std::lround(d->power_limit_w * 1e3));
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceSetPowerManagementLimit(nvmlDevice_t h, unsigned mw) {
  FAKE_DEVICE_OR_FAIL(h);
  int rc = NVML_SUCCESS;
  if (d->set_error) rc = d->set_error;
  else if (mw < std::lround(d->min_limit_w * 1e3) || mw > std::lround(d->max_limit_w * 1e3)) rc = NVML_ERROR_INVALID_ARGUMENT;
  log_set(*d, mw, rc);
  if (rc != NVML_SUCCESS) return rc;
  d->power_limit_w = mw / 1e3;
  save_limits();
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_t h, unsigned* min_mw, unsigned* max_mw) {
  FAKE_DEVICE_OR_FAIL(h);
  *min_mw = static_cast<unsigned>(d->min_limit_w * 1e3);
  *max_mw = static_cast<unsigned>(d->max_limit_w * 1e3);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t h, unsigned* mw) {
  FAKE_DEVICE_OR_FAIL(h);
  *mw = static_cast<unsigned>(d->default_limit_w * 1e3);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t h, int sensor, unsigned* c) {
  FAKE_DEVICE_OR_FAIL(h);
  if (sensor != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
  if (d->temperature_error && seconds_since_init() >= d->temperature_error_after_s) return d->temperature_error;
  *c = temperature_at(*d, seconds_since_init());
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t h, int type, unsigned* mhz) {
  FAKE_DEVICE_OR_FAIL(h);
  if (type == NVML_CLOCK_SM) *mhz = d->sm_clock_mhz;
  else if (type == NVML_CLOCK_MEM) *mhz = d->mem_clock_mhz;
  else return NVML_ERROR_NOT_SUPPORTED;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t h, int* mode) {
  FAKE_DEVICE_OR_FAIL(h);
  *mode = d->persistence_mode ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t h, int* mode) {
  FAKE_DEVICE_OR_FAIL(h);
  *mode = d->compute_mode;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t h, unsigned* current, unsigned* pending) {
  FAKE_DEVICE_OR_FAIL(h);
  if (d->mig_mode < 0) return NVML_ERROR_NOT_SUPPORTED;
  *current = *pending = static_cast<unsigned>(d->mig_mode);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t h, unsigned* count, nvmlProcessInfo_t* infos) {
  FAKE_DEVICE_OR_FAIL(h);
  if (!count) return NVML_ERROR_INVALID_ARGUMENT;
  if (d->compute_processes_error) return d->compute_processes_error;
  const auto n = static_cast<unsigned>(d->compute_processes.size());
  if (!infos || *count < n) {
    *count = n;
    return n == 0 ? NVML_SUCCESS : NVML_ERROR_INSUFFICIENT_SIZE;
  }
  std::copy(d->compute_processes.begin(), d->compute_processes.end(), infos);
  *count = n;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t h, unsigned* count, nvmlProcessInfo_t* infos) {
  return nvmlDeviceGetComputeRunningProcesses_v3(h, count, infos);
}

nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t h, unsigned long long* mask) {
  FAKE_DEVICE_OR_FAIL(h);
  *mask = throttle_at(*d, seconds_since_init());
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t h, nvmlProcessUtilizationSample_t* buf, unsigned* count,
                                             unsigned long long last_seen_us) {
  FAKE_DEVICE_OR_FAIL(h);
  if (!count) return NVML_ERROR_INVALID_ARGUMENT;
  if (d->util_error) return d->util_error;
  const double now = seconds_since_init();
  std::vector<nvmlProcessUtilizationSample_t> samples;
  if (d->util_period_s > 0)
    for (long long k = std::max(1LL, static_cast<long long>((last_seen_us * 1e-6 - state().t0_unix_s) / d->util_period_s));
         k * d->util_period_s <= now; ++k) {
      const auto stamp = static_cast<unsigned long long>((state().t0_unix_s + k * d->util_period_s) * 1e6);
      if (stamp <= last_seen_us) continue;
      for (const auto& [pid, sm] : d->util_processes)
        if (sm > 0) samples.push_back({pid, stamp, sm, 0, 0, 0});
    }
  if (samples.empty()) return NVML_ERROR_NOT_FOUND;
  if (!buf || *count < samples.size()) {
    *count = static_cast<unsigned>(samples.size());
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  std::copy(samples.begin(), samples.end(), buf);
  *count = static_cast<unsigned>(samples.size());
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t h, nvmlMemory_t* m) {
  FAKE_DEVICE_OR_FAIL(h);
  unsigned long long used = d->memory_used_bytes;
  const double t = seconds_since_init();
  for (const auto& [ts, bytes] : d->memory_schedule)
    if (ts <= t) used = bytes;
  m->total = d->memory_total_bytes;
  m->used = used;
  m->free = d->memory_total_bytes - used;
  return NVML_SUCCESS;
}

}  // extern "C"
