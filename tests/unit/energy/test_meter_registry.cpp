// test_meter_registry.cpp: meters by name (energy/meter_registry.h): the registry lists the known
// meters in order, every name a config may give resolves to its entry, and an unknown name is the
// same clear error as before the registry, and the clock it is handed reaches the meters. No LibTorch
// headers.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "common/error.h"
#include "harness/energy/energy_settings.h"
#include "harness/energy/meter_registry.h"
#include "tests/fakes/fake_clock.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

TEST(MeterRegistry, ListsTheKnownMeters) {
  std::vector<std::string> names;
  for (const MeterEntry* e : meter_registry()) names.emplace_back(e->name);
  EXPECT_EQ(names, (std::vector<std::string>{"nvml", "rapl", "cpu_estimate", "ram_estimate", "wattmeter",
                                             "simulated_gpu"}));
  EXPECT_EQ(meter_name_list(), "auto, nvml, rapl, cpu_estimate, ram_estimate, wattmeter, simulated_gpu");
  EXPECT_EQ(meter_entry(MeterChoice::kRapl).kind, MeterKind::kMeasured);
  EXPECT_EQ(meter_entry(MeterChoice::kCpuEstimate).kind, MeterKind::kEstimated);
  EXPECT_EQ(meter_entry(MeterChoice::kSimulatedGpu).kind, MeterKind::kSimulated);
  EXPECT_STREQ(meter_entry(MeterChoice::kWattmeter).what, "wall power from an external meter's log");
}

TEST(MeterRegistry, EveryNameResolvesToItsEntry) {
  for (const MeterEntry* e : meter_registry()) {
    const std::optional<MeterChoice> m = find_meter_choice(e->name);
    ASSERT_TRUE(m.has_value()) << e->name;
    EXPECT_STREQ(m->name(), e->name);
    EXPECT_EQ(&meter_entry(*m), e);
  }
  ASSERT_TRUE(find_meter_choice("auto").has_value());
  EXPECT_EQ(*find_meter_choice("auto"), MeterChoice::kAuto);
  EXPECT_EQ(*find_meter_choice("nvml"), MeterChoice::kNvml);
  EXPECT_NE(*find_meter_choice("nvml"), MeterChoice::kRapl);
  // The constants code refers to are names of the registry.
  for (MeterChoice m : {MeterChoice::kNvml, MeterChoice::kRapl, MeterChoice::kCpuEstimate, MeterChoice::kRamEstimate,
                        MeterChoice::kWattmeter, MeterChoice::kSimulatedGpu})
    EXPECT_STREQ(meter_entry(m).name, m.name());
}

TEST(MeterRegistry, UnknownNameIsTheSameClearError) {
  EXPECT_FALSE(find_meter_choice("rapl2").has_value());
  EXPECT_FALSE(find_meter_choice("").has_value());
  expect_input_error(
      [] { parse_energy_settings(nlohmann::json::parse(R"({"meters": ["rapl2"]})"), "c.json", "/energy", "/base"); },
      "c.json: /energy/meters: unknown meter 'rapl2' (hint: one of: auto, nvml, rapl, cpu_estimate, ram_estimate, "
      "wattmeter, simulated_gpu)");
  expect_input_error([] { meter_entry(MeterChoice::kAuto); }, "\"auto\" is a selection of meters, not one meter");
}

TEST(MeterRegistry, OpensANamedMeterThroughItsEntry) {
  EnergySettings s;
  MeterProbe p = probe_meter(MeterChoice::kSimulatedGpu, s);
  ASSERT_TRUE(p.available()) << p.unavailable_reason;
  EXPECT_EQ(p.meter->kind(), MeterKind::kSimulated);
  s.meters = {MeterChoice::kSimulatedGpu};
  EXPECT_EQ(open_meters(s).meters.size(), 1u);
  // The clock handed to the registry is the one the meter reads.
  FakeClock clock;
  MeterSet timed = open_meters(s, clock);
  ASSERT_EQ(timed.meters.size(), 1u);
  const MeterReading a = timed.meters[0]->read();
  clock.advance_s(0.5);
  EXPECT_EQ(timed.meters[0]->read().time - a.time, std::chrono::milliseconds(500));
}

}  // namespace
}  // namespace balerbench
