// influx_line.h: InfluxDB line protocol (1.x and 2.x share it):
//   measurement,tag=value,... field=1.5,count=3i 1700000000000000000
// with the protocol's escaping (commas, spaces and '=' in keys and tags;
// quotes and backslashes in string fields), integers marked 'i', and
// timestamps in nanoseconds. NaN and infinite fields have no representation
// and are left out; a point without fields is no point.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "harness/monitor/live_metrics.h"
#include "harness/monitor/process_stats.h"

namespace balerbench {

class LinePoint {
 public:
  explicit LinePoint(const std::string& measurement);
  LinePoint& tag(const std::string& key, const std::string& value);  // empty values are left out
  LinePoint& field(const std::string& key, double value);
  LinePoint& field_int(const std::string& key, int64_t value);
  LinePoint& field_str(const std::string& key, const std::string& value);
  // The line without a newline; "" when no field was set.
  std::string line(int64_t unix_ns) const;

 private:
  std::string head_, fields_;
};

int64_t unix_ns_of(double unix_s);

// The points of one snapshot and of one epoch (see README, "Live monitoring"):
//   balerbench_power        per meter and domain: power_w, energy_j
//   balerbench_power_total  the domains counted in totals: power_w, energy_j
//   balerbench_epoch        epoch, epochs, train_loss, val_loss, samples_per_s, trial_energy_j, trial_duration_s
//   balerbench_process      rss_bytes, cpu_s, gpu_memory_used_bytes (every second)
// Every point carries host, run_id and command tags; in a trial also
// experiment, trial, batch_size, precision and power_limit_w.
struct LineTags {
  std::string host, run_id;
};
std::vector<std::string> power_lines(const LiveState& state, const LineTags& tags);
std::vector<std::string> epoch_lines(const LiveState& state, const LineTags& tags, double unix_s);
std::string process_line(const LiveState& state, const LineTags& tags, const ProcessStats& process,
                         const std::vector<GpuMemory>& gpus, double unix_s);

// What one InfluxDB destination did with the points it was given.
struct InfluxStats {
  std::string target;           // URL or file
  int64_t points_queued = 0;    // handed to the exporter
  int64_t points_sent = 0;      // acknowledged by the server (or written to the file)
  int64_t points_dropped = 0;   // refused because the buffer was full
  int64_t points_unsent = 0;    // still buffered when the command ended
  int64_t requests_ok = 0, requests_failed = 0;
  std::string last_error;
  double send_time_s = 0;       // wall time inside requests
  double thread_cpu_s = 0;      // CPU time of the sending thread
  int64_t points_lost() const { return points_dropped + points_unsent; }
};

}  // namespace balerbench
