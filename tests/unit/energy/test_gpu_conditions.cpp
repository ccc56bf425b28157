// test_gpu_conditions.cpp: the conditions of a GPU measurement (issue 39) below the sweep: the
// thermal protocol's wait (a scripted temperature and clock: cooled, settled, gave up), GpuWatch's
// read-only limits and temperatures, the heat and throttle reasons a window saw at its reads, the meter
// updates a window holds and the short-window flag, and doctor's check of the power reading against
// the energy counter, all through the fake NVML library, on a fake clock where time matters.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <deque>

#include "common/error.h"
#include "harness/energy/energy_session.h"
#include "harness/energy/gpu_watch.h"
#include "harness/energy/nvml_meter.h"
#include "harness/energy/power_check.h"
#include "harness/energy/thermal_wait.h"
#include "tests/fakes/fake_nvml_env.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

using nlohmann::json;

// A scripted hottest-GPU temperature, one value per read (the last one held), on a clock that moves
// only when the wait sleeps.
struct ScriptedGpu {
  std::deque<std::optional<double>> temps;
  double now_s = 0;
  std::optional<double> read() {
    const std::optional<double> t = temps.front();
    if (temps.size() > 1) temps.pop_front();
    return t;
  }
  ThermalClock clock() {
    return {[this] { return now_s; }, [this](double s) { now_s += s; }};
  }
};

ThermalSettings settings(double target_c, double max_wait_s, double settle_s, double poll_s) {
  ThermalSettings s;
  s.enabled = true;
  s.target_c = target_c;
  s.max_wait_s = max_wait_s;
  s.settle_s = settle_s;
  s.poll_s = poll_s;
  return s;
}

TEST(ThermalWait, WaitsUntilTheGpuIsAtOrBelowTheTarget) {
  ScriptedGpu gpu{{70, 65, 60, 55, 50, 45}};
  const ThermalWait w = wait_until_cool(settings(50, 300, 10, 1), [&] { return gpu.read(); }, gpu.clock());
  EXPECT_EQ(w.ended, ThermalWait::Ended::kCool);
  EXPECT_DOUBLE_EQ(w.waited_s, 4);  // read at 0, 1, 2, 3 and 4 s: 50 C at the fifth
  EXPECT_EQ(w.polls, 5);
  EXPECT_EQ(w.start_c, 70);
  EXPECT_EQ(w.end_c, 50);
  EXPECT_FALSE(w.started_hot());
  const json j = w.to_json(settings(50, 300, 10, 1));
  EXPECT_EQ(j["ended"], "cool");
  EXPECT_EQ(j["reason"], "at or below 50 C");
}

// 70, 60, 56, then 56 or 57 for ever: no new low by a whole degree for settle_s (3 s) from the 56 at 2 s.
TEST(ThermalWait, StopsWhenTheTemperatureHasStoppedFalling) {
  ScriptedGpu gpu{{70, 60, 56, 57, 56, 56, 57, 56}};
  const ThermalWait w = wait_until_cool(settings(50, 300, 3, 1), [&] { return gpu.read(); }, gpu.clock());
  EXPECT_EQ(w.ended, ThermalWait::Ended::kSettled);
  EXPECT_DOUBLE_EQ(w.waited_s, 5);
  EXPECT_EQ(w.end_c, 56);
  EXPECT_FALSE(w.started_hot());  // as cool as it gets here: not hot
  EXPECT_EQ(w.ended_text(settings(50, 300, 3, 1)), "stopped falling at 56 C (above 50 C)");
}

// Falling a degree a second from 90 never reaches 50 within the 5 s maximum: the trial starts hot.
TEST(ThermalWait, GivesUpAtTheMaximumWaitAndTheTrialStartsHot) {
  ScriptedGpu gpu;
  for (int c = 90; c > 40; --c) gpu.temps.push_back(c);
  const ThermalWait w = wait_until_cool(settings(50, 5, 30, 1), [&] { return gpu.read(); }, gpu.clock());
  EXPECT_EQ(w.ended, ThermalWait::Ended::kMaxWait);
  EXPECT_DOUBLE_EQ(w.waited_s, 5);
  EXPECT_EQ(w.end_c, 85);
  EXPECT_TRUE(w.started_hot());
  EXPECT_EQ(w.to_json(settings(50, 5, 30, 1))["ended"], "max_wait");
}

TEST(ThermalWait, NoTemperatureEndsTheWaitAtOnceAndAStopPropagates) {
  ScriptedGpu none{{std::nullopt}};
  const ThermalWait w = wait_until_cool(settings(50, 300, 10, 1), [&] { return none.read(); }, none.clock());
  EXPECT_EQ(w.ended, ThermalWait::Ended::kNoTemperature);
  EXPECT_EQ(w.polls, 1);
  ScriptedGpu hot{{80}};
  const ThermalClock stopping{[] { return 0.0; }, [](double) { throw std::runtime_error("stop"); }};
  EXPECT_THROW(wait_until_cool(settings(50, 300, 10, 1), [&] { return hot.read(); }, stopping), std::runtime_error);
}

TEST(ThermalWait, SettingsAreParsedStrictly) {
  const ThermalSettings s = parse_thermal_settings(json{{"target_c", 45}, {"max_wait_s", 120}}, "e.json", "/energy/thermal");
  EXPECT_TRUE(s.enabled);
  EXPECT_DOUBLE_EQ(s.target_c, 45);
  EXPECT_DOUBLE_EQ(s.max_wait_s, 120);
  EXPECT_DOUBLE_EQ(s.settle_s, 10);
  expect_input_error([] { parse_thermal_settings(json{{"target", 45}}, "e.json", "/energy/thermal"); },
                     "/energy/thermal");
  expect_input_error([] { parse_thermal_settings(json{{"target_c", -5}}, "e.json", "/energy/thermal"); },
                     "target_c");
}

json fake_gpu(const std::string& uuid, double max_limit_w, double temperature_c) {
  return {{"name", "Fake H200"}, {"uuid", uuid},         {"power_w", 200},   {"update_period_s", 0.1},
          {"min_limit_w", 100},  {"max_limit_w", max_limit_w}, {"power_limit_w", max_limit_w}, {"default_limit_w", max_limit_w},
          {"temperature_c", temperature_c}, {"sm_clock_mhz", 1980}, {"throttle_reasons", 1}};
}

// Two GPUs: MaxPower is their maximum limits summed (Zeus: max limit x count), read without setting anything.
TEST(GpuWatch, ReadsLimitsAndTemperaturesReadOnly) {
  FakeNvml fake(json{{"devices", {fake_gpu("GPU-a", 700, 41), fake_gpu("GPU-b", 400, 63)}}});
  std::string reason;
  const std::unique_ptr<GpuWatch> w = GpuWatch::open(reason);
  ASSERT_TRUE(w) << reason;
  EXPECT_EQ(w->count(), 2u);
  EXPECT_EQ(w->max_power_w(), 1100);
  const json limits = w->limits_json();
  EXPECT_EQ(limits[1]["max_limit_w"], 400);
  EXPECT_EQ(limits[1]["min_limit_w"], 100);
  EXPECT_EQ(limits[1]["uuid"], "GPU-b");
  EXPECT_EQ(w->hottest_c(), 63);
  const json thermal = w->thermal_json();
  EXPECT_EQ(thermal[0]["temperature_c"], 41);
  EXPECT_EQ(thermal[0]["sm_clock_mhz"], 1980);
  EXPECT_EQ(thermal[0]["throttle_reasons"], json::array({"gpu_idle"}));
}

// The fake's throttle reasons turn to sw_power_cap + hw_thermal_slowdown at 1.5 s and its temperature
// climbs: a window across the change holds every reason its reads saw, the hottest, the slowest clock.
TEST(GpuWatch, AWindowKeepsTheHeatAndThrottleReasonsItsReadsSaw) {
  json g = fake_gpu("GPU-a", 700, 40);
  g["temperature_schedule"] = {{0, 40}, {3, 70}};
  g["throttle_schedule"] = {{0, 1}, {1.5, 0x44}};
  FakeClock clock;
  FakeNvml fake(json{{"devices", {g}}}, clock);
  MeterProbe p = NvmlMeter::open(clock);
  ASSERT_TRUE(p.available()) << p.unavailable_reason;
  std::vector<std::unique_ptr<EnergyMeter>> meters;
  meters.push_back(std::move(p.meter));
  Sampler sampler(std::move(meters), 0, Sampler::kMaxPoints, clock);
  const Snapshot a = sampler.snapshot();  // at 0.6 s: the start-up probe polled through 6 counter updates
  EXPECT_EQ(a.readings[0].thermal[0].throttle_mask, 1);
  clock.advance_s(1.4);
  const Snapshot b = sampler.snapshot();  // at 2 s
  ASSERT_EQ(b.readings[0].thermal[0].throttle_mask, 0x44);
  const WindowResult w = make_window("train", a, b, {}, sampler.meters(), nullptr);
  ASSERT_TRUE(w.domains[0].thermal);
  const WindowThermal& th = *w.domains[0].thermal;
  EXPECT_EQ(*th.throttle_seen, static_cast<unsigned long long>(a.readings[0].thermal[0].throttle_mask | 0x44));
  EXPECT_EQ(th.max_temperature_c, std::max(a.readings[0].thermal[0].temperature_c, b.readings[0].thermal[0].temperature_c));
  EXPECT_EQ(th.max_temperature_c, 60);  // 40 C rising 10 C a second
  EXPECT_EQ(th.min_sm_clock_mhz, 1980);
  const json names = th.to_json()["throttle_reasons"];
  EXPECT_NE(std::find(names.begin(), names.end(), "hw_thermal_slowdown"), names.end()) << names;
  EXPECT_NE(std::find(names.begin(), names.end(), "sw_power_cap"), names.end()) << names;
}

// A phase holds floor(duration / period) updates of NVML's ~0.1 s counter: short below the threshold.
TEST(GpuWatch, PhasesCountMeterUpdatesAndShortOnesAreFlagged) {
  FakeClock clock;
  FakeNvml fake(json{{"devices", {fake_gpu("GPU-a", 700, 40)}}}, clock);
  for (const int64_t min_updates : {60, 2}) {
    EnergySettings s;
    s.meters = {MeterChoice::kNvml};
    s.sample_hz = 0;
    s.min_meter_updates = min_updates;
    EnergySession session(s, nullptr, "", clock);
    const Snapshot a = session.mark();
    clock.advance_s(0.5);
    const WindowResult w = session.add_window("train", a, session.mark());
    session.finish();
    ASSERT_TRUE(w.updates);
    EXPECT_EQ(w.updates->meter, "nvml");
    EXPECT_NEAR(w.updates->period_s, 0.1, 0.02);
    EXPECT_DOUBLE_EQ(w.updates->count, std::floor(w.duration_s / w.updates->period_s + 1e-9));
    EXPECT_DOUBLE_EQ(w.updates->count, 5);
    const WindowResult* phase = session.phases().find("train");
    ASSERT_NE(phase, nullptr);
    const bool flagged = std::any_of(phase->flags.begin(), phase->flags.end(),
                                     [](const std::string& f) { return f.rfind("short window: ", 0) == 0; });
    EXPECT_EQ(flagged, min_updates == 60) << "min " << min_updates << ", " << w.updates->count << " updates";
    EXPECT_EQ(phase->to_json()["meter_updates"]["meter"], "nvml");
  }
}

json square_wave_gpu(const std::string& reading) {
  json g = fake_gpu("GPU-a", 700, 40);
  json schedule = json::array();
  for (int i = 0; i < 300; ++i) schedule.push_back({0.2 * i, i % 2 ? 400 : 100});
  g.erase("power_w");
  g["power_schedule"] = schedule;
  g["power_reading"] = reading;
  return g;
}

// 0.8 s of polls every 5 ms, on the fake GPU's clock.
PowerCheck check_first_gpu(TimeSource& clock) {
  std::string reason, note;
  const std::shared_ptr<NvmlLibrary> lib = NvmlLibrary::open(reason);
  EXPECT_TRUE(lib) << reason;
  return check_power_reading(*lib, lib->visible_gpus(note).at(0), 0.8, "idle (test)", 0.005, clock);
}

// Which reading nvmlDeviceGetPowerUsage gives: the one of the two fields it follows while they differ.
TEST(PowerCheck, SaysWhichPowerReadingNvmlGives) {
  FakeClock clock;
  {
    FakeNvml fake(json{{"devices", {square_wave_gpu("average_1s")}}}, clock);
    const PowerCheck c = check_first_gpu(clock);
    EXPECT_EQ(c.reading, "1 s average") << c.reading_basis;
    EXPECT_NE(c.reading_basis.find("followed NVML_FI_DEV_POWER_AVERAGE"), std::string::npos) << c.reading_basis;
  }
  {
    FakeNvml fake(json{{"devices", {square_wave_gpu("instant")}}}, clock);
    const PowerCheck c = check_first_gpu(clock);
    EXPECT_EQ(c.reading, "instantaneous") << c.reading_basis;
    ASSERT_TRUE(c.ratio()) << c.line();
    EXPECT_NEAR(*c.ratio(), 1, 0.1) << c.line();  // the instantaneous reading integrates to the counter
  }
  {
    json g = square_wave_gpu("instant");
    g["power_average_field"] = false;  // GA100 and older
    FakeNvml fake(json{{"devices", {g}}}, clock);
    EXPECT_EQ(check_first_gpu(clock).reading, "instantaneous");
    g["field_values"] = false;  // a driver without nvmlDeviceGetFieldValues
    FakeNvml older(json{{"devices", {g}}}, clock);
    EXPECT_EQ(check_first_gpu(clock).reading, "not determined");
  }
}

// A reading 1.7x the counter's power (zeus#181's 327 J against 187 J) is a hazard; a true one is not.
TEST(PowerCheck, AReadingThatDisagreesWithTheCounterIsAHazard) {
  json g = fake_gpu("GPU-a", 700, 40);
  g["power_reading_scale"] = 1.7;
  FakeClock clock;
  {
    FakeNvml fake(json{{"devices", {g}}}, clock);
    const PowerCheck c = check_first_gpu(clock);
    ASSERT_TRUE(c.counter_j && c.ratio()) << c.line();
    EXPECT_GE(c.counter_updates, 2);
    EXPECT_NEAR(*c.counter_j, 200 * c.window_s, 200 * 0.02) << c.line();
    EXPECT_NEAR(*c.ratio(), 1.7, 0.03) << c.line();
    const std::optional<Hazard> h = power_check_hazard(c);
    ASSERT_TRUE(h);
    EXPECT_EQ(h->id, "gpu_power_reading_mismatch");
    EXPECT_NE(h->fix.find("is off by +"), std::string::npos) << h->fix;  // +70% give or take a poll
  }
  g["power_reading_scale"] = 1.0;
  FakeNvml fake(json{{"devices", {g}}}, clock);
  const PowerCheck c = check_first_gpu(clock);
  ASSERT_TRUE(c.ratio()) << c.line();
  EXPECT_NEAR(*c.ratio(), 1, 0.03) << c.line();
  EXPECT_FALSE(power_check_hazard(c));
}

}  // namespace
}  // namespace balerbench
