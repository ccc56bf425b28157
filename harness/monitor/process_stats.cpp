// process_stats.cpp: see process_stats.h.
#include "harness/monitor/process_stats.h"

#include <unistd.h>

#include <cstdlib>

#include "harness/base/proc_fs.h"
#include "harness/energy/nvml_library.h"

namespace balerbench {

ProcessStats read_process_stats() {
  ProcessStats p;
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  const PidStatm statm = read_pid_statm("/proc", 0);
  if (statm.ok) {
    p.virtual_memory_bytes = statm.size_pages * page;
    p.resident_memory_bytes = statm.resident_pages * page;
  }
  // utime 14, stime 15, num_threads 20, starttime 22.
  const PidStat st = read_pid_stat("/proc", 0);
  if (!st.has(22)) return p;
  p.cpu_s = (st.utime + st.stime) / tick;
  p.threads = static_cast<int>(st.threads);
  const double boot_unix_s = read_host_stat("/proc").boot_unix_s.value_or(0.0);
  p.start_time_unix_s = boot_unix_s + std::strtod(st.starttime.c_str(), nullptr) / tick;
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
