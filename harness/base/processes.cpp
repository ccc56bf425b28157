// processes.cpp: see processes.h.
#include "harness/base/processes.h"

#include <unistd.h>

#include <cstdio>

#include "harness/base/proc_fs.h"

namespace balerbench {

ProcessIdentity this_process(const std::string& proc_root) {
  ProcessIdentity p;
  char host[256] = {0};
  if (::gethostname(host, sizeof host - 1) == 0) p.host = host;
  p.boot_id = read_boot_id(proc_root);
  p.pid = static_cast<int64_t>(::getpid());
  p.start_ticks = process_start_ticks(p.pid, proc_root).value_or("");
  return p;
}

std::optional<std::string> process_start_ticks(int64_t pid, const std::string& proc_root) {
  if (pid <= 0) return std::nullopt;
  const PidStat st = read_pid_stat(proc_root, pid);
  if (!st.has(22)) return std::nullopt;
  return st.starttime;
}

bool same_boot(const ProcessIdentity& a, const ProcessIdentity& b) {
  return !a.boot_id.empty() && a.boot_id == b.boot_id && a.host == b.host;
}

bool process_alive(const ProcessIdentity& p, const std::string& proc_root) {
  if (!same_boot(p, this_process(proc_root))) return false;
  const auto ticks = process_start_ticks(p.pid, proc_root);
  return ticks && *ticks == p.start_ticks;
}

std::vector<PeerProcess> other_balerbench_processes(const std::string& proc_root) {
  std::vector<PeerProcess> out;
  const int64_t self = static_cast<int64_t>(::getpid());
  static const double ticks_per_s = static_cast<double>(::sysconf(_SC_CLK_TCK) > 0 ? ::sysconf(_SC_CLK_TCK) : 100);
  for (const std::string& name : proc_numeric_entries(proc_root)) {
    const int64_t pid = std::stoll(name);
    if (pid == self) continue;
    if (read_pid_comm(proc_root, pid) != "balerbench") continue;
    const PidStat st = read_pid_stat(proc_root, pid);
    if (!st.has(15)) continue;  // gone meanwhile
    if (st.ppid == self) continue;  // field 4, the parent: a child of this process
    PeerProcess p;
    p.pid = pid;
    p.start_ticks = st.starttime;  // field 22
    p.cpu_s = (st.utime + st.stime) / ticks_per_s;  // fields 14 and 15
    std::string cmd = read_pid_cmdline(proc_root, pid);
    if (cmd.empty()) cmd = "balerbench";  // exiting, or its arguments not readable to this user
    p.command = cmd.size() > 200 ? cmd.substr(0, 197) + "..." : cmd;
    out.push_back(std::move(p));
  }
  return out;
}

void PeerWatch::sample() {
  ++samples_;
  for (const PeerProcess& p : other_balerbench_processes(proc_root_)) {
    const auto it = seen_.try_emplace(std::to_string(p.pid) + "@" + p.start_ticks, Seen{p, p, 0}).first;
    it->second.last = p;
    ++it->second.samples;
  }
}

bool PeerWatch::active(const Seen& s) const {
  return s.samples < samples_ || s.last.cpu_s - s.first.cpu_s > kActiveCpuS;
}

bool PeerWatch::any_active() const {
  for (const auto& [id, s] : seen_)
    if (active(s)) return true;
  return false;
}

nlohmann::json PeerWatch::to_json() const {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [id, s] : seen_)
    out.push_back({{"pid", s.first.pid},
                   {"command", s.last.command},
                   {"cpu_s", s.samples > 1 ? nlohmann::json(s.last.cpu_s - s.first.cpu_s) : nlohmann::json(nullptr)},
                   {"samples_seen", s.samples},
                   {"of_samples", samples_},
                   {"active", active(s)}});
  return out;
}

std::string PeerWatch::reason() const {
  std::string out;
  for (const auto& [id, s] : seen_) {
    if (!active(s)) continue;
    char cpu[64] = "";
    if (s.samples > 1 && s.samples == samples_) std::snprintf(cpu, sizeof cpu, ", %.2f CPU-s", s.last.cpu_s - s.first.cpu_s);
    out += (out.empty() ? "another balerbench ran beside it (" : "; ") + ("pid " + std::to_string(s.first.pid) + ": " +
                                                                          s.last.command + cpu);
  }
  return out.empty() ? out : out + ")";
}

}  // namespace balerbench
