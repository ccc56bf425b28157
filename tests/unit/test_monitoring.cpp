// test_monitoring.cpp: the live side: line protocol, the Prometheus text
// format, live power over a trailing window, the InfluxDB exporter's buffer
// (batches, bound, retry, a sink that hangs, the final flush), the file sink,
// the Prometheus endpoint, the monitoring section, the progress lines and the
// sampler's listeners.
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <regex>
#include <sstream>

#include "harness/energy/sampler.h"
#include "harness/engine/memory_peak.h"
#include "harness/monitor/progress.h"
#include "harness/monitor/influx_exporter.h"
#include "harness/monitor/influx_line.h"
#include "harness/monitor/live_metrics.h"
#include "harness/monitor/monitoring_settings.h"
#include "harness/monitor/process_stats.h"
#include "harness/monitor/prometheus_server.h"
#include "harness/monitor/prometheus_text.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Two domains: "pkg" (counted in totals) and "core" inside it (not counted).
class TwoDomainMeter : public EnergyMeter {
 public:
  explicit TwoDomainMeter(double update_period_s = 0.001) : period_(update_period_s) {
    domains_ = {{"pkg", DomainCategory::kCpu, true, ""}, {"core", DomainCategory::kCpu, false, "inside pkg"}};
  }
  std::string name() const override { return "two"; }
  MeterKind kind() const override { return MeterKind::kMeasured; }
  const std::vector<Domain>& domains() const override { return domains_; }
  double update_period_s() const override { return period_; }
  MeterReading read() override { return {SteadyClock::now(), {0, 0}}; }

 private:
  double period_;
  std::vector<Domain> domains_;
};

std::vector<std::unique_ptr<EnergyMeter>> two_domain_meters(double period_s = 0.001) {
  std::vector<std::unique_ptr<EnergyMeter>> v;
  v.push_back(std::make_unique<TwoDomainMeter>(period_s));
  return v;
}

// A snapshot at t0 + t_s with pkg at pkg_w and core at core_w since t0 (energy = power x time + 1000 J).
Snapshot snap(SteadyClock::time_point t0, double t_s, double pkg_w, double core_w) {
  Snapshot s;
  s.time = t0 + std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(t_s));
  s.unix_s = 1.7e9 + t_s;
  s.readings.push_back({s.time, {1000 + pkg_w * t_s, 500 + core_w * t_s}});
  return s;
}

// A known allocation: 256 MiB written inside a phase raises its peak resident set by at least that much
// over the set at its start; the next phase, reset, reads below that peak again once the block is
// returned (glibc gives blocks this large back to the kernel at once).
TEST(MemoryPeak, PhasePeakSeesAKnownAllocationAndTheNextPhaseIsReset) {
  constexpr std::size_t kBlockMib = 256;
  MemoryPeakTracker tracker;
  tracker.start();
  const auto before = resident_set_mib();
  ASSERT_TRUE(before);
  {
    std::vector<char> block(kBlockMib << 20);
    std::memset(block.data(), 1, block.size());  // resident once written
    volatile char sink = block[block.size() / 2];
    (void)sink;
  }
  const MemoryPeak first = tracker.finish();
  ASSERT_TRUE(first.host_peak_rss_mib) << first.host_basis;
  EXPECT_GE(*first.host_peak_rss_mib, *before + kBlockMib - 1) << first.host_basis;
  EXPECT_FALSE(first.cuda_peak_reserved_mib);  // no CUDA device followed
  const nlohmann::json j = first.to_json();
  EXPECT_TRUE(j["cuda_peak_allocated_mib"].is_null());
  EXPECT_EQ(j["host_basis"], first.host_basis);
  if (first.host_basis.find("VmHWM, reset") == std::string::npos)
    GTEST_SKIP() << "this kernel refuses /proc/self/clear_refs: " << first.host_basis;
  tracker.start();
  const MemoryPeak second = tracker.finish();
  ASSERT_TRUE(second.host_peak_rss_mib);
  EXPECT_LT(*second.host_peak_rss_mib, *first.host_peak_rss_mib - kBlockMib / 2);
}

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
}

std::string progress_output(const std::function<void(Progress&)>& f, ProgressContext ctx) {
  std::FILE* tmp = std::tmpfile();
  {
    Progress p("lines", std::move(ctx), tmp);
    f(p);
  }
  std::rewind(tmp);
  std::string out;
  for (int c; (c = std::fgetc(tmp)) != EOF;) out += static_cast<char>(c);
  std::fclose(tmp);
  return out;
}

TEST(Progress, PlainLinesAreThinnedButKeepFirstLastAndLearningRateDrops) {
  ProgressContext ctx;
  ctx.line_interval_s = 3600;
  ctx.run_ordinal = 2;
  ctx.run_count = 6;
  ctx.power_w = [] { return 41.25; };
  const std::string out = progress_output(
      [](Progress& p) {
        for (int64_t e = 1; e <= 10; ++e) {
          EpochLine l;
          l.epoch = e;
          l.epochs = 10;
          l.lr_reduced = e == 4;
          l.final = e == 7;  // early stopping
          p.epoch(l);
          if (e == 7) break;
        }
      },
      ctx);
  EXPECT_NE(out.find("[trial 2/6] Epoch 1/10"), std::string::npos) << out;
  EXPECT_NE(out.find("Epoch 4/10"), std::string::npos) << out;
  EXPECT_NE(out.find("Epoch 7/10"), std::string::npos) << out;
  EXPECT_EQ(out.find("Epoch 2/10"), std::string::npos) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 3);
  EXPECT_NE(out.find("41.2 W  ~"), std::string::npos) << out;  // power and time left on the first line
  EXPECT_EQ(progress_output([](Progress& p) { p.epoch({1, 2}); p.epoch({2, 2}); }, {}).find("W "), std::string::npos);
  EXPECT_EQ(format_duration(45), "45 s");
  EXPECT_EQ(format_duration(185), "3m05s");
  EXPECT_EQ(format_duration(7440), "2h04m");
}

TEST(ProcessStats, ThisProcessAndTheFakeGpusMemory) {
  const ProcessStats p = read_process_stats();
  EXPECT_GT(p.resident_memory_bytes, 1e6);
  EXPECT_GE(p.virtual_memory_bytes, p.resident_memory_bytes);
  EXPECT_GE(p.threads, 1);
  EXPECT_GT(p.cpu_s, 0.0);
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_LE(p.start_time_unix_s, now + 1);
  EXPECT_GT(p.start_time_unix_s, now - 86400);

  TempDir dir;
  write_text(dir.path("nvml.json"), R"({"devices": [{"name": "Fake H100", "uuid": "GPU-a", "memory_total_bytes": 85899345920,
                                       "memory_used_bytes": 1073741824}, {"name": "Fake L4", "uuid": "GPU-b"}]})");
  setenv("BALERBENCH_NVML_LIB", FAKE_NVML_LIB, 1);
  setenv("FAKE_NVML_CONFIG", dir.path("nvml.json").c_str(), 1);
  setenv("CUDA_VISIBLE_DEVICES", "GPU-a", 1);
  {
    GpuMemoryReader reader;
    ASSERT_TRUE(reader.available());
    const auto gpus = reader.read();
    ASSERT_EQ(gpus.size(), 1u);  // CUDA_VISIBLE_DEVICES hides the L4
    EXPECT_EQ(gpus[0].name, "Fake H100");
    EXPECT_EQ(gpus[0].used_bytes, 1073741824.0);
    EXPECT_EQ(gpus[0].total_bytes, 85899345920.0);
  }
  unsetenv("CUDA_VISIBLE_DEVICES");
  setenv("BALERBENCH_NVML_LIB", "/nonexistent/libnvidia-ml.so.1", 1);
  EXPECT_TRUE(GpuMemoryReader().read().empty());  // no driver: no GPU series, no error
  unsetenv("BALERBENCH_NVML_LIB");
  unsetenv("FAKE_NVML_CONFIG");
}

TEST(Sampler, ListenersSeeEverySnapshotUntilRemoved) {
  Sampler sampler(two_domain_meters(), 0);
  std::atomic<int> seen{0};
  const int id = sampler.add_listener([&](const Snapshot& s) {
    EXPECT_EQ(s.readings.size(), 1u);
    ++seen;
  });
  sampler.start();  // one snapshot
  sampler.snapshot();
  sampler.remove_listener(id);
  sampler.snapshot();
  EXPECT_EQ(seen.load(), 2);
  EXPECT_GE(sampler.overhead().listener_time_s, 0.0);
}

}  // namespace
}  // namespace balerbench
