// influx_exporter.cpp: see influx_exporter.h.
#include "harness/monitor/influx_exporter.h"

#include <httplib.h>
#include <time.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "common/error.h"
#include "common/paths.h"
#include "harness/base/clock.h"
#include "harness/energy/sampler.h"

namespace balerbench {
namespace {

using Clock = std::chrono::steady_clock;

void set_timeouts(httplib::Client& c, double timeout_s) {
  const auto sec = static_cast<time_t>(timeout_s);
  const auto usec = static_cast<time_t>((timeout_s - static_cast<double>(sec)) * 1e6);
  c.set_connection_timeout(sec, usec);
  c.set_read_timeout(sec, usec);
  c.set_write_timeout(sec, usec);
}

std::string url_encode(const std::string& s) {
  std::string out;
  char buf[4];
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

std::string short_body(const std::string& body) {
  std::string s = body.substr(0, 200);
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

class HttpSink : public LineSink {
 public:
  explicit HttpSink(const MonitoringSettings& m) : url_(m.influx_url), create_(m.influx_create_database) {
    // scheme://host[:port][/prefix]
    const auto scheme_end = url_.find("://") + 3;
    const auto path_start = url_.find('/', scheme_end);
    const std::string base = path_start == std::string::npos ? url_ : url_.substr(0, path_start);
    prefix_ = path_start == std::string::npos ? "" : url_.substr(path_start);
    while (!prefix_.empty() && prefix_.back() == '/') prefix_.pop_back();
    client_ = std::make_unique<httplib::Client>(base);
    if (!client_->is_valid()) throw InputError("influx_url " + url_ + ": not a URL this build can reach", "http://HOST:PORT");
    set_timeouts(*client_, m.influx_timeout_s);
    client_->set_keep_alive(true);
    if (!m.influx_username.empty()) {
      const char* password = std::getenv(m.influx_password_env.c_str());
      if (!password)
        throw InputError("influx_username is set but the environment variable " + m.influx_password_env +
                             " (influx_password_env) is not",
                         "export " + m.influx_password_env + "=... before the command");
      client_->set_basic_auth(m.influx_username, password);
    }
    database_ = m.influx_database;
    write_path_ = prefix_ + "/write?db=" + url_encode(database_) + "&precision=ns";
    if (!m.influx_retention_policy.empty()) write_path_ += "&rp=" + url_encode(m.influx_retention_policy);
  }

  std::string target() const override { return url_ + " (database " + database_ + ")"; }

  // InfluxDB's /ping, once: "" when the server answers, else what went wrong.
  std::string ping() {
    const auto res = client_->Get((prefix_ + "/ping").c_str());
    if (!res) return httplib::to_string(res.error());
    if (res->status != 204 && res->status != 200) return "HTTP " + std::to_string(res->status) + " from /ping";
    return "";
  }

  void send(const std::string& body) override {
    if (create_ && !created_) {
      // Idempotent. A user without admin rights gets 403 here but may still write to an existing
      // database, so only a server that did not answer stops the write.
      post(prefix_ + "/query", "q=" + url_encode("CREATE DATABASE \"" + database_ + "\""),
           "application/x-www-form-urlencoded");
      created_ = true;
    }
    const auto res = post(write_path_, body, "text/plain; charset=utf-8");
    if (res->status != 204)
      throw std::runtime_error(url_ + ": HTTP " + std::to_string(res->status) + " " + short_body(res->body));
  }

 private:
  httplib::Result post(const std::string& path, const std::string& body, const char* type) {
    auto res = client_->Post(path.c_str(), body, type);
    if (!res) throw std::runtime_error(url_ + ": " + httplib::to_string(res.error()));
    return res;
  }
  std::string url_, prefix_, database_, write_path_;
  bool create_, created_ = false;
  std::unique_ptr<httplib::Client> client_;
};

class FileSink : public LineSink {
 public:
  // The file is created with the first batch; only its folder is checked now.
  explicit FileSink(std::string path) : path_(std::move(path)), partial_(path_ + ".partial") {
    namespace fs = std::filesystem;
    const fs::path dir = fs::absolute(path_).parent_path();
    if (!fs::is_directory(dir) || ::access(dir.c_str(), W_OK) != 0)
      throw InputError("cannot write the line-protocol file " + path_ + ": " + dir.string() +
                           " is not a writable folder",
                       "create the folder, or give --influx-file another path");
    if (fs::is_directory(path_)) throw InputError("--influx-file " + path_ + " is a folder", "name a file");
    check_output_file(path_, "give --influx-file a regular file's path");
    path_ = output_target(path_);
    partial_ = path_ + ".partial";
  }
  ~FileSink() override {
    if (file_) std::fclose(file_);
  }
  std::string target() const override { return path_; }
  void send(const std::string& body) override {
    if (!file_ && !(file_ = std::fopen(partial_.c_str(), "w"))) throw std::runtime_error(partial_ + ": cannot create");
    if (std::fwrite(body.data(), 1, body.size(), file_) != body.size() || std::fflush(file_) != 0)
      throw std::runtime_error(partial_ + ": write failed");
  }
  void close() override {
    if (!file_) return;  // no point was ever written (or a command that failed before its first): no file
    const bool ok = std::fclose(file_) == 0;
    file_ = nullptr;
    if (!ok) throw std::runtime_error(partial_ + ": close failed");
    std::filesystem::rename(partial_, path_);
  }

 private:
  std::string path_, partial_;
  std::FILE* file_ = nullptr;
};

}  // namespace

std::unique_ptr<LineSink> make_http_sink(const MonitoringSettings& settings) {
  return std::make_unique<HttpSink>(settings);
}

std::unique_ptr<LineSink> make_file_sink(const std::string& path) { return std::make_unique<FileSink>(path); }

std::string influx_unreachable(const MonitoringSettings& settings) {
  MonitoringSettings quick = settings;
  quick.influx_timeout_s = std::min(settings.influx_timeout_s, 2.0);  // a start-up check, not a write
  return HttpSink(quick).ping();
}

InfluxExporter::InfluxExporter(std::unique_ptr<LineSink> sink, const MonitoringSettings& m, LineTags tags,
                               const GpuMemoryReader* gpus)
    : sink_(std::move(sink)), tags_(std::move(tags)), gpus_(gpus), flush_interval_s_(m.influx_flush_interval_s),
      timeout_s_(m.influx_timeout_s), batch_points_(static_cast<std::size_t>(m.influx_batch_points)),
      buffer_points_(static_cast<std::size_t>(m.influx_buffer_points)) {
  stats_.target = sink_->target();
  thread_ = std::thread([this] { loop(); });
}

InfluxExporter::~InfluxExporter() {
  try {
    finish();
  } catch (...) {
  }
}

void InfluxExporter::push(std::string line) {
  if (line.empty()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.points_queued;
    if (finished_ || queue_.size() >= buffer_points_) {
      ++stats_.points_dropped;
      return;
    }
    queue_.push_back(std::move(line));
    if (queue_.size() - in_flight_ < batch_points_) return;
  }
  cv_.notify_one();
}

void InfluxExporter::on_power(const LiveState& state) {
  for (std::string& l : power_lines(state, tags_)) push(std::move(l));
  double last = last_process_unix_s_.load();
  if (state.power.unix_s - last >= 1.0 &&  // memory once a second is plenty
      last_process_unix_s_.compare_exchange_strong(last, state.power.unix_s)) {
    push(process_line(state, tags_, read_process_stats(), gpus_ ? gpus_->read() : std::vector<GpuMemory>{},
                      state.power.unix_s));
  }
}

void InfluxExporter::on_epoch(const LiveState& state) {
  for (std::string& l : epoch_lines(state, tags_, unix_now_s())) push(std::move(l));
}

// Sends the oldest batch; the lock is released during the request. The batch
// stays at the queue's front (counted in the bound) until it is acknowledged.
bool InfluxExporter::send_some(std::unique_lock<std::mutex>& lock) {
  const std::size_t n = std::min(queue_.size(), batch_points_);
  std::string body;
  for (std::size_t i = 0; i < n; ++i) (body += queue_[i]) += '\n';
  in_flight_ = n;
  lock.unlock();
  const auto t0 = Clock::now();
  std::string error;
  try {
    sink_->send(body);
  } catch (const std::exception& e) {
    error = e.what();
  }
  const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
  lock.lock();
  in_flight_ = 0;
  stats_.send_time_s += dt;
  if (!error.empty()) {
    ++stats_.requests_failed;
    stats_.last_error = error;
    return false;
  }
  queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
  stats_.points_sent += static_cast<int64_t>(n);
  ++stats_.requests_ok;
  return true;
}

void InfluxExporter::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  double backoff_s = 0;
  while (!stopping_) {
    const double wait_s = backoff_s > 0 ? backoff_s : flush_interval_s_;
    const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(wait_s));
    cv_.wait_until(lock, until, [&] { return stopping_ || (backoff_s == 0 && queue_.size() >= batch_points_); });
    if (stopping_) break;
    if (queue_.empty()) continue;
    if (send_some(lock)) {
      backoff_s = 0;
    } else {
      backoff_s = backoff_s == 0 ? 0.5 : std::min(2 * backoff_s, 5.0);
    }
    stats_.thread_cpu_s = thread_cpu_s();
  }
  // The last flush: keep sending while it works, within one timeout (plus the requests' own).
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s_));
  while (!queue_.empty() && Clock::now() < deadline)
    if (!send_some(lock)) break;
  stats_.points_unsent = static_cast<int64_t>(queue_.size());
  queue_.clear();
  stats_.thread_cpu_s = thread_cpu_s();
}

InfluxStats InfluxExporter::finish() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_) return stats_;
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  finished_ = true;
  try {
    sink_->close();
  } catch (const std::exception& e) {
    stats_.last_error = e.what();
  }
  return stats_;
}

InfluxStats InfluxExporter::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace balerbench
