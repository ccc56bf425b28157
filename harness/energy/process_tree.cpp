// process_tree.cpp: see process_tree.h.
#include "harness/energy/process_tree.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <vector>

#include "harness/base/proc_fs.h"

namespace balerbench {
namespace {

struct ProcStat {
  bool ok = false;
  int ppid = 0;
  double ticks = 0;  // utime + stime + cutime + cstime
};

// A process's parent and its CPU ticks with its waited-for children's (fields 4 and 14-17).
ProcStat read_stat(const std::string& proc_root, int pid) {
  ProcStat st;
  if (pid <= 0) return st;  // not a process (read_pid_stat would read "self")
  const PidStat s = read_pid_stat(proc_root, pid);
  if (!s.has(17) || !s.times_valid) return st;
  st.ppid = static_cast<int>(s.ppid);
  st.ticks = s.utime + s.stime + s.cutime + s.cstime;
  st.ok = true;
  return st;
}

}  // namespace

CpuTimes read_proc_stat(const std::string& proc_root) {
  const HostStat h = read_host_stat(proc_root);
  CpuTimes t;
  if (!h.cpu_first || !h.has_cpu(8)) return t;  // user nice system idle iowait irq softirq steal
  using F = HostStat;
  t.busy = h.cpu[F::kUser] + h.cpu[F::kNice] + h.cpu[F::kSystem] + h.cpu[F::kIrq] + h.cpu[F::kSoftirq] +
           h.cpu[F::kSteal];
  t.total = t.busy + h.cpu[F::kIdle] + h.cpu[F::kIowait];
  return t;
}

ProcessTree::ProcessTree(std::string proc_root, int root_pid)
    : proc_root_(std::move(proc_root)), root_pid_(root_pid > 0 ? root_pid : static_cast<int>(getpid())) {
  const long hz = sysconf(_SC_CLK_TCK);
  tick_s_ = hz > 0 ? 1.0 / static_cast<double>(hz) : 0.01;
}

// The processes of the tree and their CPU ticks, as one read sees them.
struct ProcessTree::Walk {
  std::map<int, std::vector<int>> children;
  std::map<int, double> ticks;
  double tree_ticks = 0;
  long long processes = 0;
};

void ProcessTree::scan_every_process(Walk& w) const {
  for (const auto& pid : proc_numeric_entries(proc_root_)) {
    const int p = std::atoi(pid.c_str());
    const ProcStat st = read_stat(proc_root_, p);
    if (!st.ok) continue;  // gone since the listing
    w.ticks[p] = st.ticks;
    if (p != root_pid_) w.children[st.ppid].push_back(p);
  }
}

void ProcessTree::read_children(int pid, Walk& w) const {
  if (pid != root_pid_) {
    const ProcStat st = read_stat(proc_root_, pid);
    if (!st.ok) return;  // ended between its parent's list and now
    w.ticks[pid] = st.ticks;
  }
  for (const auto& tid : proc_numeric_entries(proc_root_ + "/" + std::to_string(pid) + "/task"))
    for (int child : read_task_children(proc_root_, pid, tid)) w.children[pid].push_back(child);
}

void ProcessTree::walk(Walk& w) {
  std::vector<int> todo = {root_pid_};
  std::set<int> done;
  while (!todo.empty()) {
    const int pid = todo.back();
    todo.pop_back();
    if (!done.insert(pid).second) continue;
    if (!scanned_) read_children(pid, w);
    const auto t = w.ticks.find(pid);
    if (t == w.ticks.end()) continue;
    w.tree_ticks += t->second;
    if (seen_.size() < 65536) seen_.insert(static_cast<unsigned>(pid));
    ++w.processes;
    const auto c = w.children.find(pid);
    if (c != w.children.end()) todo.insert(todo.end(), c->second.begin(), c->second.end());
  }
}

ProcessCpu ProcessTree::read() {
  ProcessCpu out;
  out.tick_s = tick_s_;
  const CpuTimes host = read_proc_stat(proc_root_);
  const double busy = static_cast<double>(host.busy);
  if (host.total == 0) {
    reason_ = "cannot read the host's CPU time from " + proc_root_ + "/stat";
    return out;
  }
  const std::string root = std::to_string(root_pid_);
  const ProcStat root_stat = read_stat(proc_root_, root_pid_);
  if (!root_stat.ok) {
    reason_ = "cannot read " + proc_root_ + "/" + root + "/stat";
    return out;
  }
  // Parents from the kernel's children lists, or from every process's stat where there are none.
  Walk w;
  w.ticks[root_pid_] = root_stat.ticks;
  const std::vector<std::string> root_tasks = proc_numeric_entries(proc_root_ + "/" + root + "/task");
  bool children_lists = false;
  if (!root_tasks.empty()) read_task_children(proc_root_, root_pid_, root_tasks.front(), &children_lists);
  scanned_ = !children_lists;
  if (scanned_) scan_every_process(w);
  walk(w);
  out.processes = w.processes;
  const double tree_raw = w.tree_ticks * tick_s_, busy_raw = busy * tick_s_;
  if (started_) {
    // A process of the tree reaped by one outside it takes its time along: never count backwards.
    tree_s_ += std::max(0.0, tree_raw - tree_raw_s_);
    busy_s_ += std::max(0.0, busy_raw - busy_raw_s_);
  }
  started_ = true;
  tree_raw_s_ = tree_raw;
  busy_raw_s_ = busy_raw;
  reason_.clear();
  out.valid = true;
  out.tree_cpu_s = tree_s_;
  out.busy_cpu_s = busy_s_;
  return out;
}

ProcessTreeUsage::ProcessTreeUsage(std::string proc_root, int pid, int cpus)
    : tree_(std::move(proc_root), pid), cpus_(std::max(cpus, 1)) {
  last_cpu_s_ = tree_.read().tree_cpu_s;
}

double ProcessTreeUsage::share(double dt_s) {
  const ProcessCpu now = tree_.read();
  if (!now.valid) return last_share_;
  if (dt_s > 0) last_share_ = std::clamp((now.tree_cpu_s - last_cpu_s_) / (dt_s * cpus_), 0.0, 1.0);
  last_cpu_s_ = now.tree_cpu_s;
  return last_share_;
}

nlohmann::json ProcessTree::describe() const {
  nlohmann::json j = {{"root_pid", root_pid_},
                      {"pids_seen", seen_.size()},
                      {"tick_s", tick_s_},
                      {"method", scanned_ ? "every /proc/PID/stat read for parents (no children lists here)"
                                          : "the kernel's children lists from the root"},
                      {"cpu_share", "user + system time of the tree / busy time of the host (/proc/stat)"}};
  if (!reason_.empty()) j["unavailable"] = reason_;
  return j;
}

}  // namespace balerbench
