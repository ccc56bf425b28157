// test_prometheus_text.cpp: the Prometheus text format: families, labels and escaping.
#include <regex>
#include <set>
#include <sstream>

#include "harness/monitor/influx_exporter.h"
#include "harness/monitor/live_metrics.h"
#include "harness/monitor/prometheus_text.h"
#include "tests/test_util.h"
#include "tests/unit/two_domain_meter.h"

namespace balerbench {
namespace {

TEST(Prometheus, TextFormatFamiliesLabelsAndEscaping) {
  LiveMetrics live("train");
  live.set_meters(two_domain_meters());
  const auto t0 = SteadyClock::now();
  live.on_snapshot(snap(t0, 0, 100, 40));
  live.on_snapshot(snap(t0, 1, 100, 40));
  live.begin_trial({"we\"ird\\name\n", 1, 3, 256, "amp_bf16", "none"});
  live.on_epoch({2, 4, 0.5, kNoValue, 2000, 1.0});
  ExpositionContext c;
  c.version = "0.1.0";
  c.host = "h";
  c.process.resident_memory_bytes = 1024;
  c.gpus.push_back({0, "Fake H100", "GPU-1", 1e9, 8e10});
  InfluxStats i;
  i.target = "http://x";
  i.points_sent = 7;
  c.influx.push_back(i);
  const std::string text = render_prometheus(live.state(), c);
  EXPECT_NE(text.find("# TYPE balerbench_power_watts gauge\n"), std::string::npos);
  EXPECT_NE(text.find("balerbench_power_watts{meter=\"two\",domain=\"pkg\",kind=\"measured\",category=\"cpu\","
                      "in_total=\"true\"} 100\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE balerbench_energy_joules_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("balerbench_trial_info{experiment=\"we\\\"ird\\\\name\\n\",trial=\"1/3\",batch_size=\"256\","
                      "precision=\"amp_bf16\",power_limit_w=\"none\"} 1\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("balerbench_trial_epoch{"), std::string::npos);
  EXPECT_EQ(text.find("balerbench_trial_val_loss"), std::string::npos);  // unknown: left out, not NaN
  EXPECT_NE(text.find("balerbench_gpu_memory_used_bytes{gpu=\"0\",uuid=\"GPU-1\",name=\"Fake H100\"} 1000000000\n"),
            std::string::npos);
  EXPECT_NE(text.find("balerbench_influx_points_sent_total{target=\"http://x\"} 7\n"), std::string::npos);
  // Every sample line: name{labels} value, and every family declared once before its samples.
  const std::regex sample(R"(^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*",?)*\})? [-+0-9.eEaNInf]+$)");
  std::istringstream in(text);
  std::set<std::string> declared;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# TYPE ", 0) == 0) {
      const std::string name = line.substr(7, line.find(' ', 7) - 7);
      EXPECT_TRUE(declared.insert(name).second) << "declared twice: " << name;
      continue;
    }
    if (line.rfind("# HELP ", 0) == 0) continue;
    EXPECT_TRUE(std::regex_match(line, sample)) << line;
    const std::string name = line.substr(0, line.find_first_of("{ "));
    EXPECT_TRUE(declared.count(name)) << "no TYPE for " << name;
  }
}

}  // namespace
}  // namespace balerbench
