// test_nvml_faults.cpp: NVML's faults below the sweep, through the fake library's controls (issue 50):
// an energy counter that steps back (a failed read: the window flagged and without a ±, never a fall
// summed as negative energy), a GPU lost before a meter opens (named as lost, not as a GPU with no
// counter), and a temperature read that fails or gives NVML's 4294967295 sentinel (no reading: neither
// stored nor believed by the thermal wait). The fake GPUs and the meters run on a fake clock.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>

#include "harness/energy/energy_window.h"
#include "harness/energy/gpu_watch.h"
#include "harness/energy/nvml_meter.h"
#include "harness/energy/sampler.h"
#include "harness/energy/thermal_wait.h"
#include "tests/fakes/fake_nvml_env.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

using nlohmann::json;

json fake_gpu(const std::string& uuid) {
  return {{"name", "Fake H100"}, {"uuid", uuid}, {"power_w", 250}, {"energy_counter", true},
          {"energy_start_mj", 123456789}, {"temperature_c", 47}, {"sm_clock_mhz", 1755}};
}

std::unique_ptr<Sampler> nvml_sampler(TimeSource& clock) {
  MeterProbe p = NvmlMeter::open(clock);
  EXPECT_TRUE(p.available()) << p.unavailable_reason;
  if (!p.available()) return nullptr;
  std::vector<std::unique_ptr<EnergyMeter>> meters;
  meters.push_back(std::move(p.meter));
  return std::make_unique<Sampler>(std::move(meters), 0, Sampler::kMaxPoints, clock);  // read when asked only
}

// The counter drops by 300 J once, 0.8 s after NVML's init (was: a window across it read 300 J low, its
// ± as if measured, and a sweep stored -5,568 W). The read that sees the drop is a failed read: the
// series never falls, the window holds what was used less the 10 ms before that read, and it is
// flagged, with no ±.
TEST(NvmlFaults, ACounterThatStepsBackIsAFailedReadNeverANegativeEnergy) {
  json dev = fake_gpu("GPU-step");
  dev["energy_steps"] = {{0.8, -300}};
  FakeClock clock;
  FakeNvml fake(json{{"devices", {dev}}}, clock);
  const auto sampler = nvml_sampler(clock);
  ASSERT_TRUE(sampler);
  const Snapshot a = sampler->snapshot();
  ASSERT_EQ(a.readings[0].read_errors, 0) << "the fake's counter stepped back before the first read";
  double last_j = a.readings[0].energy_j[0];
  bool fell = false, dropped = false;
  for (int i = 0; i < 100 && !dropped; ++i) {  // a read every 10 ms until one sees the drop
    clock.advance_s(0.01);
    const Snapshot s = sampler->snapshot();
    fell = fell || s.readings[0].energy_j[0] < last_j;
    last_j = s.readings[0].energy_j[0];
    dropped = s.readings[0].read_errors > 0;
  }
  ASSERT_TRUE(dropped);
  EXPECT_FALSE(fell);
  clock.advance_s(0.2);
  const Snapshot b = sampler->snapshot();
  EXPECT_EQ(b.readings[0].read_errors, 1);
  const WindowResult w = make_window("train", a, b, sampler->series_between(a.time, b.time), sampler->meters(), nullptr);
  const double used_j = 250.0 * w.duration_s;
  EXPECT_LE(w.total_energy_j(), used_j + 1e-6);
  EXPECT_GT(w.total_energy_j(), used_j - 0.25 * 250.0) << "more than the stretch before the drop's read is missing";
  EXPECT_NEAR(w.total_energy_j(), used_j - 250.0 * 0.01, 2e-3);  // just that stretch, to the counter's mJ
  ASSERT_EQ(w.domains.size(), 1u);
  EXPECT_TRUE(w.domains[0].read_failed);
  EXPECT_FALSE(w.total_uncertainty_j());  // no ± for a figure with a stretch missing
  EXPECT_NE(w.uncertainty_coverage().find("nvml/gpu0 (failed reads inside"), std::string::npos) << w.uncertainty_coverage();
  bool flagged = false;
  for (const auto& f : w.flags) flagged |= f.find("1 failed read of nvml inside") != std::string::npos;
  EXPECT_TRUE(flagged) << json(w.flags).dump();
  EXPECT_EQ(sampler->meters()[0]->describe()["gpus"][0]["counter_steps_back"], 1);
  // A window after the drop is measured again, from the lower value on.
  clock.advance_s(0.2);
  const Snapshot c = sampler->snapshot();
  const WindowResult after = make_window("after", b, c, {}, sampler->meters(), nullptr);
  EXPECT_TRUE(after.flags.empty()) << json(after.flags).dump();
  EXPECT_NEAR(after.total_energy_j(), 250.0 * after.duration_s, 1.0);
  EXPECT_NEAR(after.total_energy_j(), 250.0 * 0.2, 2e-3);
}

// A GPU that answered once in this process and is lost when a meter opens (between a sweep's trials)
// is named as the lost GPU it is (was: "GPU 0 () reports neither an energy counter nor power").
TEST(NvmlFaults, AGpuLostBeforeTheMeterOpensIsNamedAsLost) {
  TempDir dir;
  json dev = fake_gpu("GPU-lost");
  dev["lost_file"] = dir.path("lost");
  FakeClock clock;
  FakeNvml fake(json{{"devices", {dev}}}, clock);
  {
    const MeterProbe first = NvmlMeter::open(clock);
    ASSERT_TRUE(first.available()) << first.unavailable_reason;
  }
  write_text(dir.path("lost"), "");
  const MeterProbe p = NvmlMeter::open(clock);
  EXPECT_FALSE(p.available());
  EXPECT_EQ(p.unavailable_reason.rfind("gpu0 (Fake H100, GPU-lost) is lost (NVML_ERROR_GPU_IS_LOST)", 0), 0u)
      << p.unavailable_reason;
}

// NVML's sentinel (an unsigned -1) and a read that fails are no temperature: the GPU's thermal state,
// the meter's reads and the thermal wait's reader all say so, and the wait does not believe the GPU cool.
TEST(NvmlFaults, ATemperatureThatFailsOrReadsTheSentinelIsNoReading) {
  json sentinel = fake_gpu("GPU-hot");
  sentinel["temperature_c"] = 4294967295ULL;
  json failing = fake_gpu("GPU-err");
  failing["temperature_error"] = 999;  // NVML_ERROR_UNKNOWN
  FakeClock fake_clock;
  {
    FakeNvml fake(json{{"devices", {sentinel}}}, fake_clock);
    std::string reason, why;
    const auto w = GpuWatch::open(reason);
    ASSERT_TRUE(w) << reason;
    EXPECT_FALSE(w->hottest_c(&why));
    EXPECT_NE(why.find("gpu0's temperature cannot be read: NVML gave 4294967295 C, no reading"), std::string::npos) << why;
    EXPECT_TRUE(w->thermal_json()[0]["temperature_c"].is_null()) << w->thermal_json();
    const auto sampler = nvml_sampler(fake_clock);
    ASSERT_TRUE(sampler);
    EXPECT_TRUE(std::isnan(sampler->snapshot().readings[0].thermal[0].temperature_c));
    EXPECT_TRUE(sampler->meters()[0]->describe()["gpus"][0]["temperature_c"].is_null());
  }
  FakeNvml fake(json{{"devices", {fake_gpu("GPU-ok"), failing}}});
  std::string reason, why;
  const auto w = GpuWatch::open(reason);
  ASSERT_TRUE(w) << reason;
  EXPECT_FALSE(w->hottest_c(&why));  // one GPU that cannot be read: the hottest is not known
  EXPECT_NE(why.find("gpu1's temperature cannot be read: Unknown Error"), std::string::npos) << why;
  ThermalSettings s;
  s.enabled = true;
  const ThermalClock clock{[] { return 0.0; }, [](double) {}};
  ThermalWait wait = wait_until_cool(s, [&] { return w->hottest_c(&why); }, clock);
  EXPECT_EQ(wait.ended, ThermalWait::Ended::kNoTemperature);
  wait = wait_until_cool(s, [] { return std::optional<double>(std::numeric_limits<double>::quiet_NaN()); }, clock);
  EXPECT_EQ(wait.ended, ThermalWait::Ended::kNoTemperature);
  wait.no_temperature_why = why;
  EXPECT_EQ(wait.to_json(s)["reason"], "no GPU temperature to wait on: " + why);
}

}  // namespace
}  // namespace balerbench
