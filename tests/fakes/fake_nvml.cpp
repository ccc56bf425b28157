// fake_nvml.cpp: a fake libnvidia-ml.so.1 for tests, loaded through
// BALERBENCH_NVML_LIB. It implements the NVML entry points of
// harness/energy/nvml_api.h with the real signatures, scripted by the JSON
// file named in FAKE_NVML_CONFIG, read at nvmlInit:
//
//   {"init_error": 0, "driver_version": "550.54.15",
//    "devices": [{"name": "Fake H100", "uuid": "GPU-...", "energy_counter": true,
//                 "power_schedule": [[0, 100], [0.5, 300]],   // [t_s since init, W], piecewise constant
//                 "update_period_s": 0.1,                      // sensor/counter refresh (0 = continuous)
//                 "energy_start_mj": 1000000, "power_limit_w": 700, "default_limit_w": 700,
//                 "min_limit_w": 200, "max_limit_w": 700, "temperature_c": 41,
//                 "sm_clock_mhz": 1980, "mem_clock_mhz": 2619, "throttle_reasons": 4, "power_error": 0,
//                 "persistence_mode": true, "compute_mode": 0,  // NVML_COMPUTEMODE_*
//                 "mig_mode": -1,          // 0/1: nvmlDeviceGetMigMode's current mode; -1: NOT_SUPPORTED
//                 "compute_processes": [{"pid": "self", "used_memory_mib": 500},
//                                       {"pid": 4000001, "used_memory_mib": 2048}],
//                 "compute_processes_error": 0,
//                 "memory_total_bytes": 85899345920, "memory_used_bytes": 1073741824,
//                 "memory_schedule": [[0, 1073741824], [0.5, 4294967296]],  // [t_s, bytes used], overrides
//                 "lost_after_s": -1,     // >= 0: the GPU falls off the bus then (GPU_IS_LOST)
//                 "lost_file": "/tmp/x",  // the GPU is lost while this file exists (a test can lose it
//                                         // between a sweep's trials, whatever the process's init count)
//                 "energy_steps": [[1.5, -300]],  // [t_s, J]: the counter jumps by J from t_s on (negative:
//                                                 // it steps back, as a driver reset or a bug can make it)
//                 "temperature_error": 0,         // nvmlDeviceGetTemperature fails with this NVML code...
//                 "temperature_error_after_s": 0, // ... from this many seconds after init on
//                 "temperature_schedule": [[0, 70], [2, 45]],   // [t_s, C], linear between points, then held
//                 "throttle_schedule": [[0, 1], [0.5, 4]],      // [t_s, reason bits], piecewise constant
//                 "power_reading": "instant",  // or "average_1s": nvmlDeviceGetPowerUsage averages the
//                                              // schedule over the last second, as on Ampere and newer
//                 "field_values": true,        // nvmlDeviceGetFieldValues answers POWER_INSTANT (186), and
//                 "power_average_field": true, // POWER_AVERAGE (185) unless false (GA100 and older)
//                 "power_reading_scale": 1.0,  // nvmlDeviceGetPowerUsage x this (a reading that disagrees
//                                              // with the counter, as zeus#181 saw: 187 J against 327 J)
//                 "process_utilization": {"sample_period_s": 0.1,   // the driver's per-process samples
//                                         "processes": [{"pid": "self", "sm_util": 60},
//                                                       {"pid": 4000000, "sm_util": 20}]}}]}
//
// Per-process utilisation: a sample per process with non-zero smUtil at every tick of
// sample_period_s since init, stamped with the wall-clock microseconds of the tick; "self" is the
// process that loaded the fake (balerbench), "parent" its parent. nvmlDeviceGetProcessUtilization
// returns those newer than lastSeenTimeStamp, as NVML does ("process_utilization_error" makes it
// fail, e.g. 3 for NOT_SUPPORTED).
//
// Compute processes: nvmlDeviceGetComputeRunningProcesses_v3 (and _v2) lists "compute_processes"
// ("self" and "parent" as above); a used_memory_mib of null is NVML_VALUE_NOT_AVAILABLE.
//
// The energy counter is the exact integral of the schedule up to the last
// update tick, so tests can check measured energies to any tolerance.
//
// Power-limit control: nvmlDeviceSetPowerManagementLimit checks the
// constraints (NVML_ERROR_INVALID_ARGUMENT outside) and "set_error" (e.g. 4,
// NVML_ERROR_NO_PERMISSION, as without root); "enforce_offset_w" makes the
// enforced limit differ from the one set. Each set call is appended to the
// file named by FAKE_NVML_SET_LOG as "UUID MILLIWATTS RESULT", and the limits
// in force persist across processes in the JSON file named by FAKE_NVML_STATE
// ({"UUID": watts}), as a real GPU's do when the process that set them dies.
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

namespace {

using Clock = std::chrono::steady_clock;

struct FakeDevice {
  std::string name = "Fake GPU", uuid = "GPU-00000000-0000-0000-0000-000000000000";
  bool energy_counter = true;
  std::vector<std::pair<double, double>> schedule = {{0, 100}};
  double update_period_s = 0;
  unsigned long long energy_start_mj = 0;
  double power_limit_w = 300, default_limit_w = 300, min_limit_w = 100, max_limit_w = 300;
  unsigned temperature_c = 40, sm_clock_mhz = 1500, mem_clock_mhz = 2619;
  unsigned long long throttle_reasons = 0;
  bool persistence_mode = true;
  int compute_mode = NVML_COMPUTEMODE_DEFAULT;
  int mig_mode = -1;  // -1: NOT_SUPPORTED
  std::vector<nvmlProcessInfo_t> compute_processes;
  int compute_processes_error = 0;
  int power_error = 0;
  int set_error = 0;
  double lost_after_s = -1;  // >= 0: every query of the device fails with GPU_IS_LOST from then on
  std::string lost_file;     // non-empty: every query fails with GPU_IS_LOST while this file exists
  std::vector<std::pair<double, double>> energy_steps;  // [t_s, J]: the counter jumps by J from t_s on
  int temperature_error = 0;
  double temperature_error_after_s = 0;
  double enforce_offset_w = 0;
  unsigned long long memory_total_bytes = 80ULL << 30, memory_used_bytes = 512ULL << 20;
  std::vector<std::pair<double, unsigned long long>> memory_schedule;  // [t_s since init, bytes used]
  std::vector<std::pair<double, double>> temperature_schedule;        // [t_s, C], linear between points
  std::vector<std::pair<double, unsigned long long>> throttle_schedule;  // [t_s, reason bits]
  bool power_average_1s = false;  // nvmlDeviceGetPowerUsage is the last second's average
  bool field_values = true, power_average_field = true;
  double power_reading_scale = 1.0;
  double util_period_s = 0.1;
  std::vector<std::pair<unsigned, unsigned>> util_processes;  // pid, smUtil
  int util_error = 0;
};

struct State {
  int init_count = 0;
  int init_error = 0;
  std::string driver_version = "000.00";
  std::vector<FakeDevice> devices;
  Clock::time_point t0;
  double t0_unix_s = 0;
};

State& state() {
  static State s;
  return s;
}

// "self", "parent" or a number.
unsigned pid_of(const nlohmann::json& pid) {
  if (pid.is_string()) return static_cast<unsigned>(pid == "parent" ? getppid() : getpid());
  return pid.get<unsigned>();
}

void load_config() {
  State& s = state();
  s = State{};
  const char* path = std::getenv("FAKE_NVML_CONFIG");
  if (!path) return;
  std::ifstream in(path);
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded()) return;
  s.init_error = j.value("init_error", 0);
  s.driver_version = j.value("driver_version", s.driver_version);
  for (const auto& d : j.value("devices", nlohmann::json::array())) {
    FakeDevice f;
    f.name = d.value("name", f.name);
    f.uuid = d.value("uuid", f.uuid);
    f.energy_counter = d.value("energy_counter", true);
    if (d.contains("power_w")) f.schedule = {{0.0, d["power_w"].get<double>()}};
    if (d.contains("power_schedule")) {
      f.schedule.clear();
      for (const auto& p : d["power_schedule"]) f.schedule.emplace_back(p[0].get<double>(), p[1].get<double>());
    }
    f.update_period_s = d.value("update_period_s", 0.0);
    f.energy_start_mj = d.value("energy_start_mj", 0ULL);
    f.power_limit_w = d.value("power_limit_w", f.power_limit_w);
    f.default_limit_w = d.value("default_limit_w", f.default_limit_w);
    f.min_limit_w = d.value("min_limit_w", f.min_limit_w);
    f.max_limit_w = d.value("max_limit_w", f.max_limit_w);
    f.temperature_c = d.value("temperature_c", f.temperature_c);
    f.sm_clock_mhz = d.value("sm_clock_mhz", f.sm_clock_mhz);
    f.mem_clock_mhz = d.value("mem_clock_mhz", f.mem_clock_mhz);
    f.throttle_reasons = d.value("throttle_reasons", 0ULL);
    f.persistence_mode = d.value("persistence_mode", f.persistence_mode);
    f.compute_mode = d.value("compute_mode", f.compute_mode);
    f.mig_mode = d.value("mig_mode", f.mig_mode);
    for (const auto& p : d.value("compute_processes", nlohmann::json::array())) {
      const auto& mib = p.contains("used_memory_mib") ? p["used_memory_mib"] : nlohmann::json(0);
      const unsigned long long bytes =
          mib.is_null() ? ~0ULL : static_cast<unsigned long long>(mib.get<double>() * 1048576.0);
      f.compute_processes.push_back({pid_of(p["pid"]), bytes, 0xFFFFFFFFu, 0xFFFFFFFFu});
    }
    f.compute_processes_error = d.value("compute_processes_error", 0);
    f.power_error = d.value("power_error", 0);
    f.lost_after_s = d.value("lost_after_s", -1.0);
    f.lost_file = d.value("lost_file", std::string());
    for (const auto& p : d.value("energy_steps", nlohmann::json::array()))
      f.energy_steps.emplace_back(p[0].get<double>(), p[1].get<double>());
    f.temperature_error = d.value("temperature_error", 0);
    f.temperature_error_after_s = d.value("temperature_error_after_s", 0.0);
    f.set_error = d.value("set_error", 0);
    f.enforce_offset_w = d.value("enforce_offset_w", 0.0);
    f.memory_total_bytes = d.value("memory_total_bytes", f.memory_total_bytes);
    f.memory_used_bytes = d.value("memory_used_bytes", f.memory_used_bytes);
    for (const auto& p : d.value("memory_schedule", nlohmann::json::array()))
      f.memory_schedule.emplace_back(p[0].get<double>(), p[1].get<unsigned long long>());
    for (const auto& p : d.value("temperature_schedule", nlohmann::json::array()))
      f.temperature_schedule.emplace_back(p[0].get<double>(), p[1].get<double>());
    for (const auto& p : d.value("throttle_schedule", nlohmann::json::array()))
      f.throttle_schedule.emplace_back(p[0].get<double>(), p[1].get<unsigned long long>());
    f.power_average_1s = d.value("power_reading", std::string("instant")) == "average_1s";
    f.field_values = d.value("field_values", true);
    f.power_average_field = d.value("power_average_field", true);
    f.power_reading_scale = d.value("power_reading_scale", 1.0);
    if (d.contains("process_utilization")) {
      const auto& u = d["process_utilization"];
      f.util_period_s = u.value("sample_period_s", f.util_period_s);
      for (const auto& p : u.value("processes", nlohmann::json::array())) {
        f.util_processes.emplace_back(pid_of(p["pid"]), p.value("sm_util", 0u));
      }
    }
    f.util_error = d.value("process_utilization_error", 0);
    s.devices.push_back(f);
  }
  if (const char* state_path = std::getenv("FAKE_NVML_STATE")) {
    std::ifstream st(state_path);
    const nlohmann::json limits = nlohmann::json::parse(st, nullptr, false);
    if (limits.is_object())
      for (auto& f : s.devices)
        if (limits.contains(f.uuid)) f.power_limit_w = limits[f.uuid].get<double>();
  }
}

void save_limits() {
  const char* state_path = std::getenv("FAKE_NVML_STATE");
  if (!state_path) return;
  nlohmann::json limits = nlohmann::json::object();
  for (const auto& f : state().devices) limits[f.uuid] = f.power_limit_w;
  const std::string tmp = std::string(state_path) + ".tmp";
  std::ofstream(tmp) << limits.dump();
  std::rename(tmp.c_str(), state_path);
}

void log_set(const FakeDevice& d, unsigned mw, int result) {
  const char* log_path = std::getenv("FAKE_NVML_SET_LOG");
  if (!log_path) return;
  std::ofstream(log_path, std::ios::app) << d.uuid << " " << mw << " " << result << "\n";
}

FakeDevice* device(nvmlDevice_t h) {
  const auto i = reinterpret_cast<std::uintptr_t>(h);
  State& s = state();
  if (i == 0 || i > s.devices.size()) return nullptr;
  return &s.devices[i - 1];
}

bool is_lost(const FakeDevice& d) {
  if (!d.lost_file.empty() && access(d.lost_file.c_str(), F_OK) == 0) return true;
  return d.lost_after_s >= 0 && std::chrono::duration<double>(Clock::now() - state().t0).count() >= d.lost_after_s;
}

// Seconds since init, rounded down to the device's last update tick.
double sensor_time_s(const FakeDevice& d) {
  const double t = std::chrono::duration<double>(Clock::now() - state().t0).count();
  return d.update_period_s > 0 ? std::floor(t / d.update_period_s) * d.update_period_s : t;
}

double power_at(const FakeDevice& d, double t) {
  double p = d.schedule.front().second;
  for (const auto& [ts, w] : d.schedule)
    if (ts <= t) p = w;
  return p;
}

double energy_j_until(const FakeDevice& d, double t) {
  double e = 0;
  for (std::size_t i = 0; i < d.schedule.size(); ++i) {
    const double a = d.schedule[i].first;
    const double b = i + 1 < d.schedule.size() ? d.schedule[i + 1].first : t;
    if (t <= a) break;
    e += d.schedule[i].second * (std::min(b, t) - a);
  }
  return e;
}

double seconds_since_init() { return std::chrono::duration<double>(Clock::now() - state().t0).count(); }

// The schedule's temperature at t: linear between its points, held before the first and after the last.
unsigned temperature_at(const FakeDevice& d, double t) {
  const auto& s = d.temperature_schedule;
  if (s.empty()) return d.temperature_c;
  if (t <= s.front().first) return static_cast<unsigned>(std::lround(s.front().second));
  for (std::size_t i = 1; i < s.size(); ++i)
    if (t <= s[i].first) {
      const double f = (t - s[i - 1].first) / (s[i].first - s[i - 1].first);
      return static_cast<unsigned>(std::lround(s[i - 1].second + f * (s[i].second - s[i - 1].second)));
    }
  return static_cast<unsigned>(std::lround(s.back().second));
}

unsigned long long throttle_at(const FakeDevice& d, double t) {
  unsigned long long mask = d.throttle_reasons;
  for (const auto& [ts, bits] : d.throttle_schedule)
    if (ts <= t) mask = bits;
  return mask;
}

// The schedule's mean power over [t - 1, t] (from its start when t < 1): NVML's 1 s average.
double average_power_1s(const FakeDevice& d, double t) {
  const double from = std::max(0.0, t - 1.0);
  if (t <= from) return power_at(d, t);
  return (energy_j_until(d, t) - energy_j_until(d, from)) / (t - from);
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

nvmlReturn_t nvmlInit_v2(void) {
  if (state().init_count == 0) load_config();
  if (state().init_error != 0) return state().init_error;
  if (state().init_count++ == 0) {
    state().t0 = Clock::now();
    state().t0_unix_s = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  }
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
  const double now = std::chrono::duration<double>(Clock::now() - state().t0).count();
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
  const double t = std::chrono::duration<double>(Clock::now() - state().t0).count();
  for (const auto& [ts, bytes] : d->memory_schedule)
    if (ts <= t) used = bytes;
  m->total = d->memory_total_bytes;
  m->used = used;
  m->free = d->memory_total_bytes - used;
  return NVML_SUCCESS;
}

}  // extern "C"
