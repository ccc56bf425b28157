// influx_exporter.h: streams live metrics to InfluxDB 1.x (HTTP /write, line
// protocol, nanosecond timestamps) or to a line-protocol file, from a
// background thread, so a slow or absent server never stalls the command:
//
//   - points are queued in memory (O(1) under a lock) and sent in batches
//     every flush interval, or sooner when a batch is full;
//   - the queue is bounded: when it is full, new points are dropped and
//     counted (the batch in flight and the oldest points are kept);
//   - a failed request is retried with backoff (0.5 s doubling to 5 s);
//   - at the end, what is left is sent within one more timeout; what still
//     could not be sent is counted, and the whole tally is reported.
//
// A file destination is written under FILE.partial and renamed to FILE when
// the command ends, so FILE is never half-written; without a single point
// (a command that failed before its first) no file is made.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "harness/monitor/influx_line.h"
#include "harness/monitor/live_metrics.h"
#include "harness/monitor/monitoring_settings.h"
#include "harness/monitor/process_stats.h"

namespace balerbench {

// Where batches go. send() throws std::runtime_error with a one-line reason.
class LineSink {
 public:
  virtual ~LineSink() = default;
  virtual std::string target() const = 0;
  virtual void send(const std::string& body) = 0;
  virtual void close() {}
};

// InfluxDB 1.x HTTP API at `settings.influx_url` (http or https, an optional
// path prefix), database, retention policy and basic-auth credentials from
// the settings (the password from the environment variable they name).
std::unique_ptr<LineSink> make_http_sink(const MonitoringSettings& settings);
std::unique_ptr<LineSink> make_file_sink(const std::string& path);
// Whether the InfluxDB server at settings.influx_url answers its /ping (within 2 s): "" when it
// does, else what went wrong ("Could not establish connection").
std::string influx_unreachable(const MonitoringSettings& settings);

class InfluxExporter : public LiveObserver {
 public:
  InfluxExporter(std::unique_ptr<LineSink> sink, const MonitoringSettings& settings, LineTags tags,
                 const GpuMemoryReader* gpus = nullptr);
  ~InfluxExporter() override;

  void on_power(const LiveState& state) override;
  void on_epoch(const LiveState& state) override;
  void push(std::string line);  // one point

  // Stops the thread after a last flush (bounded by the timeout) and closes the sink.
  InfluxStats finish();
  InfluxStats stats() const;

 private:
  void loop();
  bool send_some(std::unique_lock<std::mutex>& lock);  // false on failure
  std::unique_ptr<LineSink> sink_;
  LineTags tags_;
  const GpuMemoryReader* gpus_;
  double flush_interval_s_, timeout_s_;
  std::size_t batch_points_, buffer_points_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  std::size_t in_flight_ = 0;
  bool stopping_ = false, finished_ = false;
  InfluxStats stats_;
  std::atomic<double> last_process_unix_s_{0};
  std::thread thread_;
};

}  // namespace balerbench
