// process_stats.h: this process's memory and CPU time (from /proc/self) and
// the GPUs' memory (from NVML, when there is a driver), read when asked: at
// each Prometheus scrape, and once a second for InfluxDB.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace balerbench {

struct ProcessStats {
  double resident_memory_bytes = 0;
  double virtual_memory_bytes = 0;
  double cpu_s = 0;           // user + system, all threads
  double start_time_unix_s = 0;
  int threads = 0;
};
ProcessStats read_process_stats();

struct GpuMemory {
  unsigned index = 0;
  std::string name, uuid;
  double used_bytes = 0, total_bytes = 0;
};

class NvmlLibrary;

// The visible GPUs' memory; empty when NVML cannot be opened.
class GpuMemoryReader {
 public:
  GpuMemoryReader();  // opens NVML quietly
  ~GpuMemoryReader();
  std::vector<GpuMemory> read() const;
  bool available() const { return lib_ != nullptr; }

 private:
  std::shared_ptr<NvmlLibrary> lib_;
  std::vector<GpuMemory> gpus_;  // names and UUIDs, read once
  std::vector<void*> handles_;   // nvmlDevice_t of each
};

}  // namespace balerbench
