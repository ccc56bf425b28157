// cpu_load.h: how busy the CPUs are with processes other than this one, over a short window: the
// host's busy time from /proc/stat less this process's own CPU time (/proc/PID/stat), in cores, with
// the hypervisor's steal time and the other processes that used the most. A benchmark that shares
// its cores measures its neighbours too (doctor's hazard list, harness/energy/hazards.h).
//
// Figures come from the kernel's tick counts alone: the window is the ticks that passed on all CPUs
// divided by the number of CPUs, and cores = ticks / window ticks. Tests give a fake proc tree and a
// sleeper that writes the second snapshot, and get exact figures whatever the wall clock does.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace balerbench {

// One other process's CPU use over the window (all its threads).
struct ProcessCpuUse {
  int pid = 0;
  std::string name;  // comm, from /proc/PID/stat
  double cores = 0;
};

struct CpuLoad {
  bool valid = false;
  std::string reason;      // why not valid: an unreadable /proc/stat, no time passed
  int cpus = 0;            // the cpuN lines of /proc/stat
  double window_s = 0;     // the time the two snapshots span, per CPU
  double other_cores = 0;  // user, nice, system, irq and softirq time of all CPUs less this process's, / window
  double steal_cores = 0;  // time the hypervisor ran something else on this VM's vCPUs, / window
  std::vector<ProcessCpuUse> top;  // other processes by CPU use in the window, most first (at most 3)
  nlohmann::json to_json() const;
};

// Waits `seconds` between the two snapshots (tests: writes the second one).
using Sleeper = std::function<void(double seconds)>;

// `proc_root`: the proc file system ("/proc"; tests give a fake tree). `sleep`: empty to really sleep.
// `self_pid`: the process whose own time is not "other" (0: this one).
CpuLoad sample_cpu_load(const std::string& proc_root = "/proc", double window_s = 0.5, const Sleeper& sleep = {},
                        int self_pid = 0);

// A sample begun now and finished later, so that its window can overlap other work of this process
// (its own time is excluded anyway): `train` begins one as it starts and finishes it before training,
// where its hazard block needs it, and waits only for what is left of the window.
class CpuLoadSample {
 public:
  explicit CpuLoadSample(const std::string& proc_root = "/proc", int self_pid = 0);
  // Sleeps what is left of `min_window_s` since the sample began (all of it with a test's `sleep`),
  // then takes the second snapshot.
  CpuLoad finish(double min_window_s, const Sleeper& sleep = {}) const;

 private:
  struct Start;
  std::shared_ptr<const Start> start_;
};

}  // namespace balerbench
