// fake_nvml_device.h: the devices behind the fake libnvidia-ml.so.1 (fake_nvml.cpp, loaded through
// BALERBENCH_NVML_LIB), scripted by the JSON file named in FAKE_NVML_CONFIG, read at nvmlInit:
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
// Time: seconds since nvmlInit on the steady clock, and Unix time from the system clock, unless a
// test hands the fake its FakeClock (fake_nvml_set_clock, through FakeNvml in fake_nvml_env.h): then
// both are that clock's, and the fake moves only when the test advances it.
//
// Per-process utilisation: a sample per process with non-zero smUtil at every tick of
// sample_period_s since init, stamped with the Unix microseconds of the tick; "self" is the
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
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "harness/energy/nvml_api.h"

namespace fake_nvml {

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
  long long t0_us = 0;  // on a test's clock (TimeHooks)
  double t0_unix_s = 0;
};

State& state();

// A test's clock (fake_nvml_set_clock): steady and Unix microseconds; null: the real clocks.
struct TimeHooks {
  long long (*steady_us)(const void* ctx) = nullptr;
  long long (*unix_us)(const void* ctx) = nullptr;
  const void* ctx = nullptr;
};
TimeHooks& time_hooks();

// Time zero: when the first nvmlInit succeeds.
void start_time();

// "self", "parent" or a number.
unsigned pid_of(const nlohmann::json& pid);

void load_config();

void save_limits();

void log_set(const FakeDevice& d, unsigned mw, int result);

bool is_lost(const FakeDevice& d);

// Seconds since init, rounded down to the device's last update tick.
double sensor_time_s(const FakeDevice& d);

double power_at(const FakeDevice& d, double t);

double energy_j_until(const FakeDevice& d, double t);

double seconds_since_init();

// The schedule's temperature at t: linear between its points, held before the first and after the last.
unsigned temperature_at(const FakeDevice& d, double t);

unsigned long long throttle_at(const FakeDevice& d, double t);

// The schedule's mean power over [t - 1, t] (from its start when t < 1): NVML's 1 s average.
double average_power_1s(const FakeDevice& d, double t);

}  // namespace fake_nvml
