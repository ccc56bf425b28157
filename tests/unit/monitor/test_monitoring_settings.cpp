// test_monitoring_settings.cpp: the monitoring section's strict keys and values.
#include "harness/monitor/monitoring_settings.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

using nlohmann::json;

TEST(MonitoringSettings, StrictKeysAndValues) {
  const auto parse = [](const json& j) { return parse_monitoring_settings(j, "cfg.json", "/monitoring", "/base"); };
  const MonitoringSettings m = parse({{"prometheus_port", 0}, {"influx_file", "out/p.lp"}});
  EXPECT_TRUE(m.prometheus());
  EXPECT_EQ(m.influx_file, "/base/out/p.lp");
  EXPECT_FALSE(parse(json::object()).enabled());
  expect_input_error([&] { parse({{"prometheus_prot", 9464}}); }, "/monitoring/prometheus_prot");
  expect_input_error([&] { parse({{"prometheus_port", 70000}}); }, "TCP port");
  expect_input_error([&] { parse({{"influx_url", "udp://x:8089"}}); }, "http:// or https://");
  expect_input_error([&] { parse({{"influx_batch_points", 10}, {"influx_buffer_points", 5}}); }, "influx_buffer_points");
  // The experiment label (--experiment) is shown by every dashboard: no bidirectional or C1 control.
  expect_input_error([&] { parse({{"experiment", "run\xE2\x80\xAE" "1"}}); },
                     "/monitoring/experiment: 'run\\u202E1' holds a bidirectional control (U+202E) at byte 3");
  expect_input_error([&] { parse({{"experiment", "a\xC2\x85"}}); }, "holds a control character (U+0085)");
  EXPECT_EQ(parse({{"experiment", "été"}}).experiment, "été");
}

}  // namespace
}  // namespace balerbench
