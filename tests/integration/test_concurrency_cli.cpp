// test_concurrency_cli.cpp: SIGINT and SIGKILL in the middle of a trial, two runs into one database
// at once, and readers beside writers (a pending WAL, an older database, a folder it cannot write).
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "harness/store/store.h"
#include "tests/integration/sweep_cli_fixture.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

TEST_F(SweepCli, SigintMidTrialKeepsFinishedTrialsAndResumes) {
  const std::string exp = write_experiment(long_experiment());
  const std::string log = dir_.path("run.log");
  const long pid = start_background("run " + exp + " --db db.sqlite --progress lines", "", log);
  ASSERT_TRUE(wait_for(log, "== trial 2/2", 60)) << read_text(log);
  ASSERT_TRUE(wait_for_after(log, "== trial 2/2", "Epoch", 30)) << read_text(log);  // trial 2 in flight
  // While the run writes: a report and a merge read what is stored, a consistent snapshot.
  const auto during = bb("report --db db.sqlite --table trials --format json");
  EXPECT_EQ(during.exit_code, 0) << during.out;
  EXPECT_EQ(json::parse(during.out.substr(during.out.find('{')))["tables"][0]["rows"].size(), 1u) << during.out;
  const auto snapshot = bb("merge --out snapshot.sqlite db.sqlite");
  EXPECT_EQ(snapshot.exit_code, 0) << snapshot.out;
  EXPECT_NE(snapshot.out.find("db.sqlite: 1 trials copied"), std::string::npos) << snapshot.out;
  ASSERT_EQ(::kill(pid, SIGINT), 0);  // trial 2 of 600 epochs is still training
  EXPECT_EQ(wait_exit(30), 130) << read_text(log);
  EXPECT_NE(read_text(log).find("SIGINT: stopping"), std::string::npos) << read_text(log);
  const auto trials = Store(dir_.path("db.sqlite"), StoreAccess::kReadOnly).trials();
  ASSERT_EQ(trials.size(), 1u);  // the finished one; the one in flight is not stored
  EXPECT_TRUE(Store(dir_.path("db.sqlite"), StoreAccess::kReadOnly).claims().empty());  // its claim released
  EXPECT_EQ(trials[0].epochs, 2);
  const auto r = bb("run " + exp + " --db db.sqlite --dry-run");
  EXPECT_NE(r.out.find("1 already in db.sqlite, 1 to run (dry run"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ep=600"), std::string::npos) << r.out;
}

TEST_F(SweepCli, SigkillMidTrialLeavesAConsistentDatabaseThatResumes) {
  json j = long_experiment();
  j["sweep"]["epochs"] = {2, 150};
  const std::string exp = write_experiment(j);
  const std::string log = dir_.path("run.log");
  const long pid = start_background("run " + exp + " --db db.sqlite --progress lines", "", log);
  ASSERT_TRUE(wait_for_after(log, "== trial 2/2", "Epoch", 60)) << read_text(log);  // mid-trial: it trains
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  EXPECT_EQ(wait_exit(30), 137);
  if (python_has("sqlite3")) {
    const auto check = run_command(python_binary() + " -c \"import sqlite3; print(sqlite3.connect('" +
                                   dir_.path("db.sqlite") + "').execute('PRAGMA integrity_check').fetchone()[0])\"");
    EXPECT_EQ(check.out, "ok\n");
  }
  ASSERT_EQ(Store(dir_.path("db.sqlite"), StoreAccess::kReadOnly).trials().size(), 1u);
  // The killed run's claim on the trial in flight stays, and reads as dead: the next run takes it over.
  EXPECT_EQ(Store(dir_.path("db.sqlite"), StoreAccess::kReadOnly).claims().size(), 1u);
  const auto r = bb("run " + exp + " --db db.sqlite --progress none --tables none");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("1 already in db.sqlite, 1 to run"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("which no longer runs: this run takes it over"), std::string::npos) << r.out;
  EXPECT_TRUE(Store(dir_.path("db.sqlite"), StoreAccess::kReadOnly).claims().empty());
  const auto trials = Store(dir_.path("db.sqlite"), StoreAccess::kReadOnly).trials();
  ASSERT_EQ(trials.size(), 2u);
  EXPECT_NE(trials[0].key, trials[1].key);
}

TEST_F(SweepCli, TwoRunsIntoOneDatabaseAtOnceShareTheWorkAndStoreEachTrialOnce) {
  json j = tiny_experiment();
  j["sweep"]["epochs"] = {2};
  j["sweep"]["repeats"] = 3;  // 6 trials
  write_experiment(j);
  start_background("run exp.json --db r.sqlite --progress none", "", dir_.path("bg.log"));
  const auto fg = bb("run exp.json --db r.sqlite --progress none");
  const int bg_rc = wait_exit(300);
  EXPECT_EQ(fg.exit_code, 0) << fg.out;
  EXPECT_EQ(bg_rc, 0) << read_text(dir_.path("bg.log"));
  EXPECT_EQ(fg.out.find("internal error"), std::string::npos) << fg.out;
  Store s(dir_.path("r.sqlite"), StoreAccess::kReadOnly);
  const auto trials = s.trials("tiny", false, false);
  std::set<std::string> keys;
  for (const auto& t : trials) keys.insert(t.key);
  EXPECT_EQ(trials.size(), 6u);  // every trial once, whoever ran it
  EXPECT_EQ(keys.size(), 6u);
  // Together they stored the grid once: an "ok" line follows each trial a run stored itself (a trial
  // the other stored first is skipped, or said to be theirs).
  const std::string both = fg.out + read_text(dir_.path("bg.log"));
  std::size_t stored = 0;
  for (std::size_t at = both.find("   ok: "); at != std::string::npos; at = both.find("   ok: ", at + 1)) ++stored;
  EXPECT_EQ(stored, 6u) << both;
  // Claimed before it ran, no trial was computed twice, and nothing is left claimed.
  EXPECT_EQ(both.find("another run stored this trial while this one ran it"), std::string::npos) << both;
  EXPECT_TRUE(s.claims().empty());
  // When both ran trials, they ran at the same time for a while: the trials measured then name the
  // other balerbench, and count as disturbed.
  const bool both_ran = fg.out.find("   ok: ") != std::string::npos &&
                        read_text(dir_.path("bg.log")).find("   ok: ") != std::string::npos;
  int flagged = 0;
  for (const auto& t : trials) {
    ASSERT_TRUE(t.result.contains("concurrent_balerbench")) << t.result.dump();
    const json& d = t.result["disturbance"];
    if (d.value("disturbed", false) && d["reason"].get<std::string>().find("another balerbench ran beside it (pid ") !=
                                           std::string::npos)
      ++flagged;
  }
  if (both_ran) EXPECT_GT(flagged, 0) << both;
}

// A database a killed writer left with its -wal (trials not yet folded into the file): reading it
// shows them and changes neither file; the next writer folds them in.
TEST_F(SweepCli, ReadingADatabaseWithAPendingWalChangesNothing) {
  if (!python_has("sqlite3")) GTEST_SKIP() << "python3 sqlite3 missing";
  auto bytes = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string db = dir_.path("w.sqlite");
  fs::copy_file(source_dir() + "/tests/fixtures/store_v1.sqlite", db);
  // A writer that dies after its commit, before closing: the commit stays in w.sqlite-wal.
  ASSERT_EQ(run_command(python_binary() + " -c \"import sqlite3, os; c=sqlite3.connect('" + db +
                        "'); c.execute(\\\"insert into meta(key, value) values('probe', '1')\\\"); c.commit(); "
                        "os._exit(0)\"")
                .exit_code,
            0);
  ASSERT_GT(fs::file_size(db + "-wal"), 0u);
  const std::string file = bytes(db), wal = bytes(db + "-wal");
  for (const std::string cmd : {"report --db w.sqlite --table trials", "merge --out m.sqlite w.sqlite",
                                "run exp.json --db w.sqlite --dry-run"}) {
    write_experiment(tiny_experiment());
    const auto r = bb(cmd);
    EXPECT_EQ(r.exit_code, 0) << cmd << ": " << r.out;
    EXPECT_EQ(bytes(db), file) << cmd;
    EXPECT_EQ(bytes(db + "-wal"), wal) << cmd;
  }
  EXPECT_EQ(Store(dir_.path("m.sqlite"), StoreAccess::kReadOnly).trials().size(), 2u);
}

// Two runs started at once into a database an older balerbench wrote: one migrates it (after one
// backup), the other waits for it and goes on; both succeed.
TEST_F(SweepCli, TwoRunsAtOnceIntoAnOlderDatabaseBothSucceed) {
  json j = tiny_experiment();
  j["sweep"]["epochs"] = {2};
  j["sweep"]["repeats"] = 1;
  write_experiment(j);
  for (int round = 0; round < 2; ++round) {
    const std::string db = "v1_" + std::to_string(round) + ".sqlite";
    fs::copy_file(source_dir() + "/tests/fixtures/store_v1.sqlite", dir_.path(db));
    const std::string one = balerbench_binary() + " run exp.json --db " + db + " --progress none --tables none";
    ASSERT_EQ(run_command("cd " + dir_.root() + " && { (" + one + " > r1.log 2>&1; echo $? > r1.rc) & (" + one +
                          " > r2.log 2>&1; echo $? > r2.rc) & wait; }")
                  .exit_code,
              0);
    for (const char* n : {"r1", "r2"})
      EXPECT_EQ(std::stoi(read_text(dir_.path(std::string(n) + ".rc"))), 0)
          << read_text(dir_.path(std::string(n) + ".log"));
    EXPECT_EQ(Store(dir_.path(db), StoreAccess::kReadOnly).trials("tiny").size(), 2u);
    EXPECT_TRUE(fs::exists(dir_.path(db + ".schema1.bak")));
    for (const auto& e : fs::directory_iterator(dir_.root()))
      EXPECT_EQ(e.path().filename().string().find(".partial"), std::string::npos) << e.path();
  }
}

// `report` on a database in a folder this user cannot write (as user nobody; the test runs as root).
TEST_F(SweepCli, ReportReadsADatabaseInAFolderItCannotWrite) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root, to run a command as user nobody";
  if (run_command("command -v setpriv").exit_code != 0) GTEST_SKIP() << "setpriv missing";
  // nobody must reach the binary and the database: a folder of its own under /tmp, readable by all.
  const std::string shared = dir_.path("ro");
  fs::create_directories(shared);
  fs::copy_file(source_dir() + "/tests/fixtures/store_v1.sqlite", shared + "/old.sqlite");
  write_experiment(tiny_experiment());
  ASSERT_EQ(bb("run exp.json --db ro/new.sqlite --progress none --tables none").exit_code, 0);
  ASSERT_FALSE(fs::exists(shared + "/new.sqlite-wal"));  // closed cleanly: the file alone holds it
  ASSERT_EQ(run_command("chmod 755 " + dir_.root() + " " + shared + " && chmod 644 " + shared + "/*.sqlite").exit_code,
            0);
  const std::string as_nobody = "setpriv --reuid=nobody --regid=nogroup --clear-groups ";
  if (run_command(as_nobody + "test -x " + balerbench_binary()).exit_code != 0)
    GTEST_SKIP() << "user nobody cannot run " << balerbench_binary();
  ASSERT_NE(run_command(as_nobody + "touch " + shared + "/probe").exit_code, 0) << "the folder should be read-only";
  for (const std::string db : {"new.sqlite", "old.sqlite"}) {
    const auto r = run_command("cd / && " + as_nobody + balerbench_binary() + " report --db " + shared + "/" + db +
                               " --table trials --format json");
    EXPECT_EQ(r.exit_code, 0) << db << ": " << r.out;
    EXPECT_EQ(r.out.find("readonly database"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("\"tables\""), std::string::npos) << r.out;
  }
}

}  // namespace
}  // namespace balerbench
