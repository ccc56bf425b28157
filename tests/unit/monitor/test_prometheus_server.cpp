// test_prometheus_server.cpp: the /metrics endpoint on a free port, and a port in use.
#include <httplib.h>

#include <atomic>

#include "harness/monitor/prometheus_server.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

TEST(PrometheusServer, ServesTheRendererOnAFreePortAndRefusesAPortInUse) {
  std::atomic<int> calls{0};
  PrometheusServer server("127.0.0.1", 0, [&] { return "m " + std::to_string(++calls) + "\n"; });
  ASSERT_GT(server.port(), 0);
  EXPECT_EQ(server.url(), "http://127.0.0.1:" + std::to_string(server.port()) + "/metrics");
  httplib::Client client("127.0.0.1", server.port());
  auto res = client.Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "m 1\n");
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(client.Get("/nothing")->status, 404);
  expect_input_error([&] { PrometheusServer("127.0.0.1", server.port(), [] { return ""; }); }, "port in use");
  server.stop();
  EXPECT_EQ(server.stats().scrapes, 1);
  EXPECT_FALSE(client.Get("/metrics"));  // stopped
}

}  // namespace
}  // namespace balerbench
