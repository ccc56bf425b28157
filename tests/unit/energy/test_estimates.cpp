// test_estimates.cpp: cpu_estimate on a fake /proc, the TDP table and its
// fallback, CodeCarbon's RAM rule, the simulated GPU, carbon intensity and
// the energy section of a config. The meters run on a fake clock: their intervals are exact.
#include <time.h>
#include <unistd.h>

#include <chrono>

#include "harness/energy/carbon.h"
#include "harness/energy/cpu_estimate_meter.h"
#include "harness/energy/energy_session.h"
#include "harness/energy/energy_settings.h"
#include "harness/energy/meter_registry.h"
#include "harness/energy/ram_estimate_meter.h"
#include "harness/energy/simulated_gpu.h"
#include "tests/fakes/fake_clock.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

void write_proc(const TempDir& d, unsigned long long busy, unsigned long long idle, const std::string& model,
                int cpus = 4) {
  // user nice system idle iowait irq softirq steal
  write_text(d.path("stat"), "cpu  " + std::to_string(busy) + " 0 0 " + std::to_string(idle) +
                                 " 0 0 0 0 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n");
  std::string info;
  for (int i = 0; i < cpus; ++i)
    info += "processor\t: " + std::to_string(i) + "\nmodel name\t: " + model + "\nphysical id\t: 0\n\n";
  write_text(d.path("cpuinfo"), info);
  write_text(d.path("meminfo"), "MemTotal:       24576000 kB\nMemFree:         1000 kB\n");
}

TEST(CpuEstimate, TdpTimesMachineUtilisation) {
  TempDir proc;
  write_proc(proc, 1000, 1000, "Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz");
  EnergySettings s;
  FakeClock clock;
  MeterProbe p = CpuEstimateMeter::open(s, proc.root(), 0, clock);
  ASSERT_TRUE(p.available()) << p.unavailable_reason;
  EXPECT_EQ(p.meter->kind(), MeterKind::kEstimated);
  EXPECT_DOUBLE_EQ(p.meter->describe()["tdp_total_w"].get<double>(), 150.0);
  const MeterReading a = p.meter->read();
  write_proc(proc, 1000 + 300, 1000 + 100, "Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz");  // 75 % busy
  clock.advance_s(0.2);
  const MeterReading b = p.meter->read();
  const double dt = std::chrono::duration<double>(b.time - a.time).count();
  EXPECT_DOUBLE_EQ(dt, 0.2);
  EXPECT_NEAR(b.energy_j[0] - a.energy_j[0], 150.0 * 0.75 * dt, 1e-6 * 150.0 * dt);
}

TEST(CpuEstimate, TdpSourcesConfigTableAndFallback) {
  HostInfo h;
  h.cpu_model = "Intel(R) Xeon(R) Gold 6248R CPU @ 3.00GHz";
  h.sockets = 2;
  h.logical_cpus = 96;
  CpuTdp t = resolve_cpu_tdp(h, std::nullopt);
  EXPECT_DOUBLE_EQ(t.total_w, 2 * 205.0);  // the longer fragment (6248R) wins over 6248
  EXPECT_NE(t.source.find("built-in table"), std::string::npos);
  t = resolve_cpu_tdp(h, 100.0);
  EXPECT_DOUBLE_EQ(t.total_w, 200.0);
  EXPECT_NE(t.source.find("config"), std::string::npos);
  h.cpu_model = "Intel(R) Xeon(R) Processor @ 2.50GHz";
  t = resolve_cpu_tdp(h, std::nullopt);
  EXPECT_DOUBLE_EQ(t.total_w, 4.0 * 96);
  EXPECT_NE(t.source.find("unknown CPU"), std::string::npos);
}

TEST(CpuEstimate, ProcessModeCountsThisProcessTree) {
  EnergySettings s;
  s.cpu_estimate_mode = "process";
  s.meter_knobs.set(kCpuTdpKey, 100.0);
  FakeClock clock;
  MeterProbe p = CpuEstimateMeter::open(s, "/proc", 0, clock);
  ASSERT_TRUE(p.available()) << p.unavailable_reason;
  // The estimate is one CPU's share of the TDP for every second of CPU time the process tree got:
  // TDP x (CPU time / (interval x CPUs)) x interval, whatever the interval, so the meter's fake one
  // (longer than the CPU time, so that the share stays below one CPU) does not change it. Compared
  // with the CPU time this process actually got, which the loop below counts rather than the time.
  auto process_cpu_s = [] {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
  };
  const double cpu0 = process_cpu_s();
  const MeterReading a = p.meter->read();
  volatile double x = 0;
  while (process_cpu_s() - cpu0 < 0.3) x = x + 1;  // one thread busy for 0.3 s of CPU
  clock.advance_s(2.0);
  const MeterReading b = p.meter->read();
  const double cpu_s = process_cpu_s() - cpu0;
  const HostInfo host = read_host_info();
  const double one_cpu_w = 100.0 * host.sockets / host.logical_cpus;
  ASSERT_GT(cpu_s, 0.0);
  // Slack: the kernel counts CPU time in ticks (1/CLK_TCK s, one at each edge), plus 10%.
  const double tick_s = 1.0 / static_cast<double>(sysconf(_SC_CLK_TCK));
  EXPECT_NEAR(b.energy_j[0] - a.energy_j[0], one_cpu_w * cpu_s, one_cpu_w * (0.1 * cpu_s + 2 * tick_s))
      << "CPU time " << cpu_s << " s";
}

TEST(RamEstimate, CodeCarbonV3Rule) {
  EXPECT_EQ(estimate_dimm_count(2), 1);
  EXPECT_EQ(estimate_dimm_count(16), 2);
  EXPECT_EQ(estimate_dimm_count(24), 4);
  EXPECT_EQ(estimate_dimm_count(100), 8);
  EXPECT_EQ(estimate_dimm_count(512), 8);    // 8 x 64 GB
  EXPECT_EQ(estimate_dimm_count(2048), 16);  // 16 x 128 GB
  EXPECT_DOUBLE_EQ(ram_power_v3_w(8, false), 10.0);
  EXPECT_DOUBLE_EQ(ram_power_v3_w(24, false), 20.0);
  EXPECT_DOUBLE_EQ(ram_power_v3_w(100, false), 20.0 + 4 * 4.5);
  EXPECT_DOUBLE_EQ(ram_power_v3_w(2048, false), 20.0 + 18.0 + 8 * 4.0);
  EXPECT_DOUBLE_EQ(ram_power_v3_w(1, true), 3.0);
}

TEST(RamEstimate, ConstantPowerAndConfigOverrides) {
  TempDir proc;
  write_proc(proc, 1, 1, "x");  // 24576000 kB = 23.4 GiB: 4 DIMMs, 20 W
  EnergySettings s;
  FakeClock clock;
  MeterProbe p = RamEstimateMeter::open(s, proc.root(), clock);
  ASSERT_TRUE(p.available());
  EXPECT_DOUBLE_EQ(static_cast<RamEstimateMeter&>(*p.meter).power_w(), 20.0);
  const MeterReading a = p.meter->read();
  clock.advance_s(0.05);
  const MeterReading b = p.meter->read();
  EXPECT_NEAR(b.energy_j[0] - a.energy_j[0], 20.0 * std::chrono::duration<double>(b.time - a.time).count(), 1e-9);
  EXPECT_NEAR(b.energy_j[0] - a.energy_j[0], 1.0, 1e-9);  // 20 W x 50 ms
  s.meter_knobs.set(kRamPowerPerGbKey, 0.375);
  p = RamEstimateMeter::open(s, proc.root());
  EXPECT_NEAR(static_cast<RamEstimateMeter&>(*p.meter).power_w(), 0.375 * 24576000.0 / 1048576.0, 1e-9);
  s.meter_knobs.set(kRamPowerKey, 7.0);
  p = RamEstimateMeter::open(s, proc.root());
  EXPECT_DOUBLE_EQ(static_cast<RamEstimateMeter&>(*p.meter).power_w(), 7.0);
}

// What estimated joules assume, in one phrase per meter, from a report's meters: what train, run and
// measure print beside the joules and the tables' notes repeat. Measured meters assume nothing.
TEST(EstimateAssumptions, EachEstimateSaysItsModelAndSource) {
  const nlohmann::json meters = nlohmann::json::array(
      {{{"name", "cpu_estimate"}, {"kind", "estimated"},
        {"details", {{"tdp_total_w", 8}, {"tdp_source", "fallback for an unknown CPU ('X'): 4 W x 2 logical CPUs"},
                     {"mode", "machine"}}}},
       {{"name", "ram_estimate"}, {"kind", "estimated"},
        {"details", {{"power_w", 20}, {"rule", "CodeCarbon v3 rule: 4 DIMMs guessed for 23.5 GB, 5 W each"}}}},
       {{"name", "rapl"}, {"kind", "measured"}, {"details", {{"method", "counters"}}}}});
  EXPECT_EQ(estimate_assumptions(meters),
            "CPU 8 W TDP (fallback for an unknown CPU ('X'): 4 W x 2 logical CPUs) x the whole machine's CPU "
            "utilisation; RAM 20 W constant (CodeCarbon v3 rule: 4 DIMMs guessed for 23.5 GB, 5 W each)");
  EXPECT_EQ(estimate_assumption(meters[2]), "");
  EXPECT_EQ(estimate_assumptions(nlohmann::json::array()), "");
}

TEST(SimulatedGpu, PowerCappedAndThroughputSlowsUnderALowLimit) {
  SimulatedGpuModel m;
  m.spec.idle_power_w = 50;
  m.spec.max_power_w = 350;
  m.spec.min_limit_w = 100;
  m.spec.max_limit_w = 350;
  m.spec.power_limit_w = 350;
  EXPECT_DOUBLE_EQ(m.power_w(0), 50);
  EXPECT_DOUBLE_EQ(m.power_w(0.5), 200);
  EXPECT_DOUBLE_EQ(m.power_w(1), 350);
  EXPECT_DOUBLE_EQ(m.throughput(1), 1);
  m.set_power_limit_w(125);  // allows 75 W of the 300 W dynamic demand
  EXPECT_DOUBLE_EQ(m.power_w(1), 125);
  EXPECT_NEAR(m.throughput(1), std::cbrt(0.25), 1e-12);
  EXPECT_DOUBLE_EQ(m.throughput(0.2), 1);  // 60 W of dynamic power fits under the cap
  expect_input_error([&] { m.set_power_limit_w(90); }, "outside the simulated GPU's range");
}

TEST(SimulatedGpu, MeterIntegratesTheModelAtAFixedLoad) {
  EnergySettings s;
  s.simulated_gpu.load = 0.5;  // 60 + 240 x 0.5 = 180 W
  FakeClock clock;
  MeterProbe p = SimulatedGpuMeter::open(s, clock);
  ASSERT_TRUE(p.available());
  EXPECT_EQ(p.meter->kind(), MeterKind::kSimulated);
  const MeterReading a = p.meter->read();
  clock.advance_s(0.1);
  const MeterReading b = p.meter->read();
  EXPECT_NEAR(b.energy_j[0] - a.energy_j[0], 180.0 * std::chrono::duration<double>(b.time - a.time).count(), 1e-9);
  EXPECT_NEAR(b.energy_j[0] - a.energy_j[0], 18.0, 1e-9);  // 180 W x 0.1 s
}

TEST(Carbon, ConfigCountryAndWorldDefault) {
  EnergySettings s;
  CarbonIntensity c = resolve_carbon_intensity(s);
  EXPECT_DOUBLE_EQ(c.g_per_kwh, 475.0);
  EXPECT_NE(c.source.find("world default"), std::string::npos);
  s.country_iso_code = "che";
  c = resolve_carbon_intensity(s);
  EXPECT_DOUBLE_EQ(c.g_per_kwh, 34.8);
  EXPECT_EQ(c.country_name, "Switzerland");
  s.carbon_intensity_g_per_kwh = 100.0;
  s.pue = 1.5;
  c = resolve_carbon_intensity(s);
  EXPECT_DOUBLE_EQ(c.g_per_kwh, 100.0);
  EXPECT_NEAR(emissions_g(3.6e6, c), 150.0, 1e-9);  // 1 kWh x 1.5 x 100 g/kWh
  EXPECT_EQ(carbon_intensity_table().size(), 20u);
  s.carbon_intensity_g_per_kwh.reset();
  s.country_iso_code = "XYZ";
  expect_input_error([&] { resolve_carbon_intensity(s); }, "not in the carbon-intensity table");
}

TEST(EnergySettings, StrictParsingNamesTheJsonPath) {
  const auto parse = [](const std::string& text) {
    return parse_energy_settings(nlohmann::json::parse(text), "c.json", "/energy", "/base");
  };
  EnergySettings s = parse(R"({"meters": ["rapl", "nvml"], "sample_hz": 50, "wattmeter_log": "w.csv",
                               "simulated_gpu": {"load": 0.3}})");
  EXPECT_EQ(s.meters, (std::vector<MeterChoice>{MeterChoice::kRapl, MeterChoice::kNvml}));
  EXPECT_EQ(s.to_json()["meters"], (nlohmann::json{"rapl", "nvml"}));
  EXPECT_EQ(parse(R"({})").meters, (std::vector<MeterChoice>{MeterChoice::kAuto}));
  expect_input_error([&] { parse(R"({"meters": ["rapl2"]})"); },
                     "/energy/meters: unknown meter 'rapl2' (hint: one of: auto, nvml, rapl, cpu_estimate");
  expect_input_error([&] { parse(R"({"meters": ["auto", "auto"]})"); }, "/energy/meters: meter 'auto' is listed twice");
  EXPECT_DOUBLE_EQ(s.sample_hz, 50);
  EXPECT_EQ(s.wattmeter_log, "/base/w.csv");
  EXPECT_DOUBLE_EQ(*s.simulated_gpu.load, 0.3);
  expect_input_error([&] { parse(R"({"sample_hertz": 5})"); }, "c.json: /energy/sample_hertz: unknown key");
  expect_input_error([&] { parse(R"({"pue": 0.5})"); }, "/energy/pue: must be in [1.0, 10.0]");
  expect_input_error([&] { parse(R"({"simulated_gpu": {"load": 2}})"); }, "/energy/simulated_gpu/load");
  expect_input_error([&] { parse(R"({"meters": []})"); }, "/energy/meters: must name at least one meter");
}

// The estimates' keys live in their meters' sections (meter_knobs) and read, write and fail as they
// did when they were the settings' own fields: same key, range, error path and JSON.
TEST(EnergySettings, TheEstimatesKeysAreTheirMetersOwn) {
  const auto parse = [](const std::string& text) {
    return parse_energy_settings(nlohmann::json::parse(text), "c.json", "/energy", "/base");
  };
  const EnergySettings absent = parse(R"({})");
  EXPECT_FALSE(absent.meter_knobs.optional_number(kCpuTdpKey));
  EXPECT_FALSE(absent.meter_knobs.optional_number(kRamPowerKey));
  EXPECT_TRUE(absent.to_json().at("cpu_tdp_w").is_null());
  EXPECT_TRUE(absent.to_json().at("ram_power_w_per_gb").is_null());
  const EnergySettings set = parse(R"({"cpu_tdp_w": 150, "ram_power_w": 12, "ram_power_w_per_gb": null})");
  EXPECT_EQ(set.meter_knobs.optional_number(kCpuTdpKey), 150.0);
  EXPECT_EQ(set.to_json().at("ram_power_w"), 12.0);
  EXPECT_TRUE(set.to_json().at("ram_power_w_per_gb").is_null());
  EXPECT_EQ(parse(set.to_json().dump()).to_json(), set.to_json());
  FakeClock clock;
  MeterProbe p = RamEstimateMeter::open(set, "/proc", clock);
  ASSERT_TRUE(p.available()) << p.unavailable_reason;
  EXPECT_DOUBLE_EQ(static_cast<RamEstimateMeter&>(*p.meter).power_w(), 12.0);
  expect_input_error([&] { parse(R"({"cpu_tdp_w": 0})"); }, "c.json: /energy/cpu_tdp_w: must be in [0.1, 2000.0]");
  expect_input_error([&] { parse(R"({"ram_power_w_per_gb": "x"})"); }, "/energy/ram_power_w_per_gb");
  expect_input_error([&] { parse(R"({"cpu_tdp": 5})"); }, "cpu_tdp_w");  // the hint lists it
}

TEST(MeterRegistry, UnknownAndUnavailableMetersAreClearErrors) {
  EnergySettings s;
  s.meters = {MeterChoice::kWattmeter};
  expect_input_error([&] { open_meters(s); }, "meter 'wattmeter' is not available: no log to follow");
  expect_input_error([&] { probe_meter(MeterChoice::kAuto, s); }, "not one meter");
  s.meters = {MeterChoice::kSimulatedGpu, MeterChoice::kSimulatedGpu};
  expect_input_error([&] { open_meters(s); }, "listed twice");
}

}  // namespace
}  // namespace balerbench
