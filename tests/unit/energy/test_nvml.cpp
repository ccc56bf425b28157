// test_nvml.cpp: NvmlMeter through the fake NVML library (tests/fakes),
// loaded by the real dlopen path: energy counter and power polling against
// the scripted power, CUDA_VISIBLE_DEVICES, device facts, error codes,
// windows shorter than the counter's update period, and each GPU's state
// (NvmlLibrary::gpu_state) with the hazards doctor finds in it. The fake GPUs, the meters and the
// samplers run on one fake clock (tests/fakes/fake_clock.h): every figure over time is exact.
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include <unistd.h>

#include "harness/energy/energy_window.h"
#include "harness/energy/hazards.h"
#include "harness/energy/nvml_meter.h"
#include "harness/energy/process_tree.h"
#include "harness/energy/sampler.h"
#include "tests/fakes/fake_nvml_env.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

nlohmann::json gpu(const std::string& uuid, double power_w, bool counter = true, double period_s = 0) {
  return {{"name", "Fake H100"}, {"uuid", uuid}, {"power_w", power_w}, {"energy_counter", counter},
          {"update_period_s", period_s}, {"energy_start_mj", 123456789}, {"power_limit_w", 650},
          {"default_limit_w", 700}, {"min_limit_w", 200}, {"max_limit_w", 700}, {"temperature_c", 47},
          {"sm_clock_mhz", 1755}, {"throttle_reasons", 4}};
}

double seconds(SteadyClock::time_point a, SteadyClock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// The fake's NVML meter, opened on `clock`, in a Sampler reading at `hz` (0: only when asked); null
// when it does not open.
std::unique_ptr<Sampler> nvml_sampler(double hz, TimeSource& clock) {
  MeterProbe p = NvmlMeter::open(clock);
  EXPECT_TRUE(p.available()) << p.unavailable_reason;
  if (!p.available()) return nullptr;
  std::vector<std::unique_ptr<EnergyMeter>> meters;
  meters.push_back(std::move(p.meter));
  return std::make_unique<Sampler>(std::move(meters), hz, Sampler::kMaxPoints, clock);
}

TEST(Nvml, CounterEnergyMatchesScriptedPower) {
  FakeClock clock;
  FakeNvml fake(nlohmann::json{{"devices", {gpu("GPU-aaaa", 250.0)}}}, clock);
  MeterProbe p = NvmlMeter::open(clock);
  ASSERT_TRUE(p.available()) << p.unavailable_reason;
  ASSERT_EQ(p.meter->domains().size(), 1u);
  EXPECT_EQ(p.meter->domains()[0].name, "gpu0");
  EXPECT_EQ(p.meter->domains()[0].category, DomainCategory::kGpu);
  const MeterReading a = p.meter->read();
  clock.advance_s(0.4);
  const MeterReading b = p.meter->read();
  EXPECT_DOUBLE_EQ(seconds(a.time, b.time), 0.4);
  const double expected_j = 250.0 * seconds(a.time, b.time);
  EXPECT_NEAR(b.energy_j[0] - a.energy_j[0], expected_j, 0.005 * expected_j);
  EXPECT_NEAR(b.energy_j[0] - a.energy_j[0], expected_j, 2e-3);  // the counter's whole mJ at each end
}

// A GPU that falls off the bus (NVML_ERROR_GPU_IS_LOST): the reading says which and why, and its
// failed reads are counted (EnergySession::mark() then stops the run with MeterLost).
TEST(Nvml, LostGpuIsNamedInTheReading) {
  nlohmann::json dev = gpu("GPU-aaaa", 250.0);
  dev["lost_after_s"] = 1.0;
  FakeClock clock;
  FakeNvml fake(nlohmann::json{{"devices", {dev}}}, clock);
  MeterProbe p = NvmlMeter::open(clock);
  ASSERT_TRUE(p.available()) << p.unavailable_reason;
  EXPECT_EQ(p.meter->read().lost, "");
  clock.advance_s(1.0);
  const MeterReading r = p.meter->read();
  EXPECT_EQ(r.lost, "gpu0 (Fake H100, GPU-aaaa) is lost (NVML_ERROR_GPU_IS_LOST)");
  EXPECT_GE(r.read_errors, 1);
}

TEST(Nvml, PollingFallbackIntegratesPower) {
  nlohmann::json step = gpu("GPU-bbbb", 0, /*counter=*/false);
  step["power_schedule"] = {{0, 100.0}, {0.3, 300.0}};
  FakeClock clock;
  FakeNvml fake(nlohmann::json{{"devices", {gpu("GPU-aaaa", 150.0, false), step}}}, clock);
  MeterProbe p = NvmlMeter::open(clock);
  ASSERT_TRUE(p.available()) << p.unavailable_reason;
  EXPECT_DOUBLE_EQ(p.meter->update_period_s(), 1.0);  // polled power: at best a 1 s average
  std::vector<std::unique_ptr<EnergyMeter>> meters;
  meters.push_back(std::move(p.meter));
  Sampler sampler(std::move(meters), 200, Sampler::kMaxPoints, clock);
  sampler.start();
  const Snapshot a = sampler.snapshot();
  clock.advance_s(0.8);
  const Snapshot b = sampler.snapshot();
  sampler.stop();
  const double dt = seconds(a.readings[0].time, b.readings[0].time);
  EXPECT_DOUBLE_EQ(dt, 0.8);
  const double constant_j = b.readings[0].energy_j[0] - a.readings[0].energy_j[0];
  EXPECT_NEAR(constant_j, 150.0 * dt, 0.005 * 150.0 * dt);
  EXPECT_NEAR(constant_j, 150.0 * dt, 1e-9);  // trapezoids of a constant power are exact
  // The step device: more than 100 W on average, less than 300 W; 0.3 s at 100 W then 0.5 s at 300 W,
  // but for the trapezoid across the step, off by at most one 5 ms read interval of the 200 W step.
  const double step_j = b.readings[0].energy_j[1] - a.readings[0].energy_j[1];
  const double step_w = step_j / dt;
  EXPECT_GT(step_w, 150.0);
  EXPECT_LT(step_w, 300.0);
  EXPECT_NEAR(step_j, 100.0 * 0.3 + 300.0 * 0.5, 200.0 * 0.005);
}

TEST(Nvml, DescribesDevicesAndLimits) {
  FakeClock clock;
  FakeNvml fake(nlohmann::json{{"driver_version", "550.54.15"}, {"devices", {gpu("GPU-aaaa", 100.0)}}}, clock);
  MeterProbe p = NvmlMeter::open(clock);
  ASSERT_TRUE(p.available()) << p.unavailable_reason;
  const nlohmann::json d = p.meter->describe();
  EXPECT_EQ(d["driver_version"], "550.54.15");
  const nlohmann::json& g = d["gpus"][0];
  EXPECT_EQ(g["uuid"], "GPU-aaaa");
  EXPECT_EQ(g["method"], "energy counter");
  EXPECT_DOUBLE_EQ(g["power_limit_w"].get<double>(), 650.0);
  EXPECT_DOUBLE_EQ(g["default_power_limit_w"].get<double>(), 700.0);
  EXPECT_DOUBLE_EQ(g["min_power_limit_w"].get<double>(), 200.0);
  EXPECT_DOUBLE_EQ(g["max_power_limit_w"].get<double>(), 700.0);
  EXPECT_EQ(g["temperature_c"], 47);
  EXPECT_EQ(g["sm_clock_mhz"], 1755);
  EXPECT_EQ(g["throttle_reasons"], nlohmann::json({"sw_power_cap"}));
}

TEST(Nvml, HonoursCudaVisibleDevices) {
  const nlohmann::json config = {{"devices", {gpu("GPU-aaaa-1", 100), gpu("GPU-bbbb-2", 100), gpu("GPU-cccc-3", 100)}}};
  auto domains = [](const MeterProbe& p) {
    std::vector<std::string> out;
    if (p.available())
      for (const auto& d : p.meter->domains()) out.push_back(d.name);
    return out;
  };
  FakeClock clock;
  {
    FakeNvml fake(config, clock, "2,0");
    EXPECT_EQ(domains(NvmlMeter::open(clock)), (std::vector<std::string>{"gpu2", "gpu0"}));
  }
  {
    FakeNvml fake(config, clock, "GPU-bbbb,7,0");  // a UUID prefix; CUDA stops at the invalid 7
    EXPECT_EQ(domains(NvmlMeter::open(clock)), (std::vector<std::string>{"gpu1"}));
  }
  {
    FakeNvml fake(config, clock, "");
    MeterProbe p = NvmlMeter::open(clock);
    EXPECT_FALSE(p.available());
    EXPECT_NE(p.unavailable_reason.find("CUDA_VISIBLE_DEVICES"), std::string::npos) << p.unavailable_reason;
  }
}

TEST(Nvml, ErrorsMakeTheMeterUnavailableNeverCrash) {
  {
    FakeNvml fake(nlohmann::json{{"init_error", 9}, {"devices", {gpu("GPU-a", 100)}}});
    MeterProbe p = NvmlMeter::open();
    EXPECT_FALSE(p.available());
    EXPECT_NE(p.unavailable_reason.find("Driver Not Loaded"), std::string::npos) << p.unavailable_reason;
  }
  {
    FakeNvml fake(nlohmann::json{{"devices", nlohmann::json::array()}});
    MeterProbe p = NvmlMeter::open();
    EXPECT_FALSE(p.available());
    EXPECT_NE(p.unavailable_reason.find("no GPU"), std::string::npos) << p.unavailable_reason;
  }
  {
    nlohmann::json broken = gpu("GPU-a", 100, /*counter=*/false);
    broken["power_error"] = 3;  // not supported either
    FakeNvml fake(nlohmann::json{{"devices", {broken}}});
    MeterProbe p = NvmlMeter::open();
    EXPECT_FALSE(p.available());
    EXPECT_NE(p.unavailable_reason.find("Not Supported"), std::string::npos) << p.unavailable_reason;
  }
  setenv("BALERBENCH_NVML_LIB", "/nonexistent/libnvidia-ml.so.1", 1);
  MeterProbe p = NvmlMeter::open();
  unsetenv("BALERBENCH_NVML_LIB");
  EXPECT_FALSE(p.available());
  EXPECT_NE(p.unavailable_reason.find("cannot load"), std::string::npos) << p.unavailable_reason;
}

// The counter refreshes every 100 ms: a 20 ms window is flagged, a 1 s
// window is not and is within one update of the truth.
TEST(Nvml, WindowsShorterThanTheUpdatePeriodAreFlagged) {
  FakeClock clock;
  FakeNvml fake(nlohmann::json{{"devices", {gpu("GPU-a", 200.0, true, 0.1)}}}, clock);
  const auto sampler = nvml_sampler(0, clock);
  ASSERT_TRUE(sampler);
  const Snapshot a = sampler->snapshot();
  clock.advance_s(0.02);
  const Snapshot b = sampler->snapshot();
  const WindowResult short_w = make_window("short", a, b, {}, sampler->meters(), nullptr);
  ASSERT_EQ(short_w.flags.size(), 1u);
  // Interpolated when the counter's phase is known to 5% of a period, as the start-up probe's 1 ms
  // polls find it (were they late, the window would be flagged as too short instead).
  EXPECT_TRUE(short_w.domains[0].interpolated);
  EXPECT_NE(short_w.flags[0].find(short_w.domains[0].interpolated
                                      ? "interpolated at the edges: shorter than 10 update periods"
                                      : "shorter than nvml's update period"),
            std::string::npos)
      << short_w.flags[0];
  EXPECT_NEAR(short_w.total_energy_j(), 200.0 * 0.02, 1e-9);  // the probe's phase error cancels at the edges
  clock.advance_s(1.0);
  const Snapshot c = sampler->snapshot();
  const WindowResult long_w = make_window("long", a, c, {}, sampler->meters(), nullptr);
  EXPECT_TRUE(long_w.flags.empty());
  EXPECT_NEAR(long_w.total_energy_j(), 200.0 * long_w.duration_s, 200.0 * 0.1 + 1e-9);
  // Not interpolated: its ± is one update period of power at the edges plus a count at each (1 mJ).
  ASSERT_TRUE(long_w.total_uncertainty_j());
  EXPECT_NEAR(*long_w.total_uncertainty_j(), 200.0 * 0.1 + 2e-3, 200.0 * 0.02);
  EXPECT_LE(std::fabs(long_w.total_energy_j() - 200.0 * long_w.duration_s), *long_w.total_uncertainty_j() + 1e-9);
  EXPECT_EQ(long_w.uncertainty_coverage(), "measured");
}

// The counter's update period is measured when the meter opens, not assumed (the fake updates every
// 80 ms here, where NVML's usual is 100 ms).
TEST(Nvml, UpdatePeriodIsMeasuredAtOpen) {
  FakeClock clock;
  FakeNvml fake(nlohmann::json{{"devices", {gpu("GPU-p", 300.0, true, 0.08)}}}, clock);
  MeterProbe p = NvmlMeter::open(clock);
  ASSERT_TRUE(p.available()) << p.unavailable_reason;
  const EdgeModel m = p.meter->edge_model();
  EXPECT_TRUE(m.quantified);
  EXPECT_TRUE(m.period_measured) << m.basis;
  EXPECT_TRUE(m.stepped);
  EXPECT_NEAR(m.update_period_s, 0.08, 0.01) << m.basis;
  EXPECT_NEAR(m.update_period_s, 0.08, 1e-12) << m.basis;  // polls 1 ms apart on the fake clock, none late
  EXPECT_NEAR(p.meter->update_period_s(), m.update_period_s, 1e-12);
  EXPECT_NE(m.basis.find("measured at start-up"), std::string::npos) << m.basis;
  EXPECT_DOUBLE_EQ(m.step_j, 1e-3);
}

// A window of 0.25 s on a counter that updates every 100 ms: read at its edges, the counter holds 2 or 3
// updates (20% off, either way); interpolated at the edges from the polled power and the time since
// each update, it is within 2% of the truth, inside its ±, and flagged. Constant power, so the truth
// is power x duration whatever the phase; the sampler reads at 10 Hz beside it, as in a run.
TEST(Nvml, ShortWindowsAreInterpolatedAtTheEdges) {
  FakeClock clock;
  FakeNvml fake(nlohmann::json{{"devices", {gpu("GPU-i", 300.0, true, 0.1)}}}, clock);
  const auto sampler = nvml_sampler(10, clock);
  ASSERT_TRUE(sampler);
  sampler->start();
  clock.advance_s(0.33);
  const Snapshot a = sampler->snapshot();
  clock.advance_s(0.25);
  const Snapshot b = sampler->snapshot();
  sampler->stop();
  const WindowResult w = make_window("short", a, b, sampler->series_between(a.time, b.time), sampler->meters(), nullptr);
  const double truth_j = 300.0 * w.duration_s;
  ASSERT_EQ(w.domains.size(), 1u);
  ASSERT_TRUE(w.total_uncertainty_j());
  // Whatever the machine's load, the figure is inside its ±.
  EXPECT_LE(std::fabs(w.total_energy_j() - truth_j), *w.total_uncertainty_j() + 1e-9) << w.to_json().dump();
  bool flagged = false;
  for (const auto& f : w.flags) flagged |= f.find("interpolated at the edges") != std::string::npos;
  EXPECT_EQ(flagged, w.domains[0].interpolated);
  // The meter interpolates only with the counter's phase known to 5% of a period, which the probe's
  // 1 ms polls give (late polls would not, and the window would keep the edge-read bound instead).
  EXPECT_TRUE(w.domains[0].interpolated);
  if (w.domains[0].interpolated) {
    EXPECT_NEAR(w.total_energy_j(), truth_j, 0.02 * truth_j) << "duration " << w.duration_s;
    EXPECT_LT(*w.total_uncertainty_j(), 0.1 * truth_j);  // far below the 30 J of an edge read
  }
  // The edge-read figure: whole updates only. Off by 20% unless the window happens to last a whole
  // number of periods (then the two agree, and there is nothing to show).
  const double edge_read_j = b.readings[0].energy_j[0] - a.readings[0].energy_j[0];
  const double fraction = std::fmod(w.duration_s / 0.1, 1.0);
  if (fraction > 0.15 && fraction < 0.85) EXPECT_GT(std::fabs(edge_read_j - truth_j), 0.02 * truth_j) << edge_read_j;
}

// T7 on the GPU: the fake's driver samples this process at 60% SM use and another at 20% every 50 ms,
// so any window's share is 60 / 80 exactly and the attributable energy is 0.75 of the board's. A process
// outside the tree alone gets nothing attributed, and an NVML that cannot sample per process says why
// and leaves the window without a GPU share.
TEST(Nvml, ProcessUtilizationSamplesGiveTheTreesShareOfTheGpu) {
  nlohmann::json dev = gpu("GPU-p", 200.0);
  dev["process_utilization"] = {{"sample_period_s", 0.05},
                                {"processes", {{{"pid", "self"}, {"sm_util", 60}}, {{"pid", 4000000}, {"sm_util", 20}}}}};
  FakeClock clock;
  FakeNvml fake(nlohmann::json{{"devices", {dev}}}, clock);
  const auto sampler = nvml_sampler(20, clock);
  ASSERT_TRUE(sampler);
  sampler->attribute_to(std::make_shared<ProcessTree>());
  sampler->start();
  const Snapshot a = sampler->snapshot();
  clock.advance_s(0.5);  // the driver's 10 samples of 50 ms, 5 of them needed
  const Snapshot b = sampler->snapshot();
  const WindowResult w = make_window("w", a, b, sampler->series_between(a.time, b.time), sampler->meters(), nullptr);
  const bool five_samples = w.domains[0].use_tree && *w.domains[0].use_tree >= 60.0 * 5;
  sampler->stop();
  ASSERT_TRUE(w.domains[0].attributable_j) << w.to_json().dump();
  EXPECT_NEAR(*w.domains[0].attributable_share(), 0.75, 1e-12);
  EXPECT_NEAR(*w.domains[0].use_all, (60.0 + 20.0) * *w.domains[0].use_tree / 60.0, 1e-9);
  EXPECT_TRUE(five_samples) << w.to_json().dump();
  EXPECT_NEAR(*w.domains[0].use_tree, 60.0 * 10, 1e-9);
  EXPECT_TRUE(sampler->meters()[0]->describe()["gpus"][0]["process_use"]["sampled"].get<bool>());
  // The CPU side of the same snapshots: this process's tree was read with them.
  EXPECT_TRUE(a.process.valid);
  EXPECT_TRUE(b.process.valid);
}

// Item 5's NVML figure: the GPU's memory in use at the phase's peak is the highest read inside its
// windows. The fake's memory goes 1 GiB, then 3 GiB from 0.2 s to 0.4 s, then 2 GiB; the sampler reads
// at 50 Hz, so the window holds the 3 GiB, and a phase of it and a later window keeps that peak.
TEST(Nvml, DeviceMemoryAtThePeakIsTheHighestReadInTheWindow) {
  nlohmann::json dev = gpu("GPU-m", 100.0);
  dev["memory_schedule"] = {{0, 1ULL << 30}, {0.2, 3ULL << 30}, {0.4, 2ULL << 30}};
  FakeClock clock;
  FakeNvml fake(nlohmann::json{{"devices", {dev}}}, clock);
  const auto before_init = clock.now();
  const auto sampler = nvml_sampler(50, clock);
  ASSERT_TRUE(sampler);
  sampler->start();
  const Snapshot a = sampler->snapshot();
  clock.advance_s(0.7);
  const Snapshot b = sampler->snapshot();
  clock.advance_s(0.1);
  // The later window needs one sampler read of its own (5 in 0.1 s at 50 Hz).
  const Snapshot c = sampler->snapshot();
  EXPECT_FALSE(sampler->series_between(b.time, c.time).empty());
  sampler->stop();
  const WindowResult w = make_window("train", a, b, sampler->series_between(a.time, b.time), sampler->meters(), nullptr);
  const WindowResult later = make_window("train", b, c, sampler->series_between(b.time, c.time), sampler->meters(), nullptr);
  ASSERT_TRUE(later.gpu_memory_peak_mib());
  EXPECT_EQ(*later.gpu_memory_peak_mib(), 2048.0);
  ASSERT_TRUE(w.gpu_memory_peak_mib()) << w.to_json().dump();
  // Had opening the meter taken 0.2 s, the 3 GiB stretch would lie before `a`: its probe takes 6 ms.
  ASSERT_LT(seconds(before_init, a.time), 0.19);
  EXPECT_EQ(*w.gpu_memory_peak_mib(), 3072.0);
  EXPECT_GE(*w.gpu_memory_peak_mib(), 2048.0);
  EXPECT_EQ(w.to_json()["gpu_memory_peak_mib"], *w.gpu_memory_peak_mib());
  PhaseTotals phases;
  phases.add(w);
  phases.add(later);
  EXPECT_EQ(phases.find("train")->gpu_memory_peak_mib(), w.gpu_memory_peak_mib());
}

TEST(Nvml, GpuUseOfOtherProcessesOnlyOrNoneAttributesNothing) {
  nlohmann::json others = gpu("GPU-o", 200.0);
  others["process_utilization"] = {{"sample_period_s", 0.05}, {"processes", {{{"pid", 4000000}, {"sm_util", 90}}}}};
  FakeClock clock;
  {
    FakeNvml fake(nlohmann::json{{"devices", {others}}}, clock);
    const auto sampler = nvml_sampler(0, clock);
    ASSERT_TRUE(sampler);
    sampler->attribute_to(std::make_shared<ProcessTree>());
    const Snapshot a = sampler->snapshot();
    clock.advance_s(0.3);
    const WindowResult w = make_window("w", a, sampler->snapshot(), {}, sampler->meters(), nullptr);
    ASSERT_TRUE(w.domains[0].attributable_j);
    EXPECT_EQ(*w.domains[0].attributable_j, 0.0);
    EXPECT_GT(*w.domains[0].use_all, 0.0);
  }
  nlohmann::json unsupported = others;
  unsupported["process_utilization_error"] = 3;  // NVML_ERROR_NOT_SUPPORTED
  FakeNvml fake(nlohmann::json{{"devices", {unsupported}}}, clock);
  const auto sampler = nvml_sampler(0, clock);
  ASSERT_TRUE(sampler);
  sampler->attribute_to(std::make_shared<ProcessTree>());
  const Snapshot a = sampler->snapshot();
  clock.advance_s(0.15);
  const WindowResult w = make_window("w", a, sampler->snapshot(), {}, sampler->meters(), nullptr);
  EXPECT_FALSE(w.domains[0].attributable_j);
  EXPECT_GT(w.domains[0].energy_j, 0.0);  // the absolute figure is there regardless
  const nlohmann::json use = sampler->meters()[0]->describe()["gpus"][0]["process_use"];
  EXPECT_FALSE(use["sampled"].get<bool>());
  EXPECT_EQ(use["reason"], "nvmlDeviceGetProcessUtilization: Not Supported (NVML code 3)");
}

// gpu_state: clocks, modes, limit, temperature, throttle reasons and compute processes, each as the
// fake serves it; MIG NOT_SUPPORTED is "unknown".
TEST(Nvml, GpuStateReportsEveryField) {
  nlohmann::json dev = gpu("GPU-aaaa", 100.0);
  dev.update({{"mem_clock_mhz", 2619}, {"throttle_reasons", 0x41}, {"persistence_mode", false}, {"compute_mode", 3},
              {"compute_processes",
               {{{"pid", "self"}, {"used_memory_mib", 500}}, {{"pid", 4000001}, {"used_memory_mib", nullptr}}}}});
  nlohmann::json mig = gpu("GPU-bbbb", 100.0);
  mig["mig_mode"] = 1;
  FakeNvml fake(nlohmann::json{{"devices", {dev, mig}}});
  std::string reason, note;
  const auto nvml = NvmlLibrary::open(reason);
  ASSERT_TRUE(nvml) << reason;
  const auto gpus = nvml->visible_gpus(note);
  ASSERT_EQ(gpus.size(), 2u);
  const nlohmann::json s = nvml->gpu_state(gpus[0]).to_json();
  EXPECT_EQ(s["uuid"], "GPU-aaaa");
  EXPECT_EQ(s["sm_clock_mhz"], 1755);
  EXPECT_EQ(s["mem_clock_mhz"], 2619);
  EXPECT_EQ(s["persistence_mode"], "disabled");
  EXPECT_EQ(s["compute_mode"], "exclusive_process");
  EXPECT_EQ(s["mig_mode"], "unknown");
  EXPECT_DOUBLE_EQ(s["power_limit_w"].get<double>(), 650.0);
  EXPECT_EQ(s["temperature_c"], 47);
  EXPECT_EQ(s["throttle_reasons"], nlohmann::json({"gpu_idle", "hw_thermal_slowdown"}));
  EXPECT_EQ(s["compute_processes"], nlohmann::json::parse(R"([{"pid": )" + std::to_string(getpid()) +
                                                          R"(, "used_memory_mib": 500.0},
                                                             {"pid": 4000001, "used_memory_mib": null}])"));
  EXPECT_EQ(s["errors"], nlohmann::json::array());
  const NvmlLibrary::GpuState m = nvml->gpu_state(gpus[1]);
  EXPECT_EQ(m.mig_mode, "enabled");
  EXPECT_EQ(m.persistence_mode, "enabled");
  EXPECT_EQ(m.compute_mode, "default");
  ASSERT_TRUE(m.compute_processes);
  EXPECT_TRUE(m.compute_processes->empty());
}

TEST(Nvml, GpuStateErrorsAreNamedNotThrown) {
  nlohmann::json dev = gpu("GPU-aaaa", 100.0);
  dev["compute_processes_error"] = NVML_ERROR_NO_PERMISSION;
  FakeNvml fake(nlohmann::json{{"devices", {dev}}});
  std::string reason, note;
  const auto nvml = NvmlLibrary::open(reason);
  ASSERT_TRUE(nvml) << reason;
  const NvmlLibrary::GpuState s = nvml->gpu_state(nvml->visible_gpus(note).at(0));
  EXPECT_FALSE(s.compute_processes);
  EXPECT_EQ(s.errors, std::vector<std::string>{"compute_processes: Insufficient Permissions (NVML code 4)"});
  EXPECT_TRUE(s.to_json()["compute_processes"].is_null());
}

// probe_hazards on a fake machine: the fake NVML (thermal throttling, persistence off, another
// process), a fake sysfs with powersave, and a fake /proc whose second snapshot the sleeper writes.
TEST(Nvml, ProbeFindsTheFakeMachinesHazards) {
  nlohmann::json dev = gpu("GPU-aaaa", 100.0);
  dev.update({{"throttle_reasons", 0x40}, {"persistence_mode", false},
              {"compute_processes", {{{"pid", "self"}}, {{"pid", 4000001}, {"used_memory_mib", 1024}}}}});
  FakeNvml fake(nlohmann::json{{"devices", {dev}}});
  TempDir dir;
  std::filesystem::create_directories(dir.path("sys/cpu0/cpufreq"));
  write_text(dir.path("sys/cpu0/cpufreq/scaling_governor"), "powersave\n");
  const std::string self = dir.path("proc/" + std::to_string(getpid()));
  std::filesystem::create_directories(self);
  std::filesystem::create_directories(dir.path("proc/4000001"));
  write_text(dir.path("proc/4000001/comm"), "trainer\n");
  const auto snapshot = [&](unsigned long long user, unsigned long long idle, unsigned long long self_ticks) {
    write_text(dir.path("proc/stat"), "cpu " + std::to_string(user) + " 0 0 " + std::to_string(idle) +
                                          " 0 0 0 0 0 0\ncpu0 0 0 0 0 0 0 0 0 0 0\n");
    write_text(self + "/stat", "1 (balerbench) R 1 1 1 0 -1 0 0 0 0 0 " + std::to_string(self_ticks) + " 0 0 0\n");
  };
  snapshot(100, 100, 10);
  HazardProbeOptions o;
  o.proc_root = dir.path("proc");
  o.sys_cpu_root = dir.path("sys");
  o.sleep = [&](double) { snapshot(200, 100, 20); };  // 100 busy ticks of 100, 10 of them ours: 0.9 cores
  const HazardProbe p = probe_hazards(o);
  ASSERT_TRUE(p.cpu_load.valid) << p.cpu_load.reason;
  EXPECT_DOUBLE_EQ(p.cpu_load.other_cores, 0.9);
  EXPECT_EQ(p.process_names.at(4000001), "trainer");
  std::vector<std::string> ids;
  for (const auto& h : collect_hazards(p).hazards) ids.push_back(h.id);
  std::vector<std::string> want = {"cpu_governor_powersave", "cpu_busy", "gpu_thermal_throttle", "gpu_persistence_off",
                                   "gpu_other_processes"};
  if (!p.blas_hazard.empty()) want.insert(want.begin(), "blas_generic_kernel");
  if (!p.build.ndebug || !p.build.optimized) want.push_back("debug_build");
  EXPECT_EQ(ids, want);
}

}  // namespace
}  // namespace balerbench
