// test_power_limit.cpp: GPU power limits (power/power_limit.h) against the fake NVML library: the
// guard sets, reads back and restores (on destruction and when an exception unwinds), refuses out of
// range limits and says what permission is missing, and a killed run's journal is recovered.
#include <gtest/gtest.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/error.h"
#include "harness/power/power_limit.h"
#include "tests/test_util.h"
#include "tests/unit/power/power_test.h"

namespace balerbench {
namespace {

using nlohmann::json;

TEST_F(PowerTest, GuardSetsReadsBackAndRestoresOnDestruction) {
  auto c = open();
  ASSERT_TRUE(c);
  const std::string journal = dir_.path("journal.json");
  {
    PowerLimitGuard g(*c, journal);
    const auto applied = g.apply(250);
    ASSERT_EQ(applied.size(), 1u);
    EXPECT_DOUBLE_EQ(applied[0].original_w, 300);
    EXPECT_DOUBLE_EQ(applied[0].enforced_w, 250);
    EXPECT_TRUE(std::filesystem::exists(journal));
    EXPECT_DOUBLE_EQ(c->limit_w(0), 250);
    g.apply(200);  // the original stays 300
    EXPECT_DOUBLE_EQ(c->limit_w(0), 200);
  }
  EXPECT_DOUBLE_EQ(c->limit_w(0), 300);
  EXPECT_FALSE(std::filesystem::exists(journal));
  EXPECT_EQ(sets(), (std::vector<std::string>{"GPU-aaaa 250000 0", "GPU-aaaa 200000 0", "GPU-aaaa 300000 0"}));
}

TEST_F(PowerTest, GuardRestoresWhenAnExceptionUnwinds) {
  auto c = open();
  ASSERT_TRUE(c);
  try {
    PowerLimitGuard g(*c, dir_.path("j.json"));
    g.apply(150);
    throw std::runtime_error("trial failed");
  } catch (const std::runtime_error&) {
  }
  EXPECT_DOUBLE_EQ(c->limit_w(0), 300);
  EXPECT_EQ(sets().back(), "GPU-aaaa 300000 0");
}

TEST_F(PowerTest, OutOfRangeLimitChangesNothing) {
  auto c = open();
  ASSERT_TRUE(c);
  PowerLimitGuard g(*c, dir_.path("j.json"));
  expect_input_error([&] { g.apply(350); }, "outside GPU GPU-aaaa");
  expect_input_error([&] { g.apply(50); }, "[100 W, 300 W]");
  EXPECT_TRUE(sets().empty());
  EXPECT_FALSE(g.touched());
}

TEST_F(PowerTest, NoPermissionSaysWhatIsNeeded) {
  configure(R"(, "set_error": 4)");
  auto c = open();
  ASSERT_TRUE(c);
  PowerLimitGuard g(*c, dir_.path("j.json"));
  try {
    g.apply(200);
    FAIL() << "expected PowerLimitError";
  } catch (const PowerLimitError& e) {
    EXPECT_TRUE(e.permission);
    EXPECT_NE(std::string(e.what()).find("root or CAP_SYS_ADMIN"), std::string::npos) << e.what();
  }
  EXPECT_DOUBLE_EQ(c->limit_w(0), 300);
}

TEST_F(PowerTest, EnforcedLimitIsReadBackNotAssumed) {
  configure(R"(, "enforce_offset_w": -5)");
  auto c = open();
  ASSERT_TRUE(c);
  PowerLimitGuard g(*c, dir_.path("j.json"));
  EXPECT_DOUBLE_EQ(g.apply(200)[0].enforced_w, 195);
}

TEST_F(PowerTest, JournalOfAKilledRunIsRecovered) {
  setenv("FAKE_NVML_STATE", dir_.path("state.json").c_str(), 1);
  const std::string journal = dir_.path("journal.json");
  {
    auto c = open();
    ASSERT_TRUE(c);
    auto* g = new PowerLimitGuard(*c, journal);  // never destroyed: as if the process died
    g->apply(175);
  }
  // A "new process": NVML state from the state file, as a real GPU keeps its limit.
  auto c = open();
  ASSERT_TRUE(c);
  EXPECT_DOUBLE_EQ(c->limit_w(0), 175);
  ASSERT_TRUE(std::filesystem::exists(journal));
  const auto restored = recover_power_limits(*c, journal);
  ASSERT_EQ(restored.size(), 1u);
  EXPECT_DOUBLE_EQ(restored[0].original_w, 300);
  EXPECT_DOUBLE_EQ(restored[0].restored_w, 300);
  EXPECT_DOUBLE_EQ(c->limit_w(0), 300);
  EXPECT_FALSE(std::filesystem::exists(journal));
  EXPECT_TRUE(recover_power_limits(*c, journal).empty());  // nothing left to do
}

}  // namespace
}  // namespace balerbench
