// process_tree.cpp: see process_tree.h.
#include "harness/energy/process_tree.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "harness/base/proc_text.h"

namespace balerbench {
namespace {

struct ProcStat {
  bool ok = false;
  int ppid = 0;
  double ticks = 0;  // utime + stime + cutime + cstime
};

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  if (!in) return {};
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// /proc/PID/stat: "pid (comm) state ppid ... utime stime cutime cstime ...". comm may hold spaces and
// parentheses, so the fields are counted from the last ')'.
ProcStat parse_stat(const std::string& text) {
  ProcStat st;
  const std::vector<std::string> f = proc_stat_fields(text);
  if (f.size() < 15) return st;  // state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime
  char* end = nullptr;
  st.ppid = static_cast<int>(std::strtol(f[1].c_str(), &end, 10));
  for (int i = 11; i <= 14; ++i) {
    const double v = std::strtod(f[i].c_str(), &end);
    if (*end != '\0' || !(v >= 0)) return st;
    st.ticks += v;
  }
  st.ok = true;
  return st;
}

std::vector<std::string> numeric_entries(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (!name.empty() && name.size() < 12 &&
        std::all_of(name.begin(), name.end(), [](unsigned char c) { return std::isdigit(c) != 0; }))
      out.push_back(name);
  }
  closedir(d);
  return out;
}

}  // namespace

CpuTimes read_proc_stat(const std::string& proc_root) {
  std::istringstream in(slurp(proc_root + "/stat"));
  std::string label;
  unsigned long long v[8] = {};  // user nice system idle iowait irq softirq steal
  CpuTimes t;
  if (!(in >> label) || label != "cpu") return t;
  for (auto& x : v)
    if (!(in >> x)) return t;
  t.busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
  t.total = t.busy + v[3] + v[4];
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
  for (const auto& pid : numeric_entries(proc_root_)) {
    const ProcStat st = parse_stat(slurp(proc_root_ + "/" + pid + "/stat"));
    if (!st.ok) continue;  // gone since the listing
    const int p = std::atoi(pid.c_str());
    w.ticks[p] = st.ticks;
    if (p != root_pid_) w.children[st.ppid].push_back(p);
  }
}

void ProcessTree::read_children(int pid, Walk& w) const {
  const std::string dir = proc_root_ + "/" + std::to_string(pid);
  if (pid != root_pid_) {
    const ProcStat st = parse_stat(slurp(dir + "/stat"));
    if (!st.ok) return;  // ended between its parent's list and now
    w.ticks[pid] = st.ticks;
  }
  for (const auto& tid : numeric_entries(dir + "/task")) {
    std::istringstream list(slurp(dir + "/task/" + tid + "/children"));
    int child = 0;
    while (list >> child) w.children[pid].push_back(child);
  }
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
  const ProcStat root_stat = parse_stat(slurp(proc_root_ + "/" + root + "/stat"));
  if (!root_stat.ok) {
    reason_ = "cannot read " + proc_root_ + "/" + root + "/stat";
    return out;
  }
  // Parents from the kernel's children lists, or from every process's stat where there are none.
  Walk w;
  w.ticks[root_pid_] = root_stat.ticks;
  const std::vector<std::string> root_tasks = numeric_entries(proc_root_ + "/" + root + "/task");
  scanned_ = root_tasks.empty() || !std::ifstream(proc_root_ + "/" + root + "/task/" + root_tasks.front() + "/children");
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
