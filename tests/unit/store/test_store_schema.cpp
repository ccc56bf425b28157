// test_store_schema.cpp: the results database (store/store.h) against files it must not take as
// they are: other files, other and damaged schema versions, an older database locked by another
// program, a path longer than SQLite takes, a write lock held elsewhere, and an older schema migrated
// after a backup. No LibTorch headers.
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

class StoreSchemaTest : public ::testing::Test {
 protected:
  TempDir dir_;
};

TEST_F(StoreSchemaTest, RefusesOtherFilesAndSchemaVersions) {
  expect_input_error([&] { Store s(dir_.path("missing.sqlite"), StoreAccess::kReadOnly); }, "no such database");
  write_text(dir_.path("text.sqlite"), "this is not a database at all, just some text that is long enough");
  expect_input_error([&] { Store s(dir_.path("text.sqlite")); }, "text.sqlite");
  { Store s(dir_.path("v.sqlite")); }
  // Bump the stored version from outside (Python's sqlite3), then open it again.
  const std::string py = python_binary();
  if (!python_has("sqlite3")) GTEST_SKIP() << "python3 sqlite3 missing";
  const auto r =
      run_command(py + " -c \"import sqlite3; c=sqlite3.connect('" + dir_.path("v.sqlite") +
                  "'); c.execute(\\\"update meta set value='99' where key='schema_version'\\\"); c.commit()\"");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  expect_input_error([&] { Store s(dir_.path("v.sqlite")); }, "schema version 99; this balerbench reads 1 to 5");
}

// A schema_version that is not one balerbench writes, a meta table without it, or tables whose columns
// disagree with the version they state: refused as damaged, and nothing changed or copied (was: '5.5',
// ' 5', '05' and NULL accepted; a deleted row read as "no tables"; 0 and -1 "use a newer balerbench";
// a faked '2' failed half-way with "duplicate column name: engine" after leaving FILE.schema2.bak).
TEST_F(StoreSchemaTest, ADamagedOrHandEditedSchemaVersionIsRefusedAndNothingIsChanged) {
  if (!python_has("sqlite3")) GTEST_SKIP() << "python3 sqlite3 missing";
  const auto edit = [&](const std::string& db, const std::string& sql) {
    const auto r = run_command(python_binary() + " -c \"import sqlite3; c=sqlite3.connect('" + db + "'); c.execute(\\\"" +
                               sql + "\\\"); c.commit(); c.close()\"");
    ASSERT_EQ(r.exit_code, 0) << r.out;
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"update meta set value='5.5' where key='schema_version'", "its schema_version is '5.5', not a version"},
      {"update meta set value=' 5' where key='schema_version'", "its schema_version is ' 5', not a version"},
      {"update meta set value='05' where key='schema_version'", "its schema_version is '05', not a version"},
      {"update meta set value=X'35' where key='schema_version'", "its schema_version is '5', not a version"},  // a blob
      {"update meta set value='0' where key='schema_version'", "balerbench numbers its schemas from 1"},
      {"update meta set value='-1' where key='schema_version'", "its schema_version is '-1', not a version"},
      {"delete from meta where key='schema_version'", "its meta table has no schema_version"},
      {"update meta set value='2' where key='schema_version'",
       "its schema_version says 2, but its trials table has the column engine of schema 3"},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const std::string db = dir_.path("case" + std::to_string(i) + ".sqlite");
    {
      Store s(db);
      s.insert_trial(fixture_trials()[0]);
      s.close_as_single_file();
    }
    edit(db, cases[i].first);
    const std::string before = read_text(db);
    for (const StoreAccess access : {StoreAccess::kReadWrite, StoreAccess::kReadOnly})
      expect_input_error([&] { Store s(db, access); }, cases[i].second);
    EXPECT_TRUE(read_text(db) == before) << "the file changed: " << cases[i].first;
    EXPECT_FALSE(std::filesystem::exists(db + ".schema2.bak")) << cases[i].first;
  }
}

// An older database locked by another program when a run opens it: a StoreBusyError, and no backup left
// behind (was: FILE.schema1.bak made, then the migration failed on the lock).
TEST_F(StoreSchemaTest, AnOlderDatabaseLockedByAnotherProgramIsNotBackedUpOrMigrated) {
  if (!python_has("sqlite3")) GTEST_SKIP() << "python3 sqlite3 missing";
  const std::string db = dir_.path("old.sqlite");
  std::filesystem::copy_file(source_dir() + "/tests/fixtures/store_v1.sqlite", db);
  const std::string hold = dir_.path("hold"), locked = dir_.path("locked");
  write_text(hold, "");
  write_text(dir_.path("lock.py"), "import os, sqlite3, time\nc = sqlite3.connect('" + db +
                                       "', isolation_level=None)\nc.execute('BEGIN EXCLUSIVE')\nopen('" + locked +
                                       "', 'w').close()\nwhile os.path.exists('" + hold +
                                       "'): time.sleep(0.05)\nc.execute('ROLLBACK')\n");
  ASSERT_EQ(run_command(python_binary() + " " + dir_.path("lock.py") + " > /dev/null 2>&1 &").exit_code, 0);
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(locked); }));
  try {
    Store s(db, StoreAccess::kReadWrite);
    ADD_FAILURE() << "opened and migrated under another program's lock";
  } catch (const StoreBusyError& e) {
    EXPECT_NE(std::string(e.what()).find("stayed locked by another connection"), std::string::npos) << e.what();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("locked"), std::string::npos) << e.what();
  }
  std::filesystem::remove(hold);
  EXPECT_FALSE(std::filesystem::exists(db + ".schema1.bak"));
  EXPECT_TRUE(eventually([&] {  // and once the lock is gone, it migrates as ever
    try {
      Store s(db, StoreAccess::kReadWrite);
      return s.migration_note().find("migrated the results database from schema 1") != std::string::npos;
    } catch (const StoreBusyError&) {
      return false;
    }
  }));
}

// SQLite opens a database only by a full path of at most 504 bytes (a compile-time limit; links are
// resolved first, so a link cannot shorten it): a longer one is refused with the reason, before anything
// is made (was: "unable to open database file" from about 510 characters on).
TEST_F(StoreSchemaTest, APathLongerThanSqliteTakesIsRefusedWithTheReason) {
  std::string deep;
  for (int i = 0; i < 6; ++i) deep += std::string(100, static_cast<char>('a' + i)) + "/";
  const std::string db = dir_.path(deep + "results.sqlite");
  ASSERT_GT(db.size(), 600u);
  expect_input_error([&] { Store s(db); }, "bytes, and SQLite opens a database only by a full path of at most 504 bytes");
  EXPECT_FALSE(std::filesystem::exists(dir_.path(deep)));
  std::filesystem::create_directories(dir_.path(deep));
  std::filesystem::create_directory_symlink(dir_.path(deep), dir_.path("short"));
  expect_input_error([&] { Store s(dir_.path("short/results.sqlite")); }, "a link does not shorten it");
  EXPECT_FALSE(std::filesystem::exists(db));
  Store fits(dir_.path("ok.sqlite"));  // and a short one opens as ever
}

// Another connection holding a write lock: a write waits SQLite's busy timeout, then fails as
// StoreBusyError (exit code 4 uncaught; a sweep keeps the trial aside), never an internal error, and
// the database is unchanged; a reader opening a database locked in rollback-journal mode is told so
// (was: "is it an SQLite database?").
TEST_F(StoreSchemaTest, AWriteLockHeldByAnotherProgramIsABusyErrorNotAnInternalOne) {
  if (!python_has("sqlite3")) GTEST_SKIP() << "python3 sqlite3 missing";
  const auto trials = fixture_trials();
  const std::string db = dir_.path("locked.sqlite");
  Store s(db);
  s.insert_trial(trials[0]);
  s.set_busy_timeout_s(0.2);
  const std::string hold = dir_.path("hold"), locked = dir_.path("locked");
  write_text(hold, "");
  const std::string script = "import os, sqlite3, time\nc = sqlite3.connect('" + db +
                             "', isolation_level=None)\nc.execute('BEGIN EXCLUSIVE')\nopen('" + locked +
                             "', 'w').close()\nwhile os.path.exists('" + hold + "'): time.sleep(0.05)\nc.execute('ROLLBACK')\n";
  write_text(dir_.path("lock.py"), script);
  ASSERT_EQ(run_command(python_binary() + " " + dir_.path("lock.py") + " > /dev/null 2>&1 &").exit_code, 0);
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(locked); }));
  try {
    s.insert_trial(trials[1]);
    ADD_FAILURE() << "stored under another program's lock";
  } catch (const StoreBusyError& e) {
    EXPECT_NE(std::string(e.what()).find("locked.sqlite: could not store trial"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("another program holds a write lock on it"), std::string::npos) << e.what();
  }
  std::filesystem::remove(hold);
  EXPECT_TRUE(eventually([&] {
    try {
      s.insert_trial(trials[1]);
      return true;
    } catch (const StoreBusyError&) {
      return false;
    }
  }));
  EXPECT_EQ(s.trial_keys().size(), 2u);
}

// A database written by schema 1 (tests/fixtures/store_v1.sqlite: `balerbench run
// tests/fixtures/store_v1_experiment.json` with that version) is migrated forward in one
// transaction after a backup copy, keeps every row, says so once, and ends with exactly the tables
// a new database has.
TEST_F(StoreSchemaTest, OlderSchemaIsMigratedAfterABackupAndKeepsEveryRow) {
  if (!python_has("sqlite3")) GTEST_SKIP() << "python3 sqlite3 missing";
  const std::string db = dir_.path("old.sqlite");
  std::filesystem::copy_file(source_dir() + "/tests/fixtures/store_v1.sqlite", db);
  const std::string py = python_binary();
  auto sql = [&](const std::string& path, const std::string& query) {
    const auto r = run_command(py + " -c \"import sqlite3; c=sqlite3.connect('" + path + "'); print(c.execute(\\\"" +
                               query + "\\\").fetchall())\"");
    EXPECT_EQ(r.exit_code, 0) << r.out;
    return r.out;
  };
  const std::string epochs_before = sql(db, "select trial_id, epoch, train_loss, elapsed_s from epochs order by 1, 2");
  {
    Store s(db, StoreAccess::kReadWrite);
    EXPECT_NE(s.migration_note().find("from schema 1 to 5"), std::string::npos) << s.migration_note();
    EXPECT_NE(s.migration_note().find("eval_s"), std::string::npos) << s.migration_note();
    EXPECT_NE(s.migration_note().find("trials.engine"), std::string::npos) << s.migration_note();
    EXPECT_NE(s.migration_note().find("epochs.energy_pm_j"), std::string::npos) << s.migration_note();
    const auto trials = s.trials("fixture_v1");
    ASSERT_EQ(trials.size(), 2u);
    for (const auto& t : trials) {
      EXPECT_EQ(t.status, TrialStatus::kOk);
      ASSERT_EQ(t.epoch_rows.size(), 2u);
      EXPECT_FALSE(t.epoch_rows[0].eval_s.has_value());  // not measured by schema 1
      EXPECT_FALSE(t.epoch_rows[0].energy_pm_j.has_value());
      EXPECT_FALSE(t.samples.empty());
      EXPECT_TRUE(t.target_reached);
      EXPECT_EQ(t.engine, "libtorch");  // what every trial before schema 3 trained with
      EXPECT_EQ(t.system_fingerprint, "");  // not known before schema 5
    }
    EXPECT_NE(s.migration_note().find("trials.system_fingerprint"), std::string::npos) << s.migration_note();
    TrialRecord fresh = fixture_trial("new", "fp32", 512, 0, 10, 1000);
    fresh.epoch_rows[1].eval_s = 0.25;
    fresh.epoch_rows[1].energy_pm_j = 0.125;
    fresh.engine = "fused";
    fresh.system_fingerprint = "0123456789ab";
    s.insert_trial(fresh);
    EXPECT_EQ(s.trials("fixture")[0].system_fingerprint, "0123456789ab");
    EXPECT_DOUBLE_EQ(*s.trials("fixture")[0].epoch_rows[1].eval_s, 0.25);
    EXPECT_DOUBLE_EQ(*s.trials("fixture")[0].epoch_rows[1].energy_pm_j, 0.125);
    EXPECT_EQ(s.trials("fixture")[0].engine, "fused");
  }
  EXPECT_EQ(sql(db, "select value from meta where key='schema_version'"), "[('5',)]\n");
  EXPECT_EQ(sql(db, "select trial_id, epoch, train_loss, elapsed_s from epochs where trial_id <= 2 order by 1, 2"),
            epochs_before);
  // The backup is the file as it was: schema 1, the same rows.
  EXPECT_EQ(sql(db + ".schema1.bak", "select value from meta where key='schema_version'"), "[('1',)]\n");
  EXPECT_EQ(sql(db + ".schema1.bak", "select trial_id, epoch, train_loss, elapsed_s from epochs order by 1, 2"),
            epochs_before);
  EXPECT_TRUE(Store(db, StoreAccess::kReadOnly).migration_note().empty());  // once
  // Migrated and new databases have the same tables, column by column.
  { Store s(dir_.path("new.sqlite")); }
  for (const char* table : {"meta", "experiments", "trials", "epochs", "phases", "power_samples"}) {
    const std::string q = std::string("select * from pragma_table_info('") + table + "')";
    EXPECT_EQ(sql(db, q), sql(dir_.path("new.sqlite"), q)) << table;
  }
}

}  // namespace
}  // namespace balerbench
