// processes.cpp: see processes.h.
#include "harness/base/processes.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness/base/proc_text.h"

namespace balerbench {
namespace {

std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

ProcessIdentity this_process(const std::string& proc_root) {
  ProcessIdentity p;
  char host[256] = {0};
  if (::gethostname(host, sizeof host - 1) == 0) p.host = host;
  p.boot_id = first_line(proc_root + "/sys/kernel/random/boot_id");
  p.pid = static_cast<int64_t>(::getpid());
  p.start_ticks = process_start_ticks(p.pid, proc_root).value_or("");
  return p;
}

std::optional<std::string> process_start_ticks(int64_t pid, const std::string& proc_root) {
  if (pid <= 0) return std::nullopt;
  const std::vector<std::string> f = proc_stat_fields(first_line(proc_root + "/" + std::to_string(pid) + "/stat"));
  if (f.size() < 20) return std::nullopt;
  return f[19];  // field 22
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
  std::error_code ec;
  for (std::filesystem::directory_iterator it(proc_root, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const int64_t pid = std::stoll(name);
    if (pid == self) continue;
    const std::string dir = it->path().string();
    if (first_line(dir + "/comm") != "balerbench") continue;
    const std::vector<std::string> f = proc_stat_fields(first_line(dir + "/stat"));
    if (f.size() < 13) continue;  // gone meanwhile
    if (f[1] == std::to_string(self)) continue;  // field 4, the parent: a child of this process
    PeerProcess p;
    p.pid = pid;
    if (f.size() > 19) p.start_ticks = f[19];  // field 22
    p.cpu_s = (std::stod(f[11]) + std::stod(f[12])) / ticks_per_s;  // fields 14 and 15
    std::string cmd = read_all(dir + "/cmdline");
    for (char& c : cmd)
      if (c == '\0') c = ' ';
    while (!cmd.empty() && cmd.back() == ' ') cmd.pop_back();
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
