// test_live_metrics.cpp: live power over a trailing window, its ± and attributable part, the
// trial's energy and clock, and the observers.
#include <cmath>

#include "harness/monitor/influx_line.h"
#include "harness/monitor/live_metrics.h"
#include "harness/monitor/prometheus_text.h"
#include "tests/test_util.h"
#include "tests/unit/two_domain_meter.h"

namespace balerbench {
namespace {

TEST(LiveMetrics, PowerIsTheMeanOverTheTrailingWindow) {
  LiveMetrics live("measure", 1.0);
  live.set_meters(two_domain_meters());
  const auto t0 = SteadyClock::now();
  EXPECT_TRUE(std::isnan(live.total_power_w()));
  live.on_snapshot(snap(t0, 0, 100, 40));
  EXPECT_TRUE(std::isnan(live.total_power_w()));  // one point: no power yet
  // 100 W for 2 s, then 300 W: at t = 2.5 the trailing second holds 0.5 s of each.
  for (int i = 1; i <= 20; ++i) live.on_snapshot(snap(t0, 0.1 * i, 100, 40));
  Snapshot late = snap(t0, 2.5, 0, 0);
  late.readings[0].energy_j = {1000 + 200 + 300 * 0.5, 500 + 80 + 40 * 0.5};
  for (int i = 1; i <= 4; ++i) {
    Snapshot s = snap(t0, 2.0 + 0.1 * i, 0, 0);
    s.readings[0].energy_j = {1000 + 200 + 300 * 0.1 * i, 500 + 80 + 40 * 0.1 * i};
    live.on_snapshot(s);
  }
  live.on_snapshot(late);
  const LiveState s = live.state();
  EXPECT_NEAR(s.power.domains[0].power_w, 200, 1e-9);  // (300 x 0.5 + 100 x 0.5) / 1 s
  EXPECT_NEAR(s.power.domains[1].power_w, 40, 1e-9);
  EXPECT_NEAR(s.power.total_power_w, 200, 1e-9);  // core is inside pkg
  EXPECT_NEAR(s.power.domains[0].energy_j, 350, 1e-9);
  EXPECT_NEAR(s.power.total_energy_j, 350, 1e-9);
  EXPECT_EQ(s.snapshots, 26);
  live.on_snapshot(snap(t0, 1.0, 999, 999));  // older than the newest: ignored
  EXPECT_EQ(live.state().snapshots, 26);
}

// A CPU and a GPU domain whose meter states its resolution: a 0.1 s update period, 1 mJ counts and 2%.
class ResolvedMeter : public EnergyMeter {
 public:
  ResolvedMeter() { domains_ = {{"pkg", DomainCategory::kCpu, true, ""}, {"gpu0", DomainCategory::kGpu, true, ""}}; }
  std::string name() const override { return "resolved"; }
  MeterKind kind() const override { return MeterKind::kMeasured; }
  const std::vector<Domain>& domains() const override { return domains_; }
  double update_period_s() const override { return 0.1; }
  EdgeModel edge_model() const override {
    EdgeModel m;
    m.update_period_s = 0.1;
    m.step_j = 0.001;
    m.accuracy_fraction = 0.02;
    return m;
  }
  MeterReading read() override { return {}; }

 private:
  std::vector<Domain> domains_;
};

// The live figures carry the windows' ±, and the part attributable to the process tree beside the
// absolute power: over the trailing second the tree had 0.5 of the host's 2 busy CPU seconds (a quarter
// of the package's 100 W) and 300 of the 400 percent-samples of SM use (three quarters of the GPU's
// 200 W). Both exporters carry them.
TEST(LiveMetrics, PowerAndEnergyCarryTheirPlusMinusAndTheAttributablePart) {
  LiveMetrics live("train", 1.0);
  std::vector<std::unique_ptr<EnergyMeter>> meters;
  meters.push_back(std::make_unique<ResolvedMeter>());
  live.set_meters(meters);
  const auto t0 = SteadyClock::now();
  const auto at = [&](double t_s, double tree_cpu_s, double busy_cpu_s, double tree_sm, double all_sm) {
    Snapshot s;
    s.time = t0 + std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(t_s));
    s.unix_s = 1.7e9 + t_s;
    MeterReading r;
    r.time = s.time;
    r.energy_j = {100 * t_s, 200 * t_s};
    r.tree_use = {kNoValue, tree_sm};
    r.all_use = {kNoValue, all_sm};
    s.readings.push_back(r);
    s.process = {true, tree_cpu_s, busy_cpu_s, 1, 0.01};
    return s;
  };
  live.on_snapshot(at(0, 0, 0, 0, 0));
  live.on_snapshot(at(1, 0.5, 2.0, 300, 400));
  const LiveState s = live.state();
  const DomainPower &cpu = s.power.domains[0], &gpu = s.power.domains[1];
  EXPECT_NEAR(cpu.power_w, 100, 1e-9);
  EXPECT_NEAR(cpu.energy_uncertainty_j, 2 * 0.001 + 100 * 0.1 + 0.02 * 100, 1e-9);
  EXPECT_NEAR(cpu.power_uncertainty_w, (2 * 0.001 + 100 * 0.1) / 1.0 + 0.02 * 100, 1e-9);
  EXPECT_NEAR(gpu.energy_uncertainty_j, 2 * 0.001 + 200 * 0.1 + 0.02 * 200, 1e-9);
  EXPECT_NEAR(s.power.total_energy_uncertainty_j, std::hypot(0.002 + 10, 0.002 + 20) + 2 + 4, 1e-9);
  EXPECT_NEAR(cpu.attributable_power_w, 25, 1e-9);
  EXPECT_NEAR(gpu.attributable_power_w, 150, 1e-9);
  EXPECT_NEAR(s.power.total_power_w, 300, 1e-9);  // absolute, never mixed with the attributable
  // No SM use by anyone in the trailing window: none of the GPU's power is the run's.
  live.on_snapshot(at(2.5, 1.0, 3.0, 300, 400));
  EXPECT_NEAR(live.state().power.domains[1].attributable_power_w, 0, 1e-12);
  EXPECT_NEAR(live.state().power.domains[0].attributable_power_w, 100 * 0.5, 1e-9);

  ExpositionContext c;
  const std::string text = render_prometheus(s, c);
  EXPECT_NE(text.find("# TYPE balerbench_power_uncertainty_watts gauge\n"), std::string::npos) << text;
  EXPECT_NE(text.find("balerbench_attributable_power_watts{meter=\"resolved\",domain=\"gpu0\",kind=\"measured\","
                      "category=\"gpu\",in_total=\"true\"} 150\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("balerbench_energy_uncertainty_joules{meter=\"resolved\",domain=\"pkg\""), std::string::npos);
  const auto lines = power_lines(s, {"h", "r"});
  EXPECT_NE(lines[0].find(",attributable_power_w=25 "), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find(",power_pm_w=24.001999999999999,energy_pm_j=24.001999999999999,attributable_power_w=150 "), std::string::npos)
      << lines[1];
}

TEST(LiveMetrics, SlowSensorsGetTwiceTheirUpdatePeriod) {
  LiveMetrics live("measure", 1.0);
  live.set_meters(two_domain_meters(/*update_period_s=*/2.0));  // window 4 s
  const auto t0 = SteadyClock::now();
  for (int i = 0; i <= 10; ++i) {  // 0..5 s: 100 W until 3 s, 0 W after
    Snapshot s = snap(t0, 0.5 * i, 0, 0);
    const double t = 0.5 * i;
    s.readings[0].energy_j = {100 * std::min(t, 3.0), 0};
    live.on_snapshot(s);
  }
  EXPECT_NEAR(live.state().power.domains[0].power_w, 100 * 2.0 / 4.0, 1e-9);  // [1 s, 5 s]: 2 s at 100 W
}

TEST(LiveMetrics, TrialEnergyCountsFromTheTrialsStartAndObserversSeeEverything) {
  struct Counting : LiveObserver {
    void on_power(const LiveState&) override { ++power; }
    void on_epoch(const LiveState& s) override { last_epoch = s.epoch.epoch; }
    int power = 0;
    int64_t last_epoch = 0;
  } obs;
  LiveMetrics live("train");
  live.set_meters(two_domain_meters());
  live.add_observer(&obs);
  const auto t0 = SteadyClock::now();
  live.on_snapshot(snap(t0, 0, 50, 10));
  live.on_snapshot(snap(t0, 1, 50, 10));
  live.begin_trial({"e", 1, 1, 64, "fp64", "none"});
  live.on_snapshot(snap(t0, 3, 50, 10));
  live.on_epoch({1, 5, 1, 1, 1, 1});
  EXPECT_NEAR(live.state().trial_energy_j, 100, 1e-9);
  EXPECT_EQ(obs.power, 3);
  EXPECT_EQ(obs.last_epoch, 1);
  live.remove_observer(&obs);
  live.on_snapshot(snap(t0, 4, 50, 10));
  EXPECT_EQ(obs.power, 3);
}

// A trial begun before the first meter reading LiveMetrics sees (a command attaches it after the
// sampler's first snapshot, so its first comes a sampling period later): the trial's energy counts
// from that reading, and so does its clock, so energy / duration is the mean power. With the clock at
// begin_trial, a 150 W simulated GPU's trial read 150.7-153 W with the CPU estimate, and 148.8 W once.
TEST(LiveMetrics, ATrialBegunBeforeAnyReadingIsTimedFromTheFirstReading) {
  LiveMetrics live("train");
  live.set_meters(two_domain_meters());
  const auto t0 = SteadyClock::now();
  live.begin_trial({"e", 1, 1, 64, "fp64", "none"});
  EXPECT_EQ(live.state().trial_duration_s, 0);
  live.on_snapshot(snap(t0, 1, 50, 10));
  EXPECT_NEAR(live.state().trial_duration_s, 0, 1e-9);
  live.on_snapshot(snap(t0, 3, 50, 10));
  const LiveState s = live.state();
  EXPECT_NEAR(s.trial_duration_s, 2, 1e-6);
  EXPECT_NEAR(s.trial_energy_j / s.trial_duration_s, 50, 1e-6);  // pkg's 50 W (core is inside it)
  // A later trial, begun after readings, starts at the last of them, as before.
  live.end_trial();
  live.begin_trial({"e", 2, 2, 64, "fp64", "none"});
  live.on_snapshot(snap(t0, 4, 50, 10));
  EXPECT_NEAR(live.state().trial_duration_s, 1, 1e-6);
  EXPECT_NEAR(live.state().trial_energy_j, 50, 1e-6);
}

}  // namespace
}  // namespace balerbench
