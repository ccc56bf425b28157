// test_registered_entries.cpp: a meter and a codec registered from a test, each with a key of its
// own (unit/registered_entries.h), reach the command line and the configuration reference with no
// edit anywhere else: `balerbench meters` lists the meter and the `--meters` option names it, a run
// config takes both keys, `balerbench config reference` documents them with their defaults and its
// check of keys against entries holds; once the registrations end, none of it is left.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "harness/cli/commands.h"
#include "harness/cli/energy_options.h"
#include "harness/run/run_config.h"
#include "harness/sweep/experiment.h"
#include "tests/unit/registered_entries.h"

namespace balerbench {
namespace {

using nlohmann::json;

// `balerbench meters --interval 0.01 --json` run in this process (so that it sees this test's
// registrations): the meters it lists.
json listed_meters() {
  CLI::App app("balerbench");
  cli::Action action;
  cli::register_meters(app, action);
  const std::vector<const char*> argv = {"balerbench", "meters", "--interval", "0.01", "--json"};
  app.parse(static_cast<int>(argv.size()), argv.data());
  testing::internal::CaptureStdout();
  EXPECT_EQ(action(), 0);
  return json::parse(testing::internal::GetCapturedStdout())["meters"];
}

// The help of the energy options' --meters (`balerbench measure`, `run`'s overrides, ...).
std::string meters_option_help() {
  CLI::App app("balerbench");
  cli::EnergyArgs args;
  cli::add_energy_options(&app, args, true);
  return app.get_option("--meters")->get_description();
}

json run_config_with(const json& energy, const json& codecs) {
  return {{"input_path", "d.npz"}, {"model_name", "AE"}, {"compression_ratio", 1.6},
          {"energy", energy},      {"codecs", codecs}};
}

bool has_doc(const std::string& path) {
  for (const ConfigKeyDoc& d : run_config_key_docs())
    if (d.path == path) return true;
  return false;
}

TEST(RegisteredEntries, AMeterAndACodecReachTheCommandLineAndTheReference) {
  const MeterRegistration meter(kConstantMeterEntry);
  const CodecRegistration codec(kCopyCodecEntry);
  const json listed = listed_meters();
  bool found = false;
  for (const json& m : listed)
    if (m["name"] == kConstantMeter) {
      found = true;
      EXPECT_TRUE(m["available"].get<bool>()) << m;
      EXPECT_EQ(m["kind"], "simulated");
      EXPECT_EQ(m["details"]["power_w"], 5.0);  // its key's default
    }
  EXPECT_TRUE(found) << listed.dump(1);
  EXPECT_NE(meters_option_help().find(", test_constant"), std::string::npos) << meters_option_help();

  const RunConfig c = parse_run_config(
      run_config_with({{"meters", {kConstantMeter}}, {kConstantPower, 9}}, {{kCopyCount, 3}}), "c.json", "");
  EXPECT_EQ(c.energy.meter_knobs.get<double>(kConstantPower), 9.0);
  EXPECT_EQ(c.codecs.knobs.get<int64_t>(kCopyCount), 3);
  EXPECT_EQ(c.to_json()["energy"][kConstantPower], 9.0);
  EXPECT_EQ(c.to_json()["codecs"][kCopyCount], 3);

  const cli::ConfigKeyProblems p = cli::check_config_key_docs(run_config_key_docs(), experiment_key_docs());
  EXPECT_TRUE(p.undocumented.empty()) << p.undocumented.front();
  EXPECT_TRUE(p.stale.empty()) << p.stale.front();
  const std::string reference = cli::config_reference("markdown");
  EXPECT_NE(reference.find("| `/energy/test_constant_power_w` | `5.0` | the test meter's power (0 to 1000 W) |"),
            std::string::npos);
  EXPECT_NE(reference.find("| `/codecs/test_copy_count` | `1` | the test codec's copies (1 to 8) |"),
            std::string::npos);
}

TEST(RegisteredEntries, NothingOfThemIsLeftOnceTheirRegistrationsEnd) {
  {
    const MeterRegistration meter(kConstantMeterEntry);
    const CodecRegistration codec(kCopyCodecEntry);
  }
  const json listed = listed_meters();
  for (const json& m : listed) EXPECT_NE(m["name"], kConstantMeter);
  EXPECT_EQ(meters_option_help().find("test_constant"), std::string::npos) << meters_option_help();
  EXPECT_THROW(parse_run_config(run_config_with({{kConstantPower, 9}}, json::object()), "c.json", ""), InputError);
  EXPECT_THROW(parse_run_config(run_config_with(json::object(), {{kCopyCount, 3}}), "c.json", ""), InputError);
  EXPECT_FALSE(has_doc("/energy/test_constant_power_w"));
  EXPECT_FALSE(has_doc("/codecs/test_copy_count"));
  EXPECT_EQ(cli::config_reference("markdown").find("test_co"), std::string::npos);
}

}  // namespace
}  // namespace balerbench
