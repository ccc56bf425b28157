// cpu_activity.h: who else used the CPUs during a window. The host's busy time (/proc/stat), this
// process's own CPU time (its threads and waited-for children), and the steal time a hypervisor
// took, read at a window's two ends; the difference says how much of the host other processes
// used, so a trial disturbed by a neighbour is flagged rather than averaged in (README,
// Comparable results).
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace balerbench {

struct CpuActivity {
  double wall_s = 0;          // a monotonic clock
  double host_busy_s = 0;     // all CPUs: user + nice + system + irq + softirq (guest time is inside user)
  double host_steal_s = 0;    // all CPUs: time the hypervisor ran something else
  double self_cpu_s = 0;      // this process (all threads) and its waited-for children
  std::optional<double> stalled_s;  // StallWatch's total: this process not running though it could have
  int cpus = 1;               // CPUs counted in /proc/stat
  bool valid = false;         // /proc/stat could be read
};
CpuActivity read_cpu_activity(const std::string& proc_root = "/proc");

// Other processes using more than this many CPUs on average make a host busy: a quarter of a core is
// more than a quiet machine's daemons use, and enough to shift a 2-core run's time by several
// percent. One figure for a trial's disturbance, doctor's hazard and the thread calibration's cache.
inline constexpr double kOtherCpuBusyCores = 0.25;

// Thresholds above which a window counts as disturbed: other processes busy on average on more
// than `other_cores` CPUs, steal above `steal_fraction` of the window's CPU time, or this process not
// running (stopped, paused) for more than `stalled_s` and `stalled_fraction` of the window.
struct DisturbanceThresholds {
  double other_cores = kOtherCpuBusyCores;
  double steal_fraction = 0.02;
  double stalled_s = 0.1;
  double stalled_fraction = 0.02;
  // "other processes above 0.25 CPUs on average, steal above 2% of the CPU time, or this process not
  // running for over 0.1 s and 2% of the window"
  std::string text() const;
};

// {"window_s","other_cpu_s","other_cpu_cores","steal_s","steal_fraction","stalled_s","disturbed","threshold",
// "reason"} (stalled_s null when no StallWatch ran); null when either end could not be read.
nlohmann::json disturbance(const CpuActivity& begin, const CpuActivity& end,
                           const DisturbanceThresholds& thresholds = {});

// This process's CPU time (user + system, all threads), in s.
double process_cpu_s();

}  // namespace balerbench
