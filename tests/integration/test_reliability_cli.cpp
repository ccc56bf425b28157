// test_reliability_cli.cpp: the promises of docs/reliability.md that a process, a lock or a signal
// puts to the test, end to end: a database locked by another program while a trial runs (the finished
// trial kept in a side file, folded in by the next run), a process stopped mid-trial (the trial
// flagged), a Baler config's interpreter on every exit path, SIGHUP, a merge interrupted or pointed at
// a link, a grid too large to plan, data every trial would refuse (checked before the database is
// made), and paths longer than SQLite takes. Each scenario is a bash script run in a fresh folder;
// waits are deadline waits on what the processes write.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/test_util.h"

namespace balerbench {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// A one-trial experiment on `rows` synthetic rows and `epochs` epochs (a second or two on 2 cores).
json one_trial(int rows = 20000, int epochs = 10) {
  json j = json::parse(R"({
    "schema_version": 1, "name": "one",
    "dataset": {"generator": {"kind": "cms", "rows": 2000, "seed": 1}},
    "model": {"name": "AE", "compression_ratio": 1.6},
    "sweep": {"batch_size": [256], "precision": ["fp32"], "epochs": [3], "repeats": 1},
    "energy": {"meters": ["cpu_estimate"], "sample_hz": 20, "cpu_tdp_w": 100}
  })");
  j["dataset"]["generator"]["rows"] = rows;
  j["sweep"]["epochs"] = {epochs};
  return j;
}

class ReliabilityCli : public ::testing::Test {
 protected:
  // Runs `script` with bash in the temp folder, with B set to the binary and a `wait_for FILE TEXT`
  // function (a deadline wait: up to 120 s for TEXT to appear in FILE).
  CommandResult sh(const std::string& script) {
    write_text(dir_.path("scenario.sh"),
               "set -u\nB=" + balerbench_binary() + "\ncd " + dir_.root() + "\n" +
                   "wait_for() { for _ in $(seq 1200); do grep -qF -- \"$2\" \"$1\" 2>/dev/null && return 0; sleep 0.1; "
                   "done; echo \"timed out waiting for '$2' in $1\"; return 1; }\n" +
                   script);
    return run_command("bash " + dir_.path("scenario.sh"));
  }
  CommandResult bb(const std::string& args) {
    return run_command("cd " + dir_.root() + " && " + balerbench_binary() + " " + args);
  }
  void write_json(const std::string& name, const json& j) { write_text(dir_.path(name), j.dump(2)); }
  TempDir dir_;
};

bool has(const CommandResult& r, const std::string& text) { return r.out.find(text) != std::string::npos; }

// Shell lines that stop the run ($pid), have another program take r.sqlite's write lock and hold it
// until the file `hold` is removed (`rm hold; wait $lock` ends it), then let the run go on: its next
// write finds the database locked.
std::string lock_the_database_under_the_run() {
  return "touch hold\nkill -STOP $pid\n" + python_binary() + R"( -c "
import os, sqlite3, time
c = sqlite3.connect('r.sqlite', isolation_level=None, timeout=60)
c.execute('BEGIN EXCLUSIVE')
open('locked', 'w').close()
while os.path.exists('hold'): time.sleep(0.05)
c.execute('ROLLBACK')
" & lock=$!
for _ in $(seq 1200); do [ -e locked ] && break; sleep 0.1; done
kill -CONT $pid
)";
}

// Another program holds a write lock while a trial runs (the run is stopped while the lock is taken, so
// that the trial cannot finish first): the finished trial is kept in a side file, exit code 4 with the
// reason (was: "internal error: database is locked", the trial lost). The next run folds it in.
TEST_F(ReliabilityCli, ALockedDatabaseKeepsTheFinishedTrialAsideAndTheNextRunFoldsItIn) {
  if (!python_has("sqlite3")) GTEST_SKIP() << "python3 sqlite3 missing";
  write_json("exp.json", one_trial());
  const auto r = sh(R"(
$B run exp.json --db r.sqlite --db-wait 1 --progress none --tables none > run1.txt 2>&1 & pid=$!
wait_for run1.txt "== trial 1/1" || exit 1
)" + lock_the_database_under_the_run() + R"(
wait $pid; echo "run1 exit $?"
cat run1.txt
rm hold; wait $lock
ls r.sqlite.unstored-*.sqlite && echo "side file present"
$B run exp.json --db r.sqlite --progress none --tables none; echo "run2 exit $?"
ls r.sqlite.unstored-* 2>/dev/null || echo "no side file left"
$B report --db r.sqlite --table trials --format json > trials.json; echo "report exit $?"
)");
  EXPECT_TRUE(has(r, "run1 exit 4")) << r.out;
  EXPECT_TRUE(has(r, "r.sqlite is locked by another program: waiting up to 1 s in all for it (--db-wait)")) << r.out;
  EXPECT_TRUE(has(r, "the finished trial is kept in r.sqlite.unstored-")) << r.out;
  EXPECT_TRUE(has(r, "balerbench merge r.sqlite r.sqlite.unstored-")) << r.out;
  EXPECT_FALSE(has(r, "internal error")) << r.out;
  EXPECT_TRUE(has(r, "side file present")) << r.out;
  EXPECT_TRUE(has(r, "1 trial kept aside when the database was locked, folded in")) << r.out;
  EXPECT_TRUE(has(r, "1 already in r.sqlite, 0 to run")) << r.out;
  EXPECT_TRUE(has(r, "run2 exit 0")) << r.out;
  EXPECT_TRUE(has(r, "no side file left")) << r.out;
  const json trials = json::parse(read_text(dir_.path("trials.json")));
  ASSERT_EQ(trials["tables"][0]["rows"].size(), 1u) << trials.dump();
}

// A stop signal while the run waits for the lock ends the wait at once (a try lasts a second), and the
// finished trial is kept aside all the same (was: the signal waited out the whole --db-wait).
TEST_F(ReliabilityCli, ASignalWhileWaitingForALockKeepsTheTrialAside) {
  if (!python_has("sqlite3")) GTEST_SKIP() << "python3 sqlite3 missing";
  write_json("exp.json", one_trial());
  const auto r = sh(R"(
$B run exp.json --db r.sqlite --db-wait 600 --progress none --tables none > run.txt 2>&1 & pid=$!
wait_for run.txt "== trial 1/1" || exit 1
)" + lock_the_database_under_the_run() + R"(
wait_for run.txt "waiting up to 600 s in all" || exit 1
kill -INT $pid; wait $pid; echo "run exit $?"
cat run.txt
rm hold; wait $lock
ls r.sqlite.unstored-*.sqlite && echo "side file present"
)");
  EXPECT_TRUE(has(r, "run exit 130")) << r.out;
  EXPECT_TRUE(has(r, "the finished trial is kept in r.sqlite.unstored-")) << r.out;
  EXPECT_TRUE(has(r, "side file present")) << r.out;
}

// A run stopped (SIGSTOP) for 2 s in the middle of a trial: the trial is flagged disturbed, saying how
// long the process did not run (was: "disturbed: no" for a trial that took 5 s against its repeat's 0.8).
TEST_F(ReliabilityCli, AStoppedProcessFlagsItsTrialDisturbed) {
  write_json("exp.json", one_trial(20000, 10));
  const auto r = sh(R"(
$B run exp.json --db r.sqlite --progress lines --tables none > run.txt 2>&1 & pid=$!
wait_for run.txt "Epoch 1/" || exit 1
kill -STOP $pid; sleep 2; kill -CONT $pid
wait $pid; echo "run exit $?"
$B report --db r.sqlite --table trials --format json
)");
  ASSERT_TRUE(has(r, "run exit 0")) << r.out;
  const json doc = json::parse(r.out.substr(r.out.find("run exit 0") + 10));
  const json& table = doc["tables"][0];
  EXPECT_EQ(table["rows"][0]["disturbed"], "yes") << table.dump();
  EXPECT_NE(table["notes"].dump().find("the process did not run for "), std::string::npos) << table.dump();
}

// A config that never returns: SIGTERM to balerbench ends its python3 too (was: left at 100% of a CPU),
// and without a signal the time limit stops it with a clear error.
TEST_F(ReliabilityCli, ABalerConfigsInterpreterNeverOutlivesTheCommand) {
  if (!fs::exists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3";
  fs::create_directories(dir_.path("workspaces/WS/P/config"));
  write_text(dir_.path("workspaces/WS/P/config/P_config.py"), "def set_config(c):\n    while True:\n        pass\n");
  const auto r = sh(R"(
$B train --baler-project workspaces/WS/P > run.txt 2>&1 & pid=$!
for _ in $(seq 1200); do child=$(pgrep -P $pid python3) && break; sleep 0.1; done
[ -n "${child:-}" ] || { echo "no python3 child"; exit 1; }
kill -TERM $pid; wait $pid; echo "train exit $?"
for _ in $(seq 100); do kill -0 $child 2>/dev/null || break; sleep 0.1; done
kill -0 $child 2>/dev/null && { echo "python3 $child outlived balerbench"; kill -9 $child; } || echo "python3 ended with it"
$B train --baler-project workspaces/WS/P --baler-config-timeout 0.5; echo "timeout exit $?"
)");
  EXPECT_TRUE(has(r, "train exit 143")) << r.out;
  EXPECT_TRUE(has(r, "python3 ended with it")) << r.out;
  EXPECT_TRUE(has(r, "P_config.py: reading it took longer than 0.5 s")) << r.out;
  EXPECT_TRUE(has(r, "timeout exit 2")) << r.out;
}

// SIGHUP (a closed terminal) is SIGTERM: `measure` passes it to its command and prints its summary
// (was: died with 129, no summary, the command left running); `run` gives its claim back.
TEST_F(ReliabilityCli, SighupEndsMeasureAndRunCleanly) {
  if (!python_has("sqlite3")) GTEST_SKIP() << "python3 sqlite3 missing";
  write_json("exp.json", one_trial(20000, 200));
  const auto r = sh(R"(
$B measure --meters cpu_estimate -- sleep 60 > measure.txt 2>&1 & pid=$!
for _ in $(seq 1200); do child=$(pgrep -P $pid sleep) && break; sleep 0.1; done
[ -n "${child:-}" ] || { echo "no child"; exit 1; }
kill -HUP $pid; wait $pid; echo "measure exit $?"
kill -0 $child 2>/dev/null && echo "sleep outlived measure" || echo "sleep ended"
cat measure.txt
$B run exp.json --db r.sqlite --progress lines --tables none > run.txt 2>&1 & pid=$!
wait_for run.txt "Epoch 1/" || exit 1
kill -HUP $pid; wait $pid; echo "run exit $?"
cat run.txt
)" + python_binary() + R"SH( -c "import sqlite3; print('claims left', sqlite3.connect('r.sqlite').execute('select count(*) from claims').fetchone()[0])"
)SH");
  EXPECT_TRUE(has(r, "measure exit 129")) << r.out;
  EXPECT_TRUE(has(r, "sleep ended")) << r.out;
  EXPECT_TRUE(has(r, "killed by signal 1 (SIGHUP), exit code 129")) << r.out;  // the summary
  EXPECT_TRUE(has(r, "run exit 129")) << r.out;
  EXPECT_TRUE(has(r, "interrupted:")) << r.out;
  EXPECT_TRUE(has(r, "claims left 0")) << r.out;
}

// A merge interrupted while it writes leaves neither OUT nor its temporary (was: OUT.partial-PID-XXXX
// with its -wal and -shm); temporaries of a killed merge are removed by the next one; a link at --out
// keeps pointing at its file, which gets the merged database (was: the link replaced by a file).
TEST_F(ReliabilityCli, MergeLeavesNothingHalfWrittenAndKeepsALinkAtOut) {
  if (!python_has("sqlite3")) GTEST_SKIP() << "python3 sqlite3 missing";
  write_json("exp.json", one_trial(2000, 2));
  ASSERT_EQ(bb("run exp.json --db a.sqlite --progress none --tables none").exit_code, 0);
  // A big input: many power samples, so that a merge takes long enough to be stopped in the middle.
  const auto grow = run_command(python_binary() + " -c \"import sqlite3; c=sqlite3.connect('" + dir_.path("a.sqlite") +
                                "'); t=c.execute('select id from trials').fetchone()[0]; c.executemany('insert into "
                                "power_samples(trial_id, t_s, phase, power_w) values(?,?,?,?)', ((t, i*0.001, 'fit', "
                                "10.0) for i in range(1500000))); c.commit()\"");
  ASSERT_EQ(grow.exit_code, 0) << grow.out;
  const std::string host = run_command("hostname").out;
  const auto r = sh(R"(
touch "all.sqlite.partial-$(hostname)-999999999-deadbeef" "all.sqlite.partial-$(hostname)-999999999-deadbeef-wal"
touch "all.sqlite.partial-otherhost-1-cafe0000"
$B merge a.sqlite --out all.sqlite > merge.txt 2>&1 & pid=$!
for _ in $(seq 1200); do ls all.sqlite.partial-*-$pid-* > /dev/null 2>&1 && break; sleep 0.01; done
kill -STOP $pid; kill -INT $pid; kill -CONT $pid
wait $pid; echo "merge exit $?"
cat merge.txt
echo "files:"
ls all.sqlite* 2>/dev/null | sort
echo "--"
ln -s target.sqlite link.sqlite
$B merge a.sqlite --out link.sqlite --force > /dev/null; echo "link merge exit $?"
[ -L link.sqlite ] && echo "link kept"
[ -f target.sqlite ] && echo "target written"
)");
  EXPECT_TRUE(has(r, "merge exit 130")) << r.out;
  EXPECT_TRUE(has(r, "merge interrupted by signal 2: all.sqlite is left as it was")) << r.out;
  EXPECT_TRUE(has(r, "left by a merge that was killed")) << r.out;
  const std::string listing = r.out.substr(r.out.find("files:"), r.out.find("--\n") - r.out.find("files:"));
  // Only the other host's temporary is left: it may belong to a merge running there.
  EXPECT_EQ(listing.find("all.sqlite.partial-" + host.substr(0, host.size() - 1)), std::string::npos) << r.out;
  EXPECT_NE(listing.find("all.sqlite.partial-otherhost-1-cafe0000"), std::string::npos) << r.out;
  EXPECT_EQ(listing.find("all.sqlite\n"), std::string::npos) << r.out;
  EXPECT_TRUE(has(r, "link merge exit 0")) << r.out;
  EXPECT_TRUE(has(r, "link kept")) << r.out;
  EXPECT_TRUE(has(r, "target written")) << r.out;
}

// Inputs every trial would refuse are refused once, before the database is made: a grid too large to
// plan (its size printed first), float16 data with "codecs", more rows than memory holds.
TEST_F(ReliabilityCli, WhatEveryTrialWouldRefuseIsRefusedBeforeTheDatabase) {
  json huge = one_trial();
  std::vector<int64_t> sizes;
  for (int64_t b = 1; b <= 1000; ++b) sizes.push_back(b);
  std::vector<int64_t> epochs;
  for (int64_t e = 1; e <= 100; ++e) epochs.push_back(e);
  huge["sweep"] = {{"batch_size", sizes}, {"precision", {"fp32"}}, {"epochs", epochs}, {"repeats", 10}};
  write_json("huge.json", huge);
  auto r = bb("run huge.json --db r.sqlite --dry-run");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_TRUE(has(r, "the grid has 1000000 trials (1000 batch sizes x 1 precision x 1 engine x 1 power limit x 100 "
                     "epochs values x 10 repeats), more than 100000 for one run"))
      << r.out;
  EXPECT_TRUE(has(r, "--allow-large-grid")) << r.out;
  r = bb("run huge.json --db r.sqlite --dry-run --shard 3/1000");  // its share is small: planned lazily
  EXPECT_EQ(r.exit_code, 0) << r.out.substr(0, 2000);
  EXPECT_TRUE(has(r, "1000000 trials in the grid, 1000 in shard 3/1000, 0 already in r.sqlite, 1000 to run")) << r.out.substr(0, 2000);
  EXPECT_EQ(bb("run huge.json --db r.sqlite --shard ''").exit_code, 2);
  EXPECT_FALSE(fs::exists(dir_.path("r.sqlite")));

  json oom = one_trial();
  oom["dataset"]["generator"]["rows"] = int64_t{1000000000000};
  write_json("oom.json", oom);
  r = bb("run oom.json --db oom.sqlite");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_TRUE(has(r, "out of memory")) << r.out;
  EXPECT_FALSE(fs::exists(dir_.path("oom.sqlite")));

  if (!python_has("numpy")) GTEST_SKIP() << "numpy missing for the float16 file";
  const auto npz = run_command(python_binary() + " -c \"import numpy as np; np.savez('" + dir_.path("half.npz") +
                               "', data=np.random.default_rng(0).random((500, 24)).astype(np.float16))\"");
  ASSERT_EQ(npz.exit_code, 0) << npz.out;
  json half = one_trial();
  half["dataset"] = {{"path", "half.npz"}};
  half["codecs"] = json::object();
  write_json("half.json", half);
  r = bb("run half.json --db half.sqlite");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_TRUE(has(r, "half.npz: the codecs compare float32 or float64 data, this file holds float16")) << r.out;
  EXPECT_FALSE(has(r, "== trial")) << r.out;
  EXPECT_FALSE(fs::exists(dir_.path("half.sqlite")));
}

// A --db path longer than SQLite takes (504 bytes, made absolute with links resolved), given as it is or
// reached from a deep folder: refused with the reason before any trial, nothing made (was: "unable to open
// database file").
TEST_F(ReliabilityCli, DatabasePathsLongerThanSqliteTakesAreRefusedWithTheReason) {
  std::string deep = "d";
  for (int i = 0; i < 6; ++i) deep += "/" + std::string(100, static_cast<char>('a' + i));
  fs::create_directories(dir_.path(deep));
  write_json("exp.json", one_trial(2000, 2));
  const std::string db = dir_.path(deep + "/results.sqlite");
  ASSERT_GT(db.size(), 600u);
  auto r = bb("run exp.json --db " + db + " --progress none");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_TRUE(has(r, "SQLite opens a database only by a full path of at most 504 bytes")) << r.out;
  EXPECT_FALSE(has(r, "== trial")) << r.out;
  r = run_command("cd " + dir_.path(deep) + " && " + balerbench_binary() + " run " + dir_.path("exp.json") +
                  " --db results.sqlite --progress none");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_TRUE(has(r, "results.sqlite: its full path is ")) << r.out;
  EXPECT_FALSE(fs::exists(db));
}

}  // namespace
}  // namespace balerbench
