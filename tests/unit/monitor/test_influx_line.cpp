// test_influx_line.cpp: the InfluxDB line protocol: escaping, non-finite fields, the power and
// epoch points with the trial's tags.
#include "harness/monitor/influx_line.h"
#include "harness/monitor/live_metrics.h"
#include "tests/test_util.h"
#include "tests/unit/two_domain_meter.h"

namespace balerbench {
namespace {

TEST(LineProtocol, EscapesKeysTagsAndStringsAndMarksIntegers) {
  LinePoint p("my measurement,x");
  p.tag("host name", "a=b,c d").tag("empty", "").field("power_w", 12.5).field_int("epoch", 3).field_str("note", "say \"hi\" \\ ok");
  EXPECT_EQ(p.line(1700000000000000001),
            "my\\ measurement\\,x,host\\ name=a\\=b\\,c\\ d power_w=12.5,epoch=3i,note=\"say \\\"hi\\\" \\\\ ok\" "
            "1700000000000000001");
}

TEST(LineProtocol, LeavesOutNonFiniteFieldsAndEmptyPoints) {
  LinePoint p("m");
  p.field("a", kNoValue).field("b", 1.0 / 0.0);
  EXPECT_EQ(p.line(1), "");
  p.field("c", 0.1);
  EXPECT_EQ(p.line(1), "m c=0.10000000000000001 1");
  EXPECT_EQ(unix_ns_of(1.5), 1500000000);
}

TEST(LineProtocol, PowerAndEpochPointsCarryTheTrialTags) {
  LiveMetrics live("train");
  live.set_meters(two_domain_meters());
  const auto t0 = SteadyClock::now();
  live.on_snapshot(snap(t0, 0, 100, 40));
  live.on_snapshot(snap(t0, 2, 100, 40));
  live.begin_trial({"cms", 2, 6, 512, "fp32", "250"});
  live.on_epoch({3, 10, 0.5, 0.25, 1000, 1.0});
  const LiveState s = live.state();
  const auto lines = power_lines(s, {"h1", "run-1"});
  ASSERT_EQ(lines.size(), 3u);  // pkg, core, total
  EXPECT_EQ(lines[0], "balerbench_power,host=h1,run_id=run-1,command=train,experiment=cms,trial=2/6,batch_size=512,"
                      "precision=fp32,power_limit_w=250,meter=two,domain=pkg,kind=measured,category=cpu "
                      "power_w=100,energy_j=200,power_pm_w=0.050000000000000003,energy_pm_j=0.10000000000000001 " +
                          std::to_string(unix_ns_of(1.7e9 + 2)));  // the ±: 100 W x 1 ms, over 2 s for the power
  EXPECT_NE(lines[2].find("balerbench_power_total,"), std::string::npos);
  EXPECT_NE(lines[2].find(" power_w=100,energy_j=200,energy_pm_j=0.10000000000000001 "), std::string::npos) << lines[2];  // core not added
  const auto e = epoch_lines(s, {"h1", "run-1"}, 1.7e9);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find(" epoch=3i,epochs=10i,train_loss=0.5,val_loss=0.25,samples_per_s=1000,epoch_duration_s=1,"),
            std::string::npos) << e[0];
}

}  // namespace
}  // namespace balerbench
