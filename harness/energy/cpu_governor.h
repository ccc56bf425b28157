// cpu_governor.h: the frequency governor of each CPU, from cpufreq in sysfs
// (/sys/devices/system/cpu/cpuN/cpufreq/scaling_governor; the folder is a parameter for tests, and
// BALERBENCH_SYS_CPU_ROOT overrides it for the `balerbench` binary). VMs and containers often expose
// no cpufreq at all: then nothing is known and nothing is a hazard.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

namespace balerbench {

struct CpuGovernors {
  std::string root;                                 // the folder read
  std::string driver;                               // cpu0's scaling_driver ("intel_pstate", "acpi-cpufreq")
  std::map<std::string, std::vector<int>> by_name;  // governor -> the CPUs running it
  bool exposed() const { return !by_name.empty(); }
  int cpus() const;
  nlohmann::json to_json() const;
};

// /sys/devices/system/cpu, or BALERBENCH_SYS_CPU_ROOT when set.
std::string default_sys_cpu_root();
CpuGovernors read_cpu_governors(const std::string& sys_cpu_root);

// "0-3,6" for {0, 1, 2, 3, 6}.
std::string cpu_list_text(const std::vector<int>& cpus);

}  // namespace balerbench
