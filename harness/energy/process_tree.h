// process_tree.h: the CPU time of the measured process tree (balerbench, every process it started
// and their descendants) and the busy CPU time of the whole host, from /proc: the basis of the CPU
// energy attributable to a run (T7 of docs/reference_tables.md; AIPowerMeter's per_process_cpu_power
// is RAPL power x the process's share of the host's CPU time).
//
// Each read walks the tree from its root through the kernel's children lists
// (/proc/PID/task/TID/children) and adds user + system time of every process in it, with the time of
// the children each has reaped (cutime, cstime), so a child's time is counted once whether it is
// running, a zombie, or reaped by a process of the tree. A process of the tree reaped by one outside it
// takes its time along; the sum is kept monotonic. Where the children lists are missing (a kernel
// without CONFIG_PROC_CHILDREN) every /proc/PID/stat is read to find the parents, which costs more,
// and describe() says so. Every pid seen in the tree is remembered, so that a GPU's per-process
// samples (NVML reports pids) can be matched to processes that have ended since.
//
// Figures are in clock ticks (USER_HZ, usually 100 per second): tick_s() is their resolution.
#pragma once

#include <nlohmann/json.hpp>

#include <set>
#include <string>

namespace balerbench {

// Busy and total ticks of all CPUs from the first line of /proc/stat (busy: user, nice, system, irq,
// softirq, steal; total adds idle and iowait); total 0 when unreadable.
struct CpuTimes {
  unsigned long long busy = 0, total = 0;
};
CpuTimes read_proc_stat(const std::string& proc_root);

struct ProcessCpu {
  bool valid = false;
  double tree_cpu_s = 0;   // user + system CPU time of the tree since the first read (monotonic)
  double busy_cpu_s = 0;   // busy CPU time of the host since the first read: user, nice, system, irq,
                           // softirq and steal of all CPUs (guests count inside user)
  long long processes = 0;  // processes in the tree at this read
  double tick_s = 0;        // resolution of both sums
};

class ProcessTree {
 public:
  // `proc_root`: the proc file system ("/proc"; tests give a fake tree). `root_pid`: the tree's root
  // (0: this process).
  explicit ProcessTree(std::string proc_root = "/proc", int root_pid = 0);

  // Reads the tree and the host now. Not thread-safe: the Sampler serialises reads with the meters'.
  // Invalid, with unavailable_reason() set, when /proc/stat or the root's stat cannot be read.
  ProcessCpu read();
  // Whether `pid` was in the tree at any read so far.
  bool contains(unsigned pid) const { return seen_.count(pid) > 0; }
  int root_pid() const { return root_pid_; }
  double tick_s() const { return tick_s_; }
  const std::string& unavailable_reason() const { return reason_; }
  nlohmann::json describe() const;

 private:
  // read()'s parts: every process's stat when the kernel keeps no children lists (scanned_), else
  // one process's stat and children; the walk down the tree from the root, summing its ticks.
  struct Walk;
  void scan_every_process(Walk& w) const;
  void read_children(int pid, Walk& w) const;
  void walk(Walk& w);

  std::string proc_root_;
  int root_pid_;
  double tick_s_;
  std::string reason_;
  bool scanned_ = false;      // the children lists were missing: parents came from every stat
  bool started_ = false;
  double tree_raw_s_ = 0, busy_raw_s_ = 0;   // the last raw sums
  double tree_s_ = 0, busy_s_ = 0;           // monotonic, since the first read
  std::set<unsigned> seen_;
};

// The share of the machine's CPUs a process tree used between calls (cpu_estimate's process mode; the
// simulated GPU's load).
class ProcessTreeUsage {
 public:
  ProcessTreeUsage(std::string proc_root, int pid, int cpus);
  // The tree's CPU seconds since the last call / (dt_s x cpus), in [0, 1]; the last share when dt_s is 0.
  double share(double dt_s);

 private:
  ProcessTree tree_;
  int cpus_;
  double last_cpu_s_ = 0, last_share_ = 0;
};

}  // namespace balerbench
