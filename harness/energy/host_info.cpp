// host_info.cpp: see host_info.h.
#include "harness/energy/host_info.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>

#include "harness/base/proc_fs.h"
#include "harness/base/proc_text.h"

namespace balerbench {

HostInfo read_host_info(const std::string& proc_root) {
  HostInfo h;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) h.hostname = host;
  utsname u{};
  if (uname(&u) == 0) h.os = std::string(u.sysname) + " " + u.release;
  std::istringstream cpuinfo(read_proc_text(proc_root + "/cpuinfo"));
  std::string line;
  std::set<std::string> sockets;
  int processors = 0;
  while (std::getline(cpuinfo, line)) {
    std::string key, value;
    if (!split_proc_line(line, key, value)) continue;
    if (key == "processor") ++processors;
    else if (key == "model name" && h.cpu_model.empty()) h.cpu_model = value;
    else if (key == "physical id") sockets.insert(value);
  }
  const long online = proc_root == "/proc" ? sysconf(_SC_NPROCESSORS_ONLN) : processors;
  h.logical_cpus = static_cast<int>(online > 0 ? online : std::max(processors, 1));
  h.sockets = std::max<int>(1, static_cast<int>(sockets.size()));
  std::istringstream meminfo(read_proc_text(proc_root + "/meminfo"));
  while (std::getline(meminfo, line)) {
    if (line.rfind("MemTotal:", 0) != 0) continue;
    std::istringstream in(line.substr(9));
    double kib = 0;
    in >> kib;
    h.ram_total_gb = kib / (1024.0 * 1024.0);
  }
  return h;
}

nlohmann::json HostInfo::to_json() const {
  return {{"hostname", hostname}, {"os", os}, {"cpu_model", cpu_model}, {"logical_cpus", logical_cpus},
          {"sockets", sockets}, {"ram_total_gb", ram_total_gb}};
}

}  // namespace balerbench
