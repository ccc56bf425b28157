// prometheus_server.h: the Prometheus scrape endpoint, GET /metrics on
// ADDRESS:PORT (127.0.0.1 unless asked otherwise), served by cpp-httplib from
// its own thread while the command runs. Port 0 picks a free port.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace httplib {
class Server;
}

namespace balerbench {

struct PrometheusServerStats {
  int64_t scrapes = 0;
  double render_time_s = 0;  // wall time spent building responses
};

class PrometheusServer {
 public:
  // Binds and starts serving; an InputError (exit 2) when the address cannot be bound.
  PrometheusServer(const std::string& address, int port, std::function<std::string()> render);
  // The same InputError when ADDRESS:PORT cannot be bound now; binds and closes again, serves nothing.
  static void check_can_bind(const std::string& address, int port);
  ~PrometheusServer();
  PrometheusServer(const PrometheusServer&) = delete;
  PrometheusServer& operator=(const PrometheusServer&) = delete;

  int port() const { return port_; }
  std::string url() const;  // http://ADDRESS:PORT/metrics
  void stop();
  PrometheusServerStats stats() const;

 private:
  std::unique_ptr<httplib::Server> server_;
  std::string address_;
  int port_ = 0;
  std::function<std::string()> render_;
  std::thread thread_;
  mutable std::mutex stats_mu_;
  PrometheusServerStats stats_;
};

}  // namespace balerbench
