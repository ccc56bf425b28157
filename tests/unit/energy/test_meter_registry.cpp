// test_meter_registry.cpp: meters by name (energy/meter_registry.h): every name a config may give
// resolves to its registry entry, an unknown name is the same clear error as before the registry,
// the clock it is handed reaches the meters, and a meter with a setting of its own joins by its
// entry and one registration: the test's constant meter (unit/registered_entries.h), with its key
// energy.test_constant_power_w, is seen by configs, the meters' listings and open_meters while it
// is registered, and nothing of it after. No LibTorch headers.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/text.h"
#include "harness/energy/energy_settings.h"
#include "harness/energy/meter_registry.h"
#include "tests/fakes/fake_clock.h"
#include "tests/test_util.h"
#include "tests/unit/registered_entries.h"

namespace balerbench {
namespace {

using nlohmann::json;

std::vector<std::string> registry_names() {
  std::vector<std::string> names;
  for (const MeterEntry* e : meter_registry()) names.emplace_back(e->name);
  return names;
}

TEST(MeterRegistry, ListsEachMeterOnceAfterAuto) {
  const std::vector<std::string> names = registry_names();
  ASSERT_FALSE(names.empty());
  for (const MeterEntry* e : meter_registry()) {
    EXPECT_EQ(std::count(names.begin(), names.end(), e->name), 1) << e->name;
    EXPECT_STRNE(e->name, "auto");
    EXPECT_STRNE(e->what, "") << e->name;
  }
  EXPECT_EQ(meter_name_list(), "auto, " + joined(names));
  // The meters auto and the simulated GPU's power limits name, with the kinds reports label them by.
  EXPECT_EQ(meter_entry(MeterChoice::kRapl).kind, MeterKind::kMeasured);
  EXPECT_EQ(meter_entry(MeterChoice::kCpuEstimate).kind, MeterKind::kEstimated);
  EXPECT_EQ(meter_entry(MeterChoice::kSimulatedGpu).kind, MeterKind::kSimulated);
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
      [] { parse_energy_settings(json::parse(R"({"meters": ["rapl2"]})"), "c.json", "/energy", "/base"); },
      "c.json: /energy/meters: unknown meter 'rapl2' (hint: one of: " + meter_name_list() + ")");
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

EnergySettings parse(const json& j) { return parse_energy_settings(j, "c.json", "/energy", "/base"); }

bool documents(const std::string& path) {
  const std::vector<ConfigKeyDoc> docs = meter_knob_docs();
  return std::any_of(docs.begin(), docs.end(), [&](const ConfigKeyDoc& d) { return d.path == path; });
}

TEST(MeterRegistry, ARegisteredMetersKeyIsReadCheckedAndReachesTheMeter) {
  const MeterRegistration registration(kConstantMeterEntry);  // the one registry line
  const EnergySettings s = parse({{"meters", {kConstantMeter}}, {kConstantPower, 7.5}});
  EXPECT_EQ(s.meters, (std::vector<MeterChoice>{*find_meter_choice(kConstantMeter)}));
  EXPECT_EQ(s.to_json()[kConstantPower], 7.5);  // spelled as the config spells it
  const MeterSet set = open_meters(s);
  ASSERT_EQ(set.meters.size(), 1u);
  EXPECT_EQ(set.meters[0]->describe()["power_w"], 7.5);
  EXPECT_EQ(parse(json::object()).meter_knobs.get<double>(kConstantPower), 5.0);  // its default
  EXPECT_EQ(EnergySettings().meter_knobs.get<double>(kConstantPower), 5.0);
  expect_input_error([] { parse({{kConstantPower, 2000}}); }, "c.json: /energy/test_constant_power_w: ");
  // An unknown key's hint lists it among the energy section's keys.
  expect_input_error([] { parse({{"test_constant_power", 1}}); }, "ram_power_w_per_gb, test_constant_power_w");
  EXPECT_THROW(MeterRegistration again(kConstantMeterEntry), InputError);  // a name is registered once
}

TEST(MeterRegistry, ARegisteredMeterIsListedAndDocumentedWhileItLives) {
  const std::string before = meter_name_list();
  {
    const MeterRegistration registration(kConstantMeterEntry);
    EXPECT_EQ(registry_names().back(), kConstantMeter);
    EXPECT_EQ(meter_name_list(), before + ", test_constant");  // the --meters help, the unknown name's hint
    EXPECT_NE(meters_key_doc().meaning.find("`test_constant`"), std::string::npos) << meters_key_doc().meaning;
    EXPECT_TRUE(documents("/energy/test_constant_power_w"));
  }
  EXPECT_EQ(meter_name_list(), before);
  EXPECT_EQ(meters_key_doc().meaning.find(kConstantMeter), std::string::npos);
  EXPECT_FALSE(documents("/energy/test_constant_power_w"));
  EXPECT_FALSE(find_meter_choice(kConstantMeter).has_value());
  expect_input_error([] { parse({{kConstantPower, 7.5}}); }, "/energy/test_constant_power_w: unknown key");
  EXPECT_FALSE(EnergySettings().to_json().contains(kConstantPower));
}

}  // namespace
}  // namespace balerbench
