// cpu_governor.cpp: see cpu_governor.h.
#include "harness/energy/cpu_governor.h"

#include <dirent.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>

namespace balerbench {
namespace {

std::string first_word(const std::string& path) {
  std::ifstream in(path);
  std::string w;
  in >> w;
  return w;
}

// The N of every cpuN entry of `root`, ascending.
std::vector<int> cpu_numbers(const std::string& root) {
  std::vector<int> out;
  DIR* d = opendir(root.c_str());
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() > 3 && name.size() < 10 && name.rfind("cpu", 0) == 0 &&
        std::all_of(name.begin() + 3, name.end(), [](unsigned char c) { return std::isdigit(c) != 0; }))
      out.push_back(std::stoi(name.substr(3)));
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::string default_sys_cpu_root() {
  const char* env = std::getenv("BALERBENCH_SYS_CPU_ROOT");
  return env && *env ? env : "/sys/devices/system/cpu";
}

CpuGovernors read_cpu_governors(const std::string& sys_cpu_root) {
  CpuGovernors g;
  g.root = sys_cpu_root;
  for (int n : cpu_numbers(sys_cpu_root)) {
    const std::string dir = sys_cpu_root + "/cpu" + std::to_string(n) + "/cpufreq/";
    const std::string governor = first_word(dir + "scaling_governor");
    if (governor.empty()) continue;
    g.by_name[governor].push_back(n);
    if (g.driver.empty()) g.driver = first_word(dir + "scaling_driver");
  }
  return g;
}

int CpuGovernors::cpus() const {
  int n = 0;
  for (const auto& [name, list] : by_name) n += static_cast<int>(list.size());
  return n;
}

nlohmann::json CpuGovernors::to_json() const {
  nlohmann::json governors = nlohmann::json::object();
  for (const auto& [name, list] : by_name) governors[name] = cpu_list_text(list);
  return {{"exposed", exposed()}, {"root", root}, {"driver", driver}, {"governors", governors}};
}

std::string cpu_list_text(const std::vector<int>& cpus) {
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(cpus[i]);
    if (j > i) out += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace balerbench
