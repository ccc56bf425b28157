// process_stats.cpp: see process_stats.h.
#include "harness/monitor/process_stats.h"

#include <unistd.h>

#include <fstream>
#include <sstream>

#include "harness/base/proc_text.h"
#include "harness/energy/nvml_library.h"

namespace balerbench {

ProcessStats read_process_stats() {
  ProcessStats p;
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  {
    std::ifstream statm("/proc/self/statm");
    double size = 0, resident = 0;
    if (statm >> size >> resident) {
      p.virtual_memory_bytes = size * page;
      p.resident_memory_bytes = resident * page;
    }
  }
  std::ifstream stat_file("/proc/self/stat");
  std::string line;
  if (!std::getline(stat_file, line)) return p;
  const std::vector<std::string> f = proc_stat_fields(line);
  // Field k of proc(5) is f[k - 3]: utime 14, stime 15, num_threads 20, starttime 22.
  if (f.size() < 20) return p;
  p.cpu_s = (std::stod(f[11]) + std::stod(f[12])) / tick;
  p.threads = std::stoi(f[17]);
  double boot_unix_s = 0;
  std::ifstream proc_stat("/proc/stat");
  for (std::string key; proc_stat >> key;) {
    if (key == "btime") {
      proc_stat >> boot_unix_s;
      break;
    }
    std::getline(proc_stat, key);
  }
  p.start_time_unix_s = boot_unix_s + std::stod(f[19]) / tick;
  return p;
}

GpuMemoryReader::GpuMemoryReader() {
  std::string reason;
  lib_ = NvmlLibrary::open(reason);
  if (!lib_ || !lib_->device_get_memory_info) return;
  std::string note;
  for (const auto& g : lib_->visible_gpus(note)) {
    gpus_.push_back({g.index, g.name, g.uuid, 0, 0});
    handles_.push_back(g.handle);
  }
}

GpuMemoryReader::~GpuMemoryReader() = default;

std::vector<GpuMemory> GpuMemoryReader::read() const {
  std::vector<GpuMemory> out;
  for (std::size_t i = 0; i < gpus_.size(); ++i) {
    nvmlMemory_t m{};
    if (lib_->device_get_memory_info(static_cast<nvmlDevice_t>(handles_[i]), &m) != NVML_SUCCESS) continue;
    GpuMemory g = gpus_[i];
    g.used_bytes = static_cast<double>(m.used);
    g.total_bytes = static_cast<double>(m.total);
    out.push_back(g);
  }
  return out;
}

}  // namespace balerbench
