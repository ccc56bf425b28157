// test_store.cpp: the results database (store/store.h): trials with their children round-tripped in
// WAL mode, duplicate keys, damaged JSON and pages, merges, read-only access that changes no file,
// and claims (other files, schema versions, locks and migrations: test_store_schema.cpp). No
// LibTorch headers.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "common/error.h"
#include "harness/store/store.h"
#include "tests/test_util.h"
#include "tests/unit/trial_fixtures.h"

namespace balerbench {
namespace {

using nlohmann::json;

class StoreTest : public ::testing::Test {
 protected:
  TempDir dir_;
};

TEST_F(StoreTest, RoundTripsTrialsWithChildrenInWalMode) {
  const std::string db = dir_.path("r/results.sqlite");
  {
    Store s(db);
    s.put_experiment("fixture", "f.json", minimal_experiment());
    for (const auto& t : fixture_trials()) s.insert_trial(t);
    EXPECT_TRUE(std::filesystem::exists(db + "-wal"));  // WAL mode while open
  }
  const Store s(db, StoreAccess::kReadOnly);
  EXPECT_EQ(s.experiments(), std::vector<std::string>{"fixture"});
  EXPECT_EQ(s.experiment_spec("fixture")["name"], "t");
  const auto trials = s.trials("fixture");
  ASSERT_EQ(trials.size(), 5u);
  const TrialRecord& t = trials[0];
  EXPECT_EQ(t.key, "k1");
  EXPECT_DOUBLE_EQ(*t.train_s, 10);
  EXPECT_DOUBLE_EQ(*t.tta_s, 5);
  EXPECT_TRUE(t.target_reached);
  EXPECT_FALSE(trials[4].tta_s.has_value());  // "not reached" is stored as NULL, never a number
  EXPECT_FALSE(trials[4].target_reached);
  ASSERT_EQ(t.epoch_rows.size(), 2u);
  EXPECT_DOUBLE_EQ(*t.epoch_rows[1].energy_j, 20);
  EXPECT_TRUE(t.epoch_rows[1].target_met);
  ASSERT_EQ(t.samples.size(), 2u);
  EXPECT_DOUBLE_EQ(t.samples[1].power_w, 21);
  EXPECT_EQ(t.phases.at(0).energy_kind, "estimated");
  EXPECT_EQ(t.result["model"]["latent"], 15);
  EXPECT_EQ(s.trial_keys().size(), 5u);
}

TEST_F(StoreTest, DuplicateKeysAreRefusedAndLeaveNothingHalfWritten) {
  Store s(dir_.path("d.sqlite"));
  s.insert_trial(fixture_trial("k1", "fp32", 512, 0, 10, 1000));
  EXPECT_ANY_THROW(s.insert_trial(fixture_trial("k1", "fp32", 512, 0, 11, 1100)));
  const auto trials = s.trials();
  ASSERT_EQ(trials.size(), 1u);
  EXPECT_DOUBLE_EQ(*trials[0].train_s, 10);
  EXPECT_EQ(trials[0].epoch_rows.size(), 2u);  // the failed insert's epochs were rolled back
  // replace = true swaps the stored trial (retrying a failed one).
  TrialRecord again = fixture_trial("k1", "fp32", 512, 0, 12, 1200);
  s.insert_trial(again, true);
  ASSERT_EQ(s.trials().size(), 1u);
  EXPECT_DOUBLE_EQ(*s.trials()[0].train_s, 12);
  EXPECT_EQ(s.trials()[0].epoch_rows.size(), 2u);
}

// A stored JSON value that is not JSON (a damaged or hand-edited file) is an error naming the
// column, never a value that reads as something else.
TEST_F(StoreTest, DamagedJsonIsAnErrorNamingTheColumn) {
  const std::string db = dir_.path("j.sqlite");
  {
    Store s(db);
    s.insert_trial(fixture_trial("k1", "fp32", 512, 0, 10, 1000));
  }
  if (!python_has("sqlite3")) GTEST_SKIP() << "python3 sqlite3 missing";
  const auto r = run_command(python_binary() + " -c \"import sqlite3; c=sqlite3.connect('" + db +
                             "'); c.execute(\\\"update trials set result_json='{model: 1,'\\\"); c.commit()\"");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const Store s(db, StoreAccess::kReadOnly);
  expect_input_error([&] { s.trials(); }, "column result_json holds text that is not JSON");
  EXPECT_EQ(s.trial_keys().size(), 1u);  // the rest of the database still reads
}

// A damaged or hostile value is reported as damaged, naming its column, never read as another value:
// text where a number belongs (SQLite's own conversion read train_s = 'abc' as 0 s), a start time of
// 1e300 s (printed as the year -219246529), an experiment name with a bidirectional control (it would
// reorder the tables and file names it is shown in). A NaN loss, which SQLite stores as null, reads
// back as NaN, never as a loss of 0.
TEST_F(StoreTest, DamagedOrHostileValuesAreRefusedNamingTheirColumn) {
  const std::string db = dir_.path("h.sqlite");
  {
    Store s(db);
    TrialRecord t = fixture_trial("k1", "fp32", 512, 0, 10, 1000);
    EpochRow e;
    e.train_loss = e.val_loss = std::nan("");
    t.epoch_rows = {e};
    s.insert_trial(t);
  }
  const std::vector<TrialRecord> read = Store(db, StoreAccess::kReadOnly).trials();
  ASSERT_EQ(read.size(), 1u);
  ASSERT_EQ(read[0].epoch_rows.size(), 1u);
  EXPECT_TRUE(std::isnan(read[0].epoch_rows[0].train_loss));
  EXPECT_TRUE(std::isnan(read[0].epoch_rows[0].val_loss));
  {
    Store s(db);
    TrialRecord t = fixture_trial("k2", "fp32", 512, 1, 10, 1000);
    t.started_unix_s = 1e300;
    s.insert_trial(t);
  }
  expect_input_error([&] { Store(db, StoreAccess::kReadOnly).trials(); },
                     "h.sqlite: column started_unix_s holds 1e+300, not a time from 1970 to the year 9999");
  const std::string named = dir_.path("n.sqlite");
  {
    Store s(named);
    TrialRecord t = fixture_trial("k1", "fp32", 512, 0, 10, 1000);
    t.experiment = "gnp\xE2\x80\xAE" "fdp.exe";
    s.put_experiment(t.experiment, "x.json", json::object());
    s.insert_trial(t);
  }
  const Store hostile(named, StoreAccess::kReadOnly);
  expect_input_error([&] { hostile.experiments(); }, "holds a bidirectional control (U+202E) at byte 3");
  expect_input_error([&] { hostile.trials(); }, "column experiment holds the name 'gnp\\u202Efdp.exe'");
  Store target(dir_.path("t.sqlite"));
  expect_input_error([&] { target.merge_from(hostile); }, "the experiments table holds the experiment name");
  EXPECT_TRUE(target.trials().empty());
  if (!python_has("sqlite3")) GTEST_SKIP() << "python3 sqlite3 missing";
  const auto r = run_command(python_binary() + " -c \"import sqlite3; c=sqlite3.connect('" + db +
                             "'); c.execute(\\\"delete from trials where trial_key='k2'\\\"); "
                             "c.execute(\\\"update trials set train_s='abc'\\\"); c.commit()\"");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  expect_input_error([&] { Store(db, StoreAccess::kReadOnly).trials(); },
                     "column train_s holds the text 'abc', not a number");
  const auto negative = run_command(python_binary() + " -c \"import sqlite3; c=sqlite3.connect('" + db +
                                    "'); c.execute(\\\"update trials set train_s=1, batch_size=-5\\\"); c.commit()\"");
  ASSERT_EQ(negative.exit_code, 0) << negative.out;
  expect_input_error([&] { Store(db, StoreAccess::kReadOnly).trials(); },
                     "column batch_size holds -5");
  expect_input_error([&] { Store(db, StoreAccess::kReadOnly).trials(); }, "not a batch size of at least 1");
}

TEST_F(StoreTest, MergeCopiesNewTrialsOnce) {
  Store a(dir_.path("a.sqlite")), b(dir_.path("b.sqlite")), all(dir_.path("all.sqlite"));
  auto trials = fixture_trials();
  a.insert_trial(trials[0]);
  a.insert_trial(trials[1]);
  b.insert_trial(trials[1]);  // in both
  b.insert_trial(trials[2]);
  EXPECT_EQ(all.merge_from(a), (std::pair<int64_t, int64_t>{2, 0}));
  EXPECT_EQ(all.merge_from(b), (std::pair<int64_t, int64_t>{1, 1}));
  EXPECT_EQ(all.merge_from(b), (std::pair<int64_t, int64_t>{0, 2}));
  const auto merged = all.trials();
  ASSERT_EQ(merged.size(), 3u);
  EXPECT_EQ(merged[2].epoch_rows.size(), 2u);
  EXPECT_EQ(merged[2].samples.size(), 2u);
}

// A damaged foreign database (a table dropped, an experiment that is not JSON) is an InputError naming
// that file, and the database merged into keeps what it had: nothing of the damaged file is copied.
TEST_F(StoreTest, MergeOfADamagedDatabaseNamesItAndCopiesNothing) {
  if (!python_has("sqlite3")) GTEST_SKIP() << "python3 sqlite3 missing";
  const auto damage = [&](const std::string& db, const std::string& sql) {
    const auto r = run_command(python_binary() + " -c \"import sqlite3; c=sqlite3.connect('" + db + "'); c.execute(\\\"" +
                               sql + "\\\"); c.commit()\"");
    ASSERT_EQ(r.exit_code, 0) << r.out;
  };
  const auto trials = fixture_trials();
  Store all(dir_.path("all.sqlite"));
  all.insert_trial(trials[0]);
  {
    Store a(dir_.path("a.sqlite")), b(dir_.path("b.sqlite")), c(dir_.path("c.sqlite")), d(dir_.path("d.sqlite"));
    a.put_experiment("fixture", "exp.json", json{{"cost", {{"eta", {0.5}}}}});
    a.insert_trial(trials[1]);
    b.insert_trial(trials[2]);
    c.insert_trial(trials[2]);
    d.insert_trial(trials[1]);
    ASSERT_FALSE(trials[2].epoch_rows.empty());
  }
  damage(dir_.path("a.sqlite"), "update experiments set spec_json='{cost: 1,'");
  damage(dir_.path("b.sqlite"), "drop table power_samples");
  damage(dir_.path("c.sqlite"), "update epochs set trial_id=999");  // Python's sqlite3 leaves foreign keys off
  damage(dir_.path("d.sqlite"), "update trials set result_json='not json'");
  const Store a(dir_.path("a.sqlite"), StoreAccess::kReadOnly), b(dir_.path("b.sqlite"), StoreAccess::kReadOnly),
      c(dir_.path("c.sqlite"), StoreAccess::kReadOnly), d(dir_.path("d.sqlite"), StoreAccess::kReadOnly);
  // A trial's JSON that is not JSON names the file it is in (was: "results database: column ...", no file).
  expect_input_error([&] { all.merge_from(d); }, "d.sqlite: column result_json holds text that is not JSON: 'not json'");
  expect_input_error([&] { all.merge_from(a); }, "a.sqlite: experiment 'fixture' spec_json holds text that is not JSON");
  expect_input_error([&] { all.merge_from(b); }, "b.sqlite: cannot read it: sqlite: no such table: power_samples");
  expect_input_error([&] { all.merge_from(c); }, "c.sqlite: a row of epochs belongs to no trial (trial_id 999)");
  EXPECT_EQ(all.trial_keys(), std::set<std::string>{trials[0].key});
  EXPECT_TRUE(all.experiment_spec("fixture").is_null());
}

// A file whose pages are damaged (found by fuzz_merge: SQLite's "database disk image is malformed"
// escaped as an internal error). Every page after the first gets an invalid b-tree page type.
TEST_F(StoreTest, DamagedPagesAreAnInputErrorThatNamesTheFile) {
  const auto trials = fixture_trials();
  const std::string path = dir_.path("damaged.sqlite");
  {
    Store s(path);
    for (const auto& t : trials) s.insert_trial(t);
  }  // the last connection's close checkpoints the WAL into the file
  const auto size = std::filesystem::file_size(path);
  ASSERT_GT(size, 4096u * 3);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    for (std::uintmax_t at = 4096; at < size; at += 4096) {
      f.seekp(static_cast<std::streamoff>(at));
      f.put('\x7f');
    }
  }
  expect_input_error(
      [&] {
        const Store s(path, StoreAccess::kReadOnly);
        s.trials("", true);
      },
      "damaged.sqlite: the file is damaged (sqlite: database disk image is malformed");
  Store all(dir_.path("all.sqlite"));
  all.insert_trial(trials[0]);
  try {
    const Store s(path, StoreAccess::kReadOnly);
    expect_input_error([&] { all.merge_from(s); }, "damaged.sqlite");
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("damaged.sqlite"), std::string::npos) << e.what();
  }
  EXPECT_EQ(all.trial_keys(), std::set<std::string>{trials[0].key});
}

// The bytes of a file, to show that only reading it changed nothing.
std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Reading never changes a file: a foreign SQLite file keeps its journal mode and bytes, an empty
// file stays empty, and an older schema is migrated in memory (no backup, no change on disk).
TEST_F(StoreTest, ReadingOnlyChangesNoFile) {
  if (!python_has("sqlite3")) GTEST_SKIP() << "python3 sqlite3 missing";
  const std::string foreign = dir_.path("foreign.sqlite");
  ASSERT_EQ(run_command(python_binary() + " -c \"import sqlite3; c=sqlite3.connect('" + foreign +
                        "'); c.execute('create table notes(x)'); c.commit()\"")
                .exit_code,
            0);
  const std::string before = file_bytes(foreign);
  ASSERT_EQ(before[18], 1);  // the rollback journal: WAL would be 2
  expect_input_error([&] { Store s(foreign, StoreAccess::kReadOnly); }, "not a balerbench results database");
  expect_input_error([&] { Store s(foreign, StoreAccess::kCreate); }, "not a balerbench results database");
  EXPECT_EQ(file_bytes(foreign), before);  // not switched to WAL before being refused
  EXPECT_FALSE(std::filesystem::exists(foreign + "-wal"));

  const std::string empty = dir_.path("empty.sqlite");
  write_text(empty, "");
  expect_input_error([&] { Store s(empty, StoreAccess::kReadOnly); }, "empty.sqlite: an empty file, not a results database");
  EXPECT_EQ(std::filesystem::file_size(empty), 0u);
  expect_input_error([&] { Store s(dir_.root(), StoreAccess::kReadOnly); }, "is a folder, not a results database");

  const std::string old = dir_.path("old.sqlite");
  std::filesystem::copy_file(source_dir() + "/tests/fixtures/store_v1.sqlite", old);
  const std::string old_bytes = file_bytes(old);
  {
    const Store s(old, StoreAccess::kReadOnly);
    EXPECT_NE(s.migration_note().find("read through a migration in memory from schema 1 to 5"), std::string::npos)
        << s.migration_note();
    EXPECT_NE(s.migration_note().find("the file is left as it is"), std::string::npos) << s.migration_note();
    const auto trials = s.trials("fixture_v1");
    ASSERT_EQ(trials.size(), 2u);
    EXPECT_EQ(trials[0].engine, "libtorch");  // the migration's default, read in memory
    EXPECT_TRUE(s.claims().empty());
  }
  EXPECT_EQ(file_bytes(old), old_bytes);
  EXPECT_FALSE(std::filesystem::exists(old + ".schema1.bak"));
  EXPECT_FALSE(std::filesystem::exists(old + "-wal"));
}

// Claims: one holder at a time while it lives, taken over when it died, gone with the stored trial.
TEST_F(StoreTest, ClaimsLetOneRunHoldATrialAndGoWithItsResult) {
  Store s(dir_.path("c.sqlite"));
  const ClaimHolder a{"host", "boot", 100, "5"}, b{"host", "boot", 200, "6"};
  bool a_alive = true;
  auto alive = [&](const Claim& c) { return c.holder == a ? a_alive : true; };
  TrialRecord t = fixture_trials()[0];
  EXPECT_EQ(s.claim_trial(t.key, a, std::nullopt, alive).kind, ClaimOutcome::kClaimed);
  EXPECT_EQ(s.claim_trial(t.key, a, std::nullopt, alive).kind, ClaimOutcome::kClaimed);  // its own claim again
  const ClaimOutcome held = s.claim_trial(t.key, b, std::nullopt, alive);
  ASSERT_EQ(held.kind, ClaimOutcome::kHeldByOther);
  EXPECT_EQ(held.other->holder.pid, 100);
  a_alive = false;  // a died: b takes the trial over
  const ClaimOutcome taken = s.claim_trial(t.key, b, std::nullopt, alive);
  ASSERT_EQ(taken.kind, ClaimOutcome::kClaimed);
  ASSERT_TRUE(taken.taken_over.has_value());
  EXPECT_EQ(taken.taken_over->holder.pid, 100);
  ASSERT_EQ(s.claims().size(), 1u);
  EXPECT_EQ(s.claims()[0].holder.pid, 200);
  const double beat = s.claims()[0].heartbeat_unix_s;
  EXPECT_EQ(s.refresh_claims(b), 1);
  EXPECT_GE(s.claims()[0].heartbeat_unix_s, beat);
  EXPECT_EQ(s.refresh_claims(a), 0);
  s.release_claim(t.key, a);  // not a's to release
  EXPECT_EQ(s.claims().size(), 1u);
  s.insert_trial(t);  // stored: the claim goes with it
  EXPECT_TRUE(s.claims().empty());
  const ClaimOutcome stored = s.claim_trial(t.key, a, std::nullopt, alive);
  EXPECT_EQ(stored.kind, ClaimOutcome::kStored);
  EXPECT_EQ(*stored.stored, TrialStatus::kOk);
  EXPECT_EQ(s.claim_trial(t.key, a, unix_time_s() + 10, alive).kind, ClaimOutcome::kStored);  // ok: never run again
  TrialRecord failed = fixture_trials()[1];
  failed.status = TrialStatus::kFailed;
  s.insert_trial(failed);
  EXPECT_EQ(s.claim_trial(failed.key, a, std::nullopt, alive).kind, ClaimOutcome::kStored);
  // --retry-failed: what failed before the retrying run began runs again; what failed after it began
  // (stored by a concurrent run meanwhile) is stored.
  EXPECT_EQ(s.claim_trial(failed.key, a, failed.finished_unix_s - 1, alive).kind, ClaimOutcome::kStored);
  EXPECT_EQ(s.claim_trial(failed.key, a, failed.finished_unix_s + 1, alive).kind, ClaimOutcome::kClaimed);
  s.release_claim(failed.key, a);
  EXPECT_TRUE(s.claims().empty());
}

// A claim's holder is alive while its process runs (this machine, this boot), or while its heartbeat
// is younger than the lease (elsewhere: a database on a shared file system).
TEST(Claims, AliveByProcessHereAndByHeartbeatElsewhere) {
  const ProcessIdentity me = this_process();
  const double now = unix_time_s();
  Claim mine{"k", claim_holder(me), now, now - 10 * kClaimLeaseS};  // an old heartbeat does not matter here
  EXPECT_TRUE(claim_alive(mine, me, now));
  Claim dead = mine;
  dead.holder.pid_start += "9";  // its pid now belongs to another process
  EXPECT_FALSE(claim_alive(dead, me, now));
  Claim remote{"k", {"other-host", "other-boot", me.pid, me.start_ticks}, now - 1000, now - kClaimLeaseS / 2};
  EXPECT_TRUE(claim_alive(remote, me, now));
  remote.heartbeat_unix_s = now - kClaimLeaseS - 1;  // ten beats missed: its holder is gone
  EXPECT_FALSE(claim_alive(remote, me, now));
}

}  // namespace
}  // namespace balerbench
