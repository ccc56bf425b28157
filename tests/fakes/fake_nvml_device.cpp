// fake_nvml_device.cpp: see fake_nvml_device.h.
#include "tests/fakes/fake_nvml_device.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>

namespace fake_nvml {

State& state() {
  static State s;
  return s;
}

TimeHooks& time_hooks() {
  static TimeHooks hooks;  // outside State: a new config (load_config) keeps the test's clock
  return hooks;
}

void start_time() {
  State& s = state();
  const TimeHooks& h = time_hooks();
  if (h.steady_us) {
    s.t0_us = h.steady_us(h.ctx);
    s.t0_unix_s = static_cast<double>(h.unix_us(h.ctx)) / 1e6;
    return;
  }
  s.t0 = Clock::now();
  s.t0_unix_s = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// "self", "parent" or a number.
unsigned pid_of(const nlohmann::json& pid) {
  if (pid.is_string()) return static_cast<unsigned>(pid == "parent" ? getppid() : getpid());
  return pid.get<unsigned>();
}

// A device's schedules over time (power, memory, temperature, throttling, energy steps).
void read_schedules(const nlohmann::json& d, FakeDevice& f) {
  if (d.contains("power_w")) f.schedule = {{0.0, d["power_w"].get<double>()}};
  if (d.contains("power_schedule")) {
    f.schedule.clear();
    for (const auto& p : d["power_schedule"]) f.schedule.emplace_back(p[0].get<double>(), p[1].get<double>());
  }
  for (const auto& p : d.value("energy_steps", nlohmann::json::array()))
    f.energy_steps.emplace_back(p[0].get<double>(), p[1].get<double>());
  for (const auto& p : d.value("memory_schedule", nlohmann::json::array()))
    f.memory_schedule.emplace_back(p[0].get<double>(), p[1].get<unsigned long long>());
  for (const auto& p : d.value("temperature_schedule", nlohmann::json::array()))
    f.temperature_schedule.emplace_back(p[0].get<double>(), p[1].get<double>());
  for (const auto& p : d.value("throttle_schedule", nlohmann::json::array()))
    f.throttle_schedule.emplace_back(p[0].get<double>(), p[1].get<unsigned long long>());
}

// The processes on a device: their memory, and their SM utilisation.
void read_processes(const nlohmann::json& d, FakeDevice& f) {
  for (const auto& p : d.value("compute_processes", nlohmann::json::array())) {
    const auto& mib = p.contains("used_memory_mib") ? p["used_memory_mib"] : nlohmann::json(0);
    const unsigned long long bytes =
        mib.is_null() ? ~0ULL : static_cast<unsigned long long>(mib.get<double>() * 1048576.0);
    f.compute_processes.push_back({pid_of(p["pid"]), bytes, 0xFFFFFFFFu, 0xFFFFFFFFu});
  }
  if (d.contains("process_utilization")) {
    const auto& u = d["process_utilization"];
    f.util_period_s = u.value("sample_period_s", f.util_period_s);
    for (const auto& p : u.value("processes", nlohmann::json::array()))
      f.util_processes.emplace_back(pid_of(p["pid"]), p.value("sm_util", 0u));
  }
}

// The faults a device's calls return (NVML error codes; 0 = none) and when it is lost.
void read_faults(const nlohmann::json& d, FakeDevice& f) {
  f.compute_processes_error = d.value("compute_processes_error", 0);
  f.power_error = d.value("power_error", 0);
  f.lost_after_s = d.value("lost_after_s", -1.0);
  f.lost_file = d.value("lost_file", std::string());
  f.temperature_error = d.value("temperature_error", 0);
  f.temperature_error_after_s = d.value("temperature_error_after_s", 0.0);
  f.set_error = d.value("set_error", 0);
  f.util_error = d.value("process_utilization_error", 0);
}

FakeDevice device_of(const nlohmann::json& d) {
  FakeDevice f;
  f.name = d.value("name", f.name);
  f.uuid = d.value("uuid", f.uuid);
  f.energy_counter = d.value("energy_counter", true);
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
  f.enforce_offset_w = d.value("enforce_offset_w", 0.0);
  f.memory_total_bytes = d.value("memory_total_bytes", f.memory_total_bytes);
  f.memory_used_bytes = d.value("memory_used_bytes", f.memory_used_bytes);
  f.power_average_1s = d.value("power_reading", std::string("instant")) == "average_1s";
  f.field_values = d.value("field_values", true);
  f.power_average_field = d.value("power_average_field", true);
  f.power_reading_scale = d.value("power_reading_scale", 1.0);
  read_schedules(d, f);
  read_processes(d, f);
  read_faults(d, f);
  return f;
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
  for (const auto& d : j.value("devices", nlohmann::json::array())) s.devices.push_back(device_of(d));
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

bool is_lost(const FakeDevice& d) {
  if (!d.lost_file.empty() && access(d.lost_file.c_str(), F_OK) == 0) return true;
  return d.lost_after_s >= 0 && seconds_since_init() >= d.lost_after_s;
}

// Seconds since init, rounded down to the device's last update tick. The tick at t itself counts: a
// test's clock lands on ticks exactly, where t / period can fall a rounding short of the whole number.
double sensor_time_s(const FakeDevice& d) {
  const double t = seconds_since_init();
  return d.update_period_s > 0 ? std::floor(t / d.update_period_s + 1e-9) * d.update_period_s : t;
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

double seconds_since_init() {
  const TimeHooks& h = time_hooks();
  if (h.steady_us) return static_cast<double>(h.steady_us(h.ctx) - state().t0_us) / 1e6;
  return std::chrono::duration<double>(Clock::now() - state().t0).count();
}

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

}  // namespace fake_nvml
