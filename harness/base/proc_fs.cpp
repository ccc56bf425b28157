// proc_fs.cpp: see proc_fs.h.
#include "harness/base/proc_fs.h"

#include <dirent.h>
#include <limits.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace balerbench {
namespace {

std::string pid_dir(const std::string& proc_root, int64_t pid) {
  return proc_root + "/" + (pid > 0 ? std::to_string(pid) : std::string("self"));
}

// A whole token that is a number >= 0, into `out`.
bool parse_ticks(const std::string& token, double& out) {
  char* end = nullptr;
  const double v = std::strtod(token.c_str(), &end);
  out = v;
  return end != token.c_str() && *end == '\0' && v >= 0;
}

}  // namespace

std::string read_proc_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string read_proc_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

HostStat parse_host_stat(const std::string& text) {
  HostStat h;
  std::istringstream in(text);
  std::string line;
  for (bool first = true; std::getline(in, line); first = false) {
    if (line.rfind("btime ", 0) == 0) {
      char* end = nullptr;
      const double v = std::strtod(line.c_str() + 6, &end);
      if (end != line.c_str() + 6) h.boot_unix_s = v;
      continue;
    }
    if (line.rfind("cpu", 0) != 0) continue;
    if (line.size() > 3 && std::isdigit(static_cast<unsigned char>(line[3]))) {
      ++h.cpus;
      continue;
    }
    if (h.cpu_fields > 0 || (line.size() > 3 && line[3] != ' ' && line[3] != '\t')) continue;
    h.cpu_first = first;
    std::istringstream f(line.substr(3));
    for (auto& x : h.cpu) {
      if (!(f >> x)) break;
      ++h.cpu_fields;
    }
  }
  return h;
}

HostStat read_host_stat(const std::string& proc_root) { return parse_host_stat(read_proc_text(proc_root + "/stat")); }

PidStat parse_pid_stat(const std::string& text) {
  PidStat st;
  const auto open = text.find('('), close = text.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return st;
  st.comm = text.substr(open + 1, close - open - 1);
  std::istringstream in(text.substr(close + 1));
  for (std::string f; in >> f;) st.fields.push_back(f);
  if (st.has(4)) st.ppid = std::strtoll(st.fields[1].c_str(), nullptr, 10);
  double* times[] = {&st.utime, &st.stime, &st.cutime, &st.cstime};
  st.times_valid = true;
  for (int k = 14; k <= 17 && st.has(k); ++k) st.times_valid &= parse_ticks(st.fields[k - 3], *times[k - 14]);
  if (st.has(20)) st.threads = std::strtoll(st.fields[17].c_str(), nullptr, 10);
  if (st.has(22)) st.starttime = st.fields[19];
  return st;
}

PidStat read_pid_stat(const std::string& proc_root, int64_t pid) {
  return parse_pid_stat(read_proc_text(pid_dir(proc_root, pid) + "/stat"));
}

PidStatm parse_pid_statm(const std::string& text) {
  PidStatm m;
  std::istringstream in(text);
  m.ok = static_cast<bool>(in >> m.size_pages >> m.resident_pages);
  if (!m.ok) m.size_pages = m.resident_pages = 0;
  return m;
}

PidStatm read_pid_statm(const std::string& proc_root, int64_t pid) {
  return parse_pid_statm(read_proc_text(pid_dir(proc_root, pid) + "/statm"));
}

std::string read_pid_comm(const std::string& proc_root, int64_t pid) {
  return read_proc_line(pid_dir(proc_root, pid) + "/comm");
}

std::string read_pid_cmdline(const std::string& proc_root, int64_t pid) {
  std::string cmd = read_proc_text(pid_dir(proc_root, pid) + "/cmdline");
  std::replace(cmd.begin(), cmd.end(), '\0', ' ');
  while (!cmd.empty() && cmd.back() == ' ') cmd.pop_back();
  return cmd;
}

std::optional<double> parse_status_kib(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  const std::string prefix = key + ":";
  for (std::string line; std::getline(in, line);) {
    if (line.compare(0, prefix.size(), prefix) != 0) continue;
    std::istringstream fields(line.substr(prefix.size()));
    double kib = 0;
    if (fields >> kib) return kib;
  }
  return std::nullopt;
}

std::optional<double> read_status_kib(const std::string& proc_root, int64_t pid, const std::string& key) {
  return parse_status_kib(read_proc_text(pid_dir(proc_root, pid) + "/status"), key);
}

std::string reset_self_peak_rss(const std::string& proc_root) {
  std::ofstream clear(proc_root + "/self/clear_refs");
  clear << "5";
  clear.flush();
  if (clear) return "";
  return std::strerror(errno ? errno : EACCES);
}

std::string read_boot_id(const std::string& proc_root) {
  return read_proc_line(proc_root + "/sys/kernel/random/boot_id");
}

std::string read_self_exe(const std::string& proc_root) {
  char buf[PATH_MAX];
  const ssize_t n = readlink((proc_root + "/self/exe").c_str(), buf, sizeof buf - 1);
  if (n <= 0) return "";
  buf[n] = '\0';
  return buf;
}

std::vector<std::string> proc_numeric_entries(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (!name.empty() && name.size() <= 10 &&
        std::all_of(name.begin(), name.end(), [](unsigned char c) { return std::isdigit(c) != 0; }))
      out.push_back(name);
  }
  closedir(d);
  return out;
}

std::vector<int> read_task_children(const std::string& proc_root, int64_t pid, const std::string& tid,
                                    bool* readable) {
  const std::string path = pid_dir(proc_root, pid) + "/task/" + tid + "/children";
  std::ifstream in(path);
  if (readable) *readable = static_cast<bool>(in);
  std::vector<int> out;
  for (int child = 0; in >> child;) out.push_back(child);
  return out;
}

}  // namespace balerbench
