// cpu_load.cpp: see cpu_load.h.
#include "harness/energy/cpu_load.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <thread>

#include "harness/base/proc_fs.h"

namespace balerbench {
namespace {

constexpr std::size_t kTopProcesses = 3;

// The "cpu" line of /proc/stat, in ticks; cpus = the cpuN lines.
struct StatTicks {
  bool ok = false;
  unsigned long long other = 0;  // user nice system irq softirq (guest time is inside user)
  unsigned long long steal = 0;
  unsigned long long all = 0;    // every field up to steal: the time that passed on all CPUs
  int cpus = 0;
};

StatTicks read_stat_ticks(const std::string& proc_root) {
  const HostStat h = read_host_stat(proc_root);
  StatTicks t;
  if (!h.has_cpu(8)) return t;  // user nice system idle iowait irq softirq steal
  using F = HostStat;
  t.other = h.cpu[F::kUser] + h.cpu[F::kNice] + h.cpu[F::kSystem] + h.cpu[F::kIrq] + h.cpu[F::kSoftirq];
  t.steal = h.cpu[F::kSteal];
  t.all = t.other + h.cpu[F::kIdle] + h.cpu[F::kIowait] + t.steal;
  t.cpus = h.cpus;
  t.ok = true;
  return t;
}

// utime + stime of a process (all its threads), and its name; ok false when unreadable.
struct ProcTicks {
  bool ok = false;
  std::string name;
  unsigned long long ticks = 0;
};

ProcTicks read_proc_ticks(const std::string& proc_root, int pid) {
  const PidStat st = read_pid_stat(proc_root, pid);
  ProcTicks p;
  p.name = st.comm;
  p.ok = st.has(15);  // utime (14) and stime (15)
  if (p.ok) p.ticks = static_cast<unsigned long long>(st.utime) + static_cast<unsigned long long>(st.stime);
  return p;
}

std::map<int, ProcTicks> read_all_processes(const std::string& proc_root) {
  std::map<int, ProcTicks> out;
  for (const std::string& name : proc_numeric_entries(proc_root)) {
    const int pid = std::stoi(name);
    ProcTicks p = read_proc_ticks(proc_root, pid);
    if (p.ok) out[pid] = std::move(p);
  }
  return out;
}

// Other processes by ticks used between the snapshots; one that started in the window counts whole.
std::vector<ProcessCpuUse> top_processes(const std::map<int, ProcTicks>& before, const std::map<int, ProcTicks>& after,
                                         int self_pid, double window_ticks) {
  std::vector<ProcessCpuUse> out;
  for (const auto& [pid, p] : after) {
    if (pid == self_pid) continue;
    const auto b = before.find(pid);
    const unsigned long long start = b != before.end() && b->second.ticks <= p.ticks ? b->second.ticks : 0;
    if (p.ticks > start) out.push_back({pid, p.name, (p.ticks - start) / window_ticks});
  }
  std::sort(out.begin(), out.end(), [](const ProcessCpuUse& a, const ProcessCpuUse& b) {
    return a.cores != b.cores ? a.cores > b.cores : a.pid < b.pid;
  });
  if (out.size() > kTopProcesses) out.resize(kTopProcesses);
  return out;
}

}  // namespace

struct CpuLoadSample::Start {
  std::string proc_root, self_stat;
  int self_pid = 0;
  StatTicks stat;
  ProcTicks self;
  std::map<int, ProcTicks> procs;
  std::chrono::steady_clock::time_point at;
};

CpuLoadSample::CpuLoadSample(const std::string& proc_root, int self_pid) {
  auto s = std::make_shared<Start>();
  s->proc_root = proc_root;
  s->self_pid = self_pid > 0 ? self_pid : static_cast<int>(getpid());
  s->self_stat = proc_root + "/" + std::to_string(s->self_pid) + "/stat";
  s->stat = read_stat_ticks(proc_root);
  s->self = read_proc_ticks(proc_root, s->self_pid);
  s->procs = read_all_processes(proc_root);
  s->at = std::chrono::steady_clock::now();
  start_ = std::move(s);
}

CpuLoad CpuLoadSample::finish(double min_window_s, const Sleeper& sleep) const {
  const Start& s = *start_;
  if (sleep) {
    sleep(min_window_s);
  } else {
    const double left = min_window_s - std::chrono::duration<double>(std::chrono::steady_clock::now() - s.at).count();
    if (left > 0) std::this_thread::sleep_for(std::chrono::duration<double>(left));
  }
  CpuLoad load;
  const StatTicks& a = s.stat;
  const ProcTicks& self_a = s.self;
  const StatTicks b = read_stat_ticks(s.proc_root);
  const ProcTicks self_b = read_proc_ticks(s.proc_root, s.self_pid);
  const auto procs_b = read_all_processes(s.proc_root);
  if (!a.ok || !b.ok || b.cpus <= 0) {
    load.reason = "cannot read the CPU times from " + s.proc_root + "/stat";
    return load;
  }
  if (!self_a.ok || !self_b.ok) {
    load.reason = "cannot read this process's CPU time from " + s.self_stat;
    return load;
  }
  if (b.all <= a.all) {
    load.reason = "no time passed between the two reads of " + s.proc_root + "/stat";
    return load;
  }
  const double window_ticks = static_cast<double>(b.all - a.all) / b.cpus;  // per CPU
  const long hz = sysconf(_SC_CLK_TCK);
  const double self_ticks = self_b.ticks >= self_a.ticks ? static_cast<double>(self_b.ticks - self_a.ticks) : 0.0;
  const double other_ticks = b.other >= a.other ? static_cast<double>(b.other - a.other) : 0.0;
  load.valid = true;
  load.cpus = b.cpus;
  load.window_s = window_ticks / static_cast<double>(hz > 0 ? hz : 100);
  load.other_cores = std::max(0.0, other_ticks - self_ticks) / window_ticks;
  load.steal_cores = b.steal >= a.steal ? (b.steal - a.steal) / window_ticks : 0.0;
  load.top = top_processes(s.procs, procs_b, s.self_pid, window_ticks);
  return load;
}

CpuLoad sample_cpu_load(const std::string& proc_root, double window_s, const Sleeper& sleep, int self_pid) {
  return CpuLoadSample(proc_root, self_pid).finish(window_s, sleep);
}

nlohmann::json CpuLoad::to_json() const {
  nlohmann::json j = {{"valid", valid}};
  if (!valid) {
    j["reason"] = reason;
    return j;
  }
  nlohmann::json processes = nlohmann::json::array();
  for (const auto& p : top) processes.push_back({{"pid", p.pid}, {"name", p.name}, {"cores", p.cores}});
  j.update({{"cpus", cpus}, {"window_s", window_s}, {"other_cores", other_cores}, {"steal_cores", steal_cores},
            {"top_processes", processes}});
  return j;
}

}  // namespace balerbench
