// test_influx_exporter.cpp: the InfluxDB exporter's buffer (batches, bound, retry, a sink that
// hangs, the final flush), the file sink and the HTTP sink's settings.
#include <algorithm>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <sstream>
#include <thread>

#include <httplib.h>

#include "harness/monitor/influx_exporter.h"
#include "harness/monitor/monitoring_settings.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

namespace fs = std::filesystem;

// A sink scripted by the test: records batches, can fail, can block until released.
class ScriptedSink : public LineSink {
 public:
  std::string target() const override { return "scripted"; }
  void send(const std::string& body) override {
    std::unique_lock<std::mutex> lock(mu);
    ++calls;
    entered.notify_all();
    released.wait(lock, [&] { return !hold; });
    if (fail) throw std::runtime_error("scripted failure");
    batches.push_back(body);
  }
  std::mutex mu;
  std::condition_variable entered, released;
  bool hold = false, fail = false;
  int calls = 0;
  std::vector<std::string> batches;
};

MonitoringSettings exporter_settings(int64_t batch, int64_t buffer, double flush_s, double timeout_s) {
  MonitoringSettings m;
  m.influx_batch_points = batch;
  m.influx_buffer_points = buffer;
  m.influx_flush_interval_s = flush_s;
  m.influx_timeout_s = timeout_s;
  return m;
}

TEST(InfluxExporter, SendsEveryPointInBatchesNoLargerThanTheBatchSize) {
  auto sink = std::make_unique<ScriptedSink>();
  ScriptedSink* s = sink.get();
  InfluxExporter ex(std::move(sink), exporter_settings(100, 10000, 0.05, 1), {"h", "r"});
  for (int i = 0; i < 1234; ++i) ex.push("m v=" + std::to_string(i) + "i " + std::to_string(i));
  const InfluxStats st = ex.finish();
  EXPECT_EQ(st.points_queued, 1234);
  EXPECT_EQ(st.points_sent, 1234);
  EXPECT_EQ(st.points_lost(), 0);
  std::string all;
  for (const auto& b : s->batches) {
    EXPECT_LE(std::count(b.begin(), b.end(), '\n'), 100);
    all += b;
  }
  std::istringstream in(all);
  int i = 0;
  for (std::string line; std::getline(in, line); ++i) ASSERT_EQ(line, "m v=" + std::to_string(i) + "i " + std::to_string(i));
  EXPECT_EQ(i, 1234);  // in order, none twice
}

TEST(InfluxExporter, AHangingServerNeverBlocksPushAndTheBoundDropsNewPoints) {
  auto sink = std::make_unique<ScriptedSink>();
  ScriptedSink* s = sink.get();
  s->hold = true;
  InfluxExporter ex(std::move(sink), exporter_settings(10, 50, 0.01, 0.2), {"h", "r"});
  ex.push("m v=0 0");
  {
    std::unique_lock<std::mutex> lock(s->mu);
    s->entered.wait(lock, [&] { return s->calls > 0; });  // the sender is stuck inside send()
  }
  for (int i = 1; i < 1000; ++i) ex.push("m v=" + std::to_string(i) + " " + std::to_string(i));  // returns: never waits
  InfluxStats st = ex.stats();
  EXPECT_EQ(st.points_queued, 1000);
  EXPECT_EQ(st.points_dropped, 950);  // 50 held (the one in flight among them)
  {
    std::lock_guard<std::mutex> lock(s->mu);
    s->hold = false;
  }
  s->released.notify_all();
  st = ex.finish();
  EXPECT_EQ(st.points_sent, 50);
  EXPECT_EQ(st.points_unsent, 0);
  EXPECT_EQ(st.points_lost(), 950);
  EXPECT_NE(s->batches.front().find("m v=0 0\n"), std::string::npos);  // the oldest kept
}

TEST(InfluxExporter, RetriesAfterAFailureWithoutLosingOrRepeatingPoints) {
  auto sink = std::make_unique<ScriptedSink>();
  ScriptedSink* s = sink.get();
  s->fail = true;
  InfluxExporter ex(std::move(sink), exporter_settings(1000, 10000, 0.01, 1), {"h", "r"});
  for (int i = 0; i < 10; ++i) ex.push("m v=" + std::to_string(i) + " " + std::to_string(i));
  ASSERT_TRUE(eventually([&] { return ex.stats().requests_failed > 0; }));
  {
    std::lock_guard<std::mutex> lock(s->mu);
    s->fail = false;
  }
  ASSERT_TRUE(eventually([&] { return ex.stats().points_sent >= 10; }));  // the backoff retry
  const InfluxStats st = ex.finish();
  EXPECT_EQ(st.points_sent, 10);
  EXPECT_GE(st.requests_failed, 1);
  EXPECT_EQ(st.last_error, "scripted failure");
  std::string all;
  for (const auto& b : s->batches) all += b;
  EXPECT_EQ(std::count(all.begin(), all.end(), '\n'), 10);
}

TEST(InfluxExporter, WhatCannotBeSentByTheEndIsCountedAsUnsent) {
  auto sink = std::make_unique<ScriptedSink>();
  sink->fail = true;
  InfluxExporter ex(std::move(sink), exporter_settings(5, 100, 10, 0.1), {"h", "r"});  // flush interval 10 s: none yet
  for (int i = 0; i < 3; ++i) ex.push("m v=1 " + std::to_string(i));
  const InfluxStats st = ex.finish();
  EXPECT_EQ(st.points_sent, 0);
  EXPECT_EQ(st.points_unsent, 3);
  EXPECT_EQ(st.points_lost(), 3);
  EXPECT_EQ(st.requests_failed, 1);  // the final flush tried once and gave up
}

TEST(InfluxExporter, FileSinkWritesUnderAPartialNameAndRenamesAtTheEnd) {
  TempDir dir;
  const std::string path = dir.path("points.lp");
  InfluxExporter ex(make_file_sink(path), exporter_settings(2, 100, 0.01, 1), {"h", "r"});
  ex.push("m v=1 1");
  ex.push("m v=2 2");
  ASSERT_TRUE(eventually([&] { return ex.stats().points_sent >= 2; }));
  EXPECT_TRUE(fs::exists(path + ".partial"));
  EXPECT_FALSE(fs::exists(path));
  ex.push("m v=3 3");
  const InfluxStats st = ex.finish();
  EXPECT_EQ(st.points_sent, 3);
  EXPECT_FALSE(fs::exists(path + ".partial"));
  EXPECT_EQ(read_text(path), "m v=1 1\nm v=2 2\nm v=3 3\n");
  expect_input_error([&] { make_file_sink(dir.path("no/such/folder/x.lp")); }, "is not a writable folder");
}

TEST(InfluxExporter, HttpSinkNeedsThePasswordVariableWhenAUserIsGiven) {
  MonitoringSettings m;
  m.influx_url = "http://127.0.0.1:1";
  m.influx_username = "alice";
  m.influx_password_env = "BALERBENCH_TEST_NO_SUCH_VARIABLE";
  expect_input_error([&] { make_http_sink(m); }, "BALERBENCH_TEST_NO_SUCH_VARIABLE");
}

// The start-up check: a server that answers /ping is fine; a port nothing listens on is named at once.
TEST(InfluxExporter, UnreachableServerIsSaidAtOnce) {
  httplib::Server server;
  server.Get("/ping", [](const httplib::Request&, httplib::Response& res) { res.status = 204; });
  const int port = server.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread serving([&] { server.listen_after_bind(); });
  ASSERT_TRUE(eventually([&] { return server.is_running(); }));
  MonitoringSettings m;
  m.influx_url = "http://127.0.0.1:" + std::to_string(port);
  EXPECT_EQ(influx_unreachable(m), "");
  server.stop();
  serving.join();
  // The same port, now closed: an error text, not an exception, and no wait beyond the check's 2 s.
  EXPECT_NE(influx_unreachable(m), "");
}

}  // namespace
}  // namespace balerbench
