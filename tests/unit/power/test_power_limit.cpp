// test_power_limit.cpp: GPU power limits (power/power_limit.h) against the fake NVML library: the
// guard sets, reads back and restores (on destruction and when an exception unwinds), refuses out of
// range limits and says what permission is missing, a killed run's journal is recovered and a live
// one's never is, and one run at a time holds the limits.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/error.h"
#include "harness/power/power_hold.h"
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

// A pid no process has now: a child that has exited and been reaped.
int64_t dead_pid() {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  waitpid(pid, nullptr, 0);
  return pid;
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
  // The journal names its writer, this process: made a dead one's, as a killed run leaves it.
  json j = json::parse(read_text(journal));
  EXPECT_EQ(j["pid"], static_cast<int64_t>(getpid()));
  EXPECT_FALSE(j["start_ticks"].get<std::string>().empty());
  j["pid"] = dead_pid();
  write_text(journal, j.dump());
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

// The journal of a run that still runs (here this process's, its guard alive) is never restored: its
// limits stay as that run set them, and so does its journal (was: "restored to 300 W ... from the
// journal of an earlier run" while that run, mid-trial, recorded 150 W).
TEST_F(PowerTest, JournalOfALiveRunIsNotRestored) {
  auto c = open();
  ASSERT_TRUE(c);
  const std::string journal = dir_.path("journal.json");
  PowerLimitGuard g(*c, journal);
  g.apply(150);
  expect_input_error([&] { recover_power_limits(*c, journal); }, "a balerbench run that still runs (pid " +
                                                                     std::to_string(getpid()));
  EXPECT_DOUBLE_EQ(c->limit_w(0), 150);
  EXPECT_TRUE(std::filesystem::exists(journal));
  const auto writer = journal_writer(journal);
  ASSERT_TRUE(writer);
  EXPECT_TRUE(writer->alive());
  // A journal of an older balerbench names only its pid: alive while a process has it.
  write_text(dir_.path("old.json"), json{{"pid", getpid()}, {"gpus", json::array()}}.dump());
  EXPECT_TRUE(journal_writer(dir_.path("old.json"))->alive());
  write_text(dir_.path("old.json"), json{{"pid", dead_pid()}, {"gpus", json::array()}}.dump());
  EXPECT_FALSE(journal_writer(dir_.path("old.json"))->alive());
}

// A journal edited by hand or by someone else: a limit outside the GPU's constraints, an entry that is
// not one, or a pipe in its place, is refused with the file named, and nothing is set.
TEST_F(PowerTest, AJournalNamingAnImpossibleLimitIsRefusedAndNothingIsSet) {
  auto c = open();
  ASSERT_TRUE(c);
  const std::string journal = dir_.path("journal.json");
  write_text(journal, json{{"pid", dead_pid()}, {"gpus", {{{"uuid", "GPU-aaaa"}, {"original_w", 5000}}}}}.dump());
  expect_input_error([&] { recover_power_limits(*c, journal); }, "outside its constraints [100 W, 300 W]");
  write_text(journal, json{{"gpus", {{{"uuid", "GPU-aaaa"}, {"original_w", "300"}}}}}.dump());
  expect_input_error([&] { recover_power_limits(*c, journal); }, "without a uuid and an original_w");
  write_text(journal, json{{"gpus", {{"uuid", "GPU-aaaa"}}}}.dump());
  expect_input_error([&] { recover_power_limits(*c, journal); }, "journal.json: a power-limit journal");
  ASSERT_EQ(::mkfifo(dir_.path("fifo.json").c_str(), 0600), 0);  // read, it would block the run for ever
  expect_input_error([&] { recover_power_limits(*c, dir_.path("fifo.json")); }, "is not a regular file");
  EXPECT_FALSE(journal_writer(dir_.path("fifo.json")));
  EXPECT_TRUE(sets().empty());
}

// One hold on the GPUs' limits at a time: a second is refused and told who has it, and the hold is free
// again once given back.
TEST_F(PowerTest, OneRunAtATimeHoldsTheLimits) {
  const std::string journal = dir_.path("sub/journal.json");
  std::string holder;
  auto first = PowerLimitHold::take(journal, holder);
  ASSERT_TRUE(first);
  EXPECT_TRUE(std::filesystem::exists(power_hold_path(journal)));
  EXPECT_FALSE(PowerLimitHold::take(journal, holder));  // another open file: flock refuses it, in-process too
  EXPECT_EQ(holder.rfind("pid " + std::to_string(getpid()) + " on ", 0), 0u) << holder;
  EXPECT_NE(holder.find("holding the limits since"), std::string::npos) << holder;
  first.reset();
  EXPECT_TRUE(PowerLimitHold::take(journal, holder));
  // A hold in a folder that cannot be made is bad input, said with the path.
  write_text(dir_.path("file"), "");
  expect_input_error([&] { PowerLimitHold::take(dir_.path("file/journal.json"), holder); }, "file/journal.json.lock");
}

}  // namespace
}  // namespace balerbench
