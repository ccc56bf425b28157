// test_sampler.cpp: the sampler thread, windows (energy, mean and peak power,
// net of an idle baseline), phases, the session and its outputs
// (energy_report.json, CodeCarbon-compatible emissions.csv). Everything runs on a fake clock
// (tests/fakes/fake_clock.h): the thread reads at its ticks exactly, and the figures are exact.
#include <atomic>
#include <chrono>
#include <cmath>
#include <fstream>

#include "harness/energy/emissions_csv.h"
#include "harness/energy/energy_session.h"
#include "harness/energy/energy_window.h"
#include "harness/energy/ram_estimate_meter.h"
#include "harness/energy/sampler.h"
#include "tests/fakes/fake_clock.h"
#include "tests/test_util.h"
#include "tests/unit/two_domain_meter.h"

namespace balerbench {
namespace {

// A meter with a scripted power: low_w until switch_s after creation, then high_w.
class ScriptedMeter : public EnergyMeter {
 public:
  ScriptedMeter(double low_w, double high_w, double switch_s, TimeSource& clock)
      : low_(low_w), high_(high_w), switch_(switch_s), clock_(clock), t0_(clock.now()) {
    domains_.push_back({"dev", DomainCategory::kGpu, true, ""});
  }
  std::string name() const override { return "scripted"; }
  MeterKind kind() const override { return MeterKind::kMeasured; }
  const std::vector<Domain>& domains() const override { return domains_; }
  double update_period_s() const override { return 0.001; }
  MeterReading read() override {
    MeterReading r;
    r.time = clock_.now();
    const double t = std::chrono::duration<double>(r.time - t0_).count();
    r.energy_j = {t < switch_ ? low_ * t : low_ * switch_ + high_ * (t - switch_)};
    return r;
  }

 private:
  double low_, high_, switch_;
  TimeSource& clock_;
  SteadyClock::time_point t0_;
  std::vector<Domain> domains_;
};

std::vector<std::unique_ptr<EnergyMeter>> scripted(double low_w, double high_w, double switch_s, TimeSource& clock) {
  std::vector<std::unique_ptr<EnergyMeter>> v;
  v.push_back(std::make_unique<ScriptedMeter>(low_w, high_w, switch_s, clock));
  return v;
}

// A meter with a fixed power and a stated edge model (period, count, accuracy), for the ± rules.
class ModelledMeter : public EnergyMeter {
 public:
  ModelledMeter(MeterKind kind, double power_w, EdgeModel model, TimeSource& clock)
      : kind_(kind), power_(power_w), model_(model), clock_(clock), t0_(clock.now()) {
    domains_.push_back({"dev", DomainCategory::kCpu, true, ""});
  }
  std::string name() const override { return kind_ == MeterKind::kMeasured ? "modelled" : "estimate"; }
  MeterKind kind() const override { return kind_; }
  const std::vector<Domain>& domains() const override { return domains_; }
  double update_period_s() const override { return model_.update_period_s; }
  EdgeModel edge_model() const override {
    return kind_ == MeterKind::kMeasured ? model_ : EnergyMeter::edge_model();
  }
  MeterReading read() override {
    MeterReading r;
    r.time = clock_.now();
    r.energy_j = {power_ * std::chrono::duration<double>(r.time - t0_).count()};
    return r;
  }

 private:
  MeterKind kind_;
  double power_;
  EdgeModel model_;
  TimeSource& clock_;
  SteadyClock::time_point t0_;
  std::vector<Domain> domains_;
};

// Each window's ± is (power at the edges) x update period + a count at each edge + the stated accuracy
// x energy; a phase of several windows adds the edge parts in quadrature and the accuracy linearly;
// estimates carry none, and the coverage says so.
TEST(Uncertainty, WindowsCarryTheirMetersResolution) {
  EdgeModel m;
  m.update_period_s = 0.05;
  m.step_j = 0.001;
  m.accuracy_fraction = 0.02;
  m.accuracy_stated = true;
  FakeClock clock;
  std::vector<std::unique_ptr<EnergyMeter>> meters;
  meters.push_back(std::make_unique<ModelledMeter>(MeterKind::kMeasured, 200, m, clock));
  meters.push_back(std::make_unique<ModelledMeter>(MeterKind::kEstimated, 50, m, clock));
  Sampler sampler(std::move(meters), 0, Sampler::kMaxPoints, clock);
  const Snapshot a = sampler.snapshot();
  clock.advance_s(0.2);
  const Snapshot b = sampler.snapshot();
  const WindowResult w = make_window("w", a, b, {}, sampler.meters(), nullptr);
  ASSERT_EQ(w.domains.size(), 2u);
  const DomainEnergy& measured = w.domains[0];
  EXPECT_NEAR(measured.energy_j, 200 * 0.2, 1e-9);
  ASSERT_TRUE(measured.uncertainty_j());
  EXPECT_NEAR(*measured.edge_uncertainty_j, 200 * 0.05 + 2 * 0.001, 1e-6);
  EXPECT_NEAR(*measured.accuracy_uncertainty_j, 0.02 * measured.energy_j, 1e-9);
  EXPECT_FALSE(w.domains[1].uncertainty_j());  // an estimate: not quantified
  EXPECT_NEAR(*w.total_uncertainty_j(), *measured.uncertainty_j(), 1e-12);
  EXPECT_EQ(w.uncertainty_coverage(), "partial: not quantified for estimate/dev (estimates, whose model error is not known)");
  const nlohmann::json j = w.to_json();
  EXPECT_NEAR(j["total_uncertainty_pct"].get<double>(), 100 * *w.total_uncertainty_j() / w.total_energy_j(), 1e-9);
  EXPECT_TRUE(j["domains"][1]["uncertainty_j"].is_null());
  // Two windows of one phase: edges in quadrature, accuracy linear.
  clock.advance_s(0.1);
  const Snapshot c = sampler.snapshot();
  const WindowResult w2 = make_window("w", b, c, {}, sampler.meters(), nullptr);
  PhaseTotals phases;
  phases.add(w);
  phases.add(w2);
  const DomainEnergy& sum = phases.find("w")->domains[0];
  EXPECT_NEAR(*sum.edge_uncertainty_j, std::hypot(*measured.edge_uncertainty_j, *w2.domains[0].edge_uncertainty_j),
              1e-9);
  EXPECT_NEAR(*sum.accuracy_uncertainty_j, 0.02 * sum.energy_j, 1e-9);
}

DomainEnergy domain(const std::string& meter, DomainCategory category, MeterKind kind, double energy_j,
                    std::optional<double> edge_j, std::optional<double> accuracy_j = std::nullopt) {
  DomainEnergy d;
  d.meter = meter;
  d.domain = meter == "wattmeter" ? "wall" : "dev";
  d.category = category;
  d.kind = kind;
  d.in_total = category != DomainCategory::kWall;
  d.energy_j = energy_j;
  d.edge_uncertainty_j = edge_j;
  d.accuracy_uncertainty_j = accuracy_j;
  return d;
}

// The FasterPAM row of T6 (docs/reference_tables.md; the figures in docs/energy.md): RAPL + NVML
// 14,107.4 J against the wall's 19,181.3 J. The components are the measured domains of the total (an
// estimate is left out and named), the ± of each
// side adds its edges in quadrature and accuracies linearly, and the reading follows the sign and
// whether the difference is resolved.
TEST(CrossCheck, WallAgainstComponentMeters) {
  WindowResult w;
  w.domains = {domain("rapl", DomainCategory::kCpu, MeterKind::kMeasured, 4107.4, 3.0),
               domain("nvml", DomainCategory::kGpu, MeterKind::kMeasured, 10000.0, 4.0),
               domain("ram_estimate", DomainCategory::kRam, MeterKind::kEstimated, 500.0, std::nullopt),
               domain("wattmeter", DomainCategory::kWall, MeterKind::kMeasured, 19181.3, 2.0, 191.813)};
  const auto x = w.cross_check();
  ASSERT_TRUE(x);
  EXPECT_DOUBLE_EQ(x->components_j, 14107.4);
  EXPECT_EQ(x->components, "rapl + nvml");
  EXPECT_EQ(x->left_out, "ram_estimate/dev (estimated)");
  EXPECT_NEAR(*x->components_uncertainty_j, 5.0, 1e-12);  // hypot(3, 4)
  EXPECT_NEAR(*x->wall_uncertainty_j, 2.0 + 191.813, 1e-9);
  EXPECT_NEAR(*x->ratio(), 14107.4 / 19181.3, 1e-12);
  EXPECT_NEAR(x->unseen_j(), 5073.9, 1e-9);
  EXPECT_NEAR(*x->unseen_fraction(), 0.26452, 1e-5);
  EXPECT_EQ(x->resolved(), std::optional<bool>(true));
  EXPECT_NE(x->reading().find("the wall meter sees 5074 J (26.5% of it) that the component meters do not: fans"),
            std::string::npos)
      << x->reading();
  const nlohmann::json j = w.to_json()["crosscheck"];
  EXPECT_NEAR(j["ratio"].get<double>(), 14107.4 / 19181.3, 1e-12);
  EXPECT_NEAR(j["unseen_pct"].get<double>(), 26.452, 1e-3);
  EXPECT_EQ(j["resolved"], true);

  // Within the ±: not resolved, and said so.
  WindowResult close = w;
  close.domains[3].energy_j = 14200;
  EXPECT_EQ(close.cross_check()->resolved(), std::optional<bool>(false));
  EXPECT_NE(close.cross_check()->reading().find("agree within their ±"), std::string::npos);
  // Components above the wall: a wiring or clock question, not a physical one.
  WindowResult above = w;
  above.domains[3].energy_j = 12000;
  EXPECT_NE(above.cross_check()->reading().find("the component meters read 2107 J (17.6%) more than the wall meter"),
            std::string::npos)
      << above.cross_check()->reading();
  // A component without ±: the difference is given but not judged.
  WindowResult unknown = w;
  unknown.domains[1].edge_uncertainty_j.reset();
  EXPECT_FALSE(unknown.cross_check()->resolved());
  EXPECT_TRUE(unknown.to_json()["crosscheck"]["components_uncertainty_j"].is_null());
  EXPECT_NE(unknown.cross_check()->reading().find("not judged"), std::string::npos);
  // No wall meter, or no measured component: no cross-check.
  WindowResult no_wall = w;
  no_wall.domains.pop_back();
  EXPECT_FALSE(no_wall.cross_check());
  EXPECT_TRUE(no_wall.to_json()["crosscheck"].is_null());
  WindowResult estimates_only = w;
  estimates_only.domains.erase(estimates_only.domains.begin(), estimates_only.domains.begin() + 2);
  EXPECT_FALSE(estimates_only.cross_check());
}

// 100 Hz for 0.5 s: a read at each of the 50 ticks, 10 ms apart, between the start's and the stop's.
TEST(Sampler, PollsAtTheRateAndReportsItsCost) {
  FakeClock clock;
  Sampler sampler(scripted(100, 100, 1e9, clock), 100, Sampler::kMaxPoints, clock);
  const auto start = clock.now();
  sampler.start();
  clock.advance_s(0.5);
  sampler.stop();
  const double ran_s = clock.seconds_since(start);
  const std::vector<Snapshot> series = sampler.series();
  const auto n = series.size();
  EXPECT_EQ(n, 52u);
  EXPECT_LE(static_cast<double>(n), 100.0 * ran_s + 5);  // never faster than the rate
  for (std::size_t i = 1; i + 1 < n; ++i)
    EXPECT_EQ(series[i].time - start, std::chrono::milliseconds(10) * static_cast<int>(i)) << "read " << i;
  const SamplerOverhead o = sampler.overhead();
  EXPECT_EQ(o.reads, static_cast<long long>(n));
  EXPECT_GT(o.read_time_s, 0.0);  // the reads' real cost, on any clock
  EXPECT_DOUBLE_EQ(o.wall_s, 0.5);
  EXPECT_LT(o.cpu_fraction(), 0.5);
  for (std::size_t i = 1; i < n; ++i) EXPECT_LE(series[i - 1].time, series[i].time);
  sampler.stop();  // idempotent
}

TEST(Sampler, SeriesIsBoundedByThinning) {
  FakeClock clock;
  Sampler sampler(scripted(1, 1, 1e9, clock), 0, 16, clock);
  for (int i = 0; i < 1000; ++i) sampler.snapshot();
  const auto s = sampler.series();
  EXPECT_LT(s.size(), 16u);
  EXPECT_GE(s.size(), 4u);
  EXPECT_EQ(sampler.overhead().reads, 1000);
}

// A hand-made series: the peak is the highest mean power over stretches of at least 2 update periods
// (2 ms here) that cover the window end to end, so it is never below the window's mean; a tail shorter
// than a stretch joins the stretch before it (was: left out, and a burst there read mean above peak).
TEST(Window, PeakCoversTheWholeWindowAndIsNeverBelowTheMean) {
  FakeClock clock;
  const auto meters = scripted(0, 0, 0, clock);
  const SteadyClock::time_point t0 = clock.now();
  auto at = [&](double t_s, double energy_j) {
    Snapshot s;
    s.time = t0 + std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(t_s));
    MeterReading r;
    r.time = s.time;
    r.energy_j = {energy_j};
    s.readings.push_back(r);
    return s;
  };
  // 10 W for 1 s in 0.1 s steps, then 0.001 s at 2000 W (2 J): the tail is shorter than a stretch.
  std::vector<Snapshot> inside;
  for (int i = 1; i < 10; ++i) inside.push_back(at(0.1 * i, 1.0 * i));
  inside.push_back(at(1.0, 10.0));
  const WindowResult w = make_window("command", at(0, 0), at(1.001, 12.0), inside, meters, nullptr);
  const DomainEnergy& e = w.domains.at(0);
  EXPECT_NEAR(e.avg_power_w, 12.0 / 1.001, 1e-6);  // the clock's ticks round the times to a nanosecond
  EXPECT_NEAR(e.peak_power_w, 3.0 / 0.101, 1e-5);  // the last 0.1 s stretch with the tail joined to it
  EXPECT_GE(e.peak_power_w, e.avg_power_w);
  // A window shorter than one stretch has no peak to state.
  const WindowResult tiny = make_window("tiny", at(0, 0), at(0.001, 0.01), {}, meters, nullptr);
  EXPECT_TRUE(std::isnan(tiny.domains.at(0).peak_power_w));
}

TEST(Window, EnergyMeanPeakAndNetOfIdle) {
  FakeClock clock;
  Sampler sampler(scripted(100, 300, 0.4, clock), 200, Sampler::kMaxPoints, clock);
  sampler.start();
  const Snapshot i0 = sampler.snapshot();
  clock.advance_s(0.2);
  const IdleBaseline idle = idle_baseline_from(i0, sampler.snapshot());
  EXPECT_NEAR(idle.power_w[0][0], 100.0, 1e-6);
  const Snapshot a = sampler.snapshot();
  clock.advance_s(0.5);  // 0.2 s more at 100 W, then 0.3 s at 300 W
  const Snapshot b = sampler.snapshot();
  sampler.stop();
  // The thread's 100 reads at 200 Hz lie in the window, besides its edges.
  const WindowResult w = make_window("train", a, b, sampler.series_between(a.time, b.time), sampler.meters(), &idle);
  const DomainEnergy& e = w.domains.at(0);
  const double dt = w.duration_s;
  EXPECT_DOUBLE_EQ(dt, 0.5);
  EXPECT_NEAR(e.energy_j, 100.0 * 0.2 + 300.0 * 0.3, 1e-9);
  EXPECT_NEAR(e.avg_power_w, e.energy_j / dt, 1e-9);
  EXPECT_NEAR(e.peak_power_w, 300.0, 1e-6);
  EXPECT_GT(e.avg_power_w, 150.0);
  EXPECT_LT(e.avg_power_w, 300.0);
  ASSERT_TRUE(e.net_energy_j.has_value());
  EXPECT_NEAR(*e.net_energy_j, e.energy_j - 100.0 * dt, 1e-6);
  EXPECT_GT(w.samples, 50);
  EXPECT_TRUE(w.flags.empty());
}

TEST(Window, PhasesAddUp) {
  FakeClock clock;
  Sampler sampler(scripted(50, 50, 1e9, clock), 0, Sampler::kMaxPoints, clock);
  PhaseTotals phases;
  double train_j = 0;
  for (int epoch = 0; epoch < 3; ++epoch) {
    const Snapshot a = sampler.snapshot();
    clock.advance_s(0.02);
    const Snapshot b = sampler.snapshot();
    clock.advance_s(0.01);
    const Snapshot c = sampler.snapshot();
    const WindowResult t = make_window("train", a, b, {}, sampler.meters(), nullptr);
    train_j += t.total_energy_j();
    phases.add(t);
    phases.add(make_window("evaluation", b, c, {}, sampler.meters(), nullptr));
  }
  ASSERT_EQ(phases.phases().size(), 2u);
  const WindowResult* train = phases.find("train");
  ASSERT_NE(train, nullptr);
  EXPECT_EQ(train->windows, 3);
  EXPECT_NEAR(train->total_energy_j(), train_j, 1e-9);
  EXPECT_NEAR(train_j, 3 * 50.0 * 0.02, 1e-9);
  EXPECT_NEAR(train->domains[0].avg_power_w, 50.0, 1e-6);
}

TEST(Session, WritesReportAndAppendsCodeCarbonRows) {
  TempDir dir;
  EnergySettings s;
  s.meters = {MeterChoice::kSimulatedGpu, MeterChoice::kRamEstimate};
  s.simulated_gpu.load = 1.0;  // 300 W
  s.meter_knobs.set(kRamPowerKey, 10.0);  // ram_estimate's own key
  s.sample_hz = 50;
  s.idle_baseline_s = 0.1;
  s.country_iso_code = "FRA";
  int syncs = 0;
  FakeClock clock;
  for (int run = 0; run < 2; ++run) {
    EnergySession session(s, [&] { ++syncs; }, "", clock);
    const Snapshot a = session.mark();
    clock.advance_s(0.1);
    session.add_window("compress", a, session.mark());
    session.finish();
    const nlohmann::json r = session.report();
    EXPECT_EQ(r["phases"][0]["phase"], "compress");
    // On the fake clock both meters read at the window's instants exactly: 310 W x 0.1 s.
    EXPECT_DOUBLE_EQ(r["phases"][0]["duration_s"].get<double>(), 0.1);
    EXPECT_NEAR(r["phases"][0]["total_energy_j"].get<double>(), 310.0 * r["phases"][0]["duration_s"].get<double>(),
                1e-9);
    EXPECT_EQ(r["phases"][0]["energy_kind"], "estimated+simulated");
    EXPECT_NEAR(r["phases"][0]["co2_g"].get<double>(),
                r["phases"][0]["total_energy_j"].get<double>() / 3.6e6 * 56.0, 1e-12);
    EXPECT_FALSE(r["idle_baseline"].is_null());
    session.write_outputs(dir.root(), "compress");
  }
  EXPECT_GE(syncs, 2 * 5);  // idle edges, window edges, start and finish
  const nlohmann::json report = nlohmann::json::parse(read_text(dir.path("energy_report.json")));
  EXPECT_EQ(report["carbon"]["country_iso_code"], "FRA");
  std::ifstream csv(dir.path("emissions.csv"));
  std::string header, line;
  std::getline(csv, header);
  EXPECT_EQ(header.rfind("timestamp,project_name,run_id,experiment_id,duration,emissions,emissions_rate,cpu_power,"
                         "gpu_power,ram_power,cpu_energy,gpu_energy,ram_energy,energy_consumed,country_name,"
                         "country_iso_code,region",
                         0),
            0u);
  int rows = 0;
  while (std::getline(csv, line)) {
    ++rows;
    EXPECT_NE(line.find("France"), std::string::npos);
    EXPECT_NE(line.find("(simulated)"), std::string::npos);
  }
  EXPECT_EQ(rows, 4);  // two runs x (compress + total)
}

TEST(Session, EmissionsCsvRefusesAForeignFile) {
  TempDir dir;
  write_text(dir.path("emissions.csv"), "timestamp,project_name\n2023,x\n");
  expect_input_error([&] { append_emissions_csv(dir.path("emissions.csv"), {"a"}); }, "other columns");
  EXPECT_EQ(read_text(dir.path("emissions.csv")), "timestamp,project_name\n2023,x\n");  // untouched
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
