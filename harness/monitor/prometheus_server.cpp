// prometheus_server.cpp: see prometheus_server.h.
#include "harness/monitor/prometheus_server.h"

#include <httplib.h>

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>

#include "common/error.h"

namespace balerbench {
namespace {

[[noreturn]] void throw_cannot_bind(const std::string& address, int port) {
  if (port == 0)
    throw InputError("cannot open a Prometheus endpoint on " + address + " (no free port, or not an address here)",
                     "--prometheus-address takes an IP address of this machine, e.g. 127.0.0.1");
  throw InputError("cannot open a Prometheus endpoint on " + address + ":" + std::to_string(port) +
                       " (port in use, or not an address here)",
                   "choose another --prometheus-port, or 0 for any free port");
}

}  // namespace

void PrometheusServer::check_can_bind(const std::string& address, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (::getaddrinfo(address.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) throw_cannot_bind(address, port);
  bool bound = false;
  for (const addrinfo* a = found; a && !bound; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int yes = 1;  // as the server binds: SO_REUSEADDR only
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    bound = ::bind(fd, a->ai_addr, a->ai_addrlen) == 0;
    ::close(fd);
  }
  ::freeaddrinfo(found);
  if (!bound) throw_cannot_bind(address, port);
}

PrometheusServer::PrometheusServer(const std::string& address, int port, std::function<std::string()> render)
    : server_(std::make_unique<httplib::Server>()), address_(address), render_(std::move(render)) {
  // Scrapes are rare and quick: two workers, not one per core.
  server_->new_task_queue = [] { return new httplib::ThreadPool(2); };
  // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, with which a second run on the same
  // port would bind too and the kernel would share the scrapes between the two.
  server_->set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  server_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    const auto t0 = std::chrono::steady_clock::now();
    res.set_content(render_(), "text/plain; version=0.0.4; charset=utf-8");
    std::lock_guard<std::mutex> lock(stats_mu_);
    ++stats_.scrapes;
    stats_.render_time_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  });
  server_->Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("balerbench: metrics at /metrics\n", "text/plain");
  });
  if (port == 0) {
    port_ = server_->bind_to_any_port(address);
    if (port_ <= 0) throw_cannot_bind(address, 0);
  } else {
    if (!server_->bind_to_port(address, port)) throw_cannot_bind(address, port);
    port_ = port;
  }
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  // stop() before the server loop has started would be lost: wait for it.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!server_->is_running() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

PrometheusServer::~PrometheusServer() { stop(); }

std::string PrometheusServer::url() const {
  const bool v6 = address_.find(':') != std::string::npos;
  return "http://" + (v6 ? "[" + address_ + "]" : address_) + ":" + std::to_string(port_) + "/metrics";
}

void PrometheusServer::stop() {
  if (!thread_.joinable()) return;
  server_->stop();
  thread_.join();
}

PrometheusServerStats PrometheusServer::stats() const {
  std::lock_guard<std::mutex> lock(stats_mu_);
  return stats_;
}

}  // namespace balerbench
