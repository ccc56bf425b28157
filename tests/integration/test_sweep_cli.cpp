// test_sweep_cli.cpp: `balerbench run` end to end: resume without duplicates, the suggested report
// command, a full disk, a lost GPU, failed trials, bad experiment files and damaged stored data, the
// engine and compression-ratio axes, and comparable results (one experiment spelled two ways,
// interleaved repeats).
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "harness/store/store.h"
#include "tests/integration/sweep_cli_fixture.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

// The report command suggested at the end of a run can be pasted into a shell: a database path
// with a space and an experiment name with a quote are single-quoted, a plain word is left alone.
TEST_F(SweepCli, TheSuggestedReportCommandIsQuotedForTheShell) {
  json j = tiny_experiment();
  j["name"] = "Bob's run";
  j["sweep"]["precision"] = {"fp32"};
  j["sweep"]["repeats"] = 1;
  fs::create_directories(dir_.path("my results"));
  const auto r = bb("run " + write_experiment(j) + " --db 'my results/db.sqlite' --progress none --tables trials");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string suggested = "balerbench report --db 'my results/db.sqlite' --experiment 'Bob'\\''s run' --table NAME";
  const auto at = r.out.find(suggested);
  ASSERT_NE(at, std::string::npos) << r.out;
  const std::string args = r.out.substr(at + std::string("balerbench ").size(),
                                        suggested.size() - std::string("balerbench  --table NAME").size());
  const auto report = bb(args + " --table trials");
  ASSERT_EQ(report.exit_code, 0) << args << "\n" << report.out;
  EXPECT_NE(report.out.find("fp32"), std::string::npos) << report.out;
  j["name"] = "plain-name_1.0";
  const auto plain = bb("run " + write_experiment(j) + " --db db.sqlite --progress none --tables trials");
  ASSERT_EQ(plain.exit_code, 0) << plain.out;
  EXPECT_NE(plain.out.find("balerbench report --db db.sqlite --experiment plain-name_1.0 --table NAME"),
            std::string::npos)
      << plain.out;
}

TEST_F(SweepCli, RunStoresEveryTrialAndAResumeRunsNothingTwice) {
  const std::string exp = write_experiment(tiny_experiment());
  auto r = bb("run " + exp + " --db db.sqlite --progress none");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("4 trials in the grid, 0 already in db.sqlite, 4 to run"), std::string::npos) << r.out;
  // The precision table, in the terminal view (its precision column; the mode's description is in --wide).
  EXPECT_NE(r.out.find("### Training time and energy per precision mode"), std::string::npos) << r.out;
  // Its threads (the calibration's choice, 1 or 2 here), then n = 2 repeats.
  EXPECT_TRUE(r.out.find("\n| fp32 | 1 | 2 |") != std::string::npos || r.out.find("\n| fp32 | 2 | 2 |") != std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("Best configuration per eta"), std::string::npos) << r.out;
  {
    const Store s(dir_.path("db.sqlite"), StoreAccess::kReadOnly);
    const auto trials = s.trials("tiny");
    ASSERT_EQ(trials.size(), 4u);
    for (const auto& t : trials) {
      EXPECT_EQ(t.status, TrialStatus::kOk) << t.error;
      EXPECT_EQ(t.epoch_rows.size(), 3u);
      EXPECT_TRUE(t.train_energy_j.has_value());
      EXPECT_GT(*t.compress_s, 0);
      EXPECT_GT(*t.decompress_s, 0);
      EXPECT_EQ(t.energy_kind, "estimated");
      EXPECT_FALSE(t.samples.empty());
      EXPECT_TRUE(t.result["reconstruction"]["normalized_rmse"].is_number());
      // Cumulative energy and time grow epoch by epoch; TTA is the first epoch that met the target.
      for (std::size_t e = 1; e < t.epoch_rows.size(); ++e) {
        EXPECT_GT(t.epoch_rows[e].elapsed_s, t.epoch_rows[e - 1].elapsed_s);
        EXPECT_GE(*t.epoch_rows[e].energy_j, *t.epoch_rows[e - 1].energy_j);
      }
      ASSERT_TRUE(t.target_reached);  // 90% relative error: met at once
      EXPECT_EQ(*t.epochs_to_target, 1);
      EXPECT_DOUBLE_EQ(*t.tta_s, t.epoch_rows[0].elapsed_s);
      EXPECT_DOUBLE_EQ(*t.eta_j, *t.epoch_rows[0].energy_j);
      for (const char* key : {"host", "cpu_model", "libtorch", "git_revision", "meters", "carbon", "gpus"})
        EXPECT_TRUE(t.provenance.contains(key)) << key;
      EXPECT_EQ(t.spec["run_config"]["batch_size"], 256);
    }
  }
  r = bb("run " + exp + " --db db.sqlite --progress none --tables none");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("4 already in db.sqlite, 0 to run"), std::string::npos) << r.out;
  EXPECT_EQ(Store(dir_.path("db.sqlite"), StoreAccess::kReadOnly).trials().size(), 4u);
}

// Reports from the database only, in every format (a sweep of one repeat fills it).
TEST_F(SweepCli, ReportsReadTheDatabaseInEveryFormat) {
  json one_repeat = tiny_experiment();
  one_repeat["sweep"]["repeats"] = 1;
  auto r = bb("run " + write_experiment(one_repeat) + " --db db.sqlite --progress none --tables none");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  r = bb("report --db db.sqlite --table phases");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("| compress |"), std::string::npos) << r.out;
  r = bb("report --db db.sqlite --experiment tiny --table precision --format json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["tables"][0]["rows"].size(), 2u);
  r = bb("report --db db.sqlite --table all --format latex --out all.tex");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(read_text(dir_.path("all.tex")).find("\\begin{tabular}"), std::string::npos);
  r = bb("report --db db.sqlite --table complexity --format csv");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("en1,encoder,24 -> 200,5000,4800,9600,1228800,1229000"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find('#'), std::string::npos) << r.out;
  r = bb("report --db db.sqlite --experiment nope");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("no experiment named 'nope'"), std::string::npos) << r.out;
}

// CSV of several tables: on stdout, one block each after a '#' line naming it; with --out DIR, one
// file per table that the standard library's reader takes, titles and notes beside them.
TEST_F(SweepCli, CsvReportsOfSeveralTablesNameEachTable) {
  json one_repeat = tiny_experiment();
  one_repeat["sweep"]["repeats"] = 1;
  auto r = bb("run " + write_experiment(one_repeat) + " --db db.sqlite --progress none --tables none");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  // Several tables on stdout: one CSV block each after a '#' line naming it (was: refused, "N tables
  // selected"); every table as its own CSV file, titles and notes beside them, with --out DIR.
  r = bb("report --db db.sqlite --format csv");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.rfind("# experiment tiny, table ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("\n\n# experiment tiny, table complexity: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("en1,encoder,24 -> 200,5000,4800,9600,1228800,1229000"), std::string::npos) << r.out;
  r = bb("report --db db.sqlite --table all --format csv --out csv");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const json index = json::parse(read_text(dir_.path("csv/tiny.tables.json")));
  ASSERT_GE(index["tables"].size(), 4u);
  for (const auto& t : index["tables"]) {
    const std::string text = read_text(dir_.path("csv/" + t["file"].get<std::string>()));
    std::string header;
    for (std::size_t i = 0; i < t["columns"].size(); ++i) header += (i ? "," : "") + t["columns"][i].get<std::string>();
    EXPECT_EQ(text.substr(0, text.find('\n')), header) << t["file"];
  }
  if (python_has("csv")) {  // the standard library's reader takes every file's first line as its header
    r = run_command(python_binary() + " -c \"import csv,glob,sys; fs=glob.glob('" + dir_.path("csv") +
                    "/*.csv'); [next(csv.reader(open(f))) for f in fs]; print(len(fs))\"");
    EXPECT_EQ(r.exit_code, 0) << r.out;
    EXPECT_EQ(std::stoul(r.out), index["tables"].size()) << r.out;
  }
}

// The disk fills during a sweep (a file-size limit, SIGXFSZ ignored so writes fail with EFBIG as on a
// full disk): the trial that cannot be stored is a clear error with exit code 4, the database stays
// consistent, and the same command resumes once there is room.
TEST_F(SweepCli, FullDiskStopsTheSweepCleanlyAndItResumes) {
  const std::string exp = write_experiment(tiny_experiment());
  const auto full = run_command("cd " + dir_.root() + " && trap '' XFSZ && ulimit -f 160 && " + balerbench_binary() +
                                " run " + exp + " --db db.sqlite --progress none --tables none");
  ASSERT_EQ(full.exit_code, 4) << full.out;
  // The limit is met storing a trial, or claiming the next one before it runs.
  EXPECT_TRUE(full.out.find("could not store trial") != std::string::npos ||
              full.out.find("could not claim trial") != std::string::npos)
      << full.out;
  EXPECT_NE(full.out.find("hint: the disk may be full"), std::string::npos) << full.out;
  EXPECT_NE(full.out.find("stopped (a trial could not be stored)"), std::string::npos) << full.out;
  if (python_has("sqlite3")) {
    const auto check = run_command(python_binary() + " -c \"import sqlite3; print(sqlite3.connect('" +
                                   dir_.path("db.sqlite") + "').execute('PRAGMA integrity_check').fetchone()[0])\"");
    EXPECT_EQ(check.out, "ok\n");
  }
  const size_t stored = Store(dir_.path("db.sqlite"), StoreAccess::kReadOnly).trials().size();
  EXPECT_LT(stored, 4u);
  const auto r = bb("run " + exp + " --db db.sqlite --progress none --tables none");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find(std::to_string(stored) + " already in db.sqlite, " + std::to_string(4 - stored) + " to run"),
            std::string::npos)
      << r.out;
  const auto trials = Store(dir_.path("db.sqlite"), StoreAccess::kReadOnly).trials();
  ASSERT_EQ(trials.size(), 4u);
  std::set<std::string> keys;
  for (const auto& t : trials) keys.insert(t.key);
  EXPECT_EQ(keys.size(), 4u);
}

// The GPU falls off the bus mid-sweep (the fake NVML answers GPU_IS_LOST from 2 s on): the trial
// in flight fails with a message naming the GPU, and the sweep goes on to the next trial (which
// fails too, the GPU being gone) and ends with exit code 3.
TEST_F(SweepCli, GpuLostMidTrialFailsThatTrialAndTheSweepGoesOn) {
  json j = long_experiment();
  j["energy"] = {{"meters", {"nvml"}}, {"sample_hz", 20}};
  const auto r = bb("run " + write_experiment(j) + " --db db.sqlite --progress none --tables trials",
                    fake_nvml_env(", \"energy_counter\": true, \"lost_after_s\": 2"));
  EXPECT_EQ(r.exit_code, 3) << r.out;
  EXPECT_NE(r.out.find("gpu0 (Fake H100, GPU-aaaa) is lost (NVML_ERROR_GPU_IS_LOST)"), std::string::npos) << r.out;
  const auto trials = Store(dir_.path("db.sqlite"), StoreAccess::kReadOnly).trials();
  ASSERT_EQ(trials.size(), 2u);  // both stored: the sweep went on after the loss
  EXPECT_EQ(trials[1].status, TrialStatus::kFailed);
  EXPECT_NE(r.out.find("done: 2 ran"), std::string::npos) << r.out;
}

// The GPU is lost between two trials (the fake's lost_file appears while the second one cools down): the
// second trial fails naming the GPU as lost, as one lost mid-trial does (was: "GPU 0 () reports neither
// an energy counter nor power").
TEST_F(SweepCli, GpuLostBetweenTrialsIsNamedAsLost) {
  json j = tiny_experiment();
  j["sweep"] = {{"batch_size", {512}}, {"precision", {"fp32"}}, {"epochs", {2}}, {"repeats", 2}};
  j["energy"] = {{"meters", {"nvml"}}, {"sample_hz", 20}, {"cooldown_s", 4}};
  const std::string log = dir_.path("run.log");
  start_background("run " + write_experiment(j) + " --db db.sqlite --progress none --tables none",
                   fake_nvml_env(", \"lost_file\": \"" + dir_.path("lost") + "\""), log);
  ASSERT_TRUE(wait_for(log, "   ok:", 120)) << read_text(log);
  write_text(dir_.path("lost"), "");
  EXPECT_EQ(wait_exit(120), 3) << read_text(log);
  const auto trials = Store(dir_.path("db.sqlite"), StoreAccess::kReadOnly).trials();
  ASSERT_EQ(trials.size(), 2u);
  EXPECT_EQ(trials[0].status, TrialStatus::kOk);
  EXPECT_EQ(trials[1].status, TrialStatus::kFailed);
  EXPECT_NE(trials[1].error.find("gpu0 (Fake H100, GPU-aaaa) is lost (NVML_ERROR_GPU_IS_LOST)"), std::string::npos)
      << trials[1].error;
  EXPECT_EQ(read_text(log).find("reports neither"), std::string::npos) << read_text(log);
}

TEST_F(SweepCli, BadExperimentFilesExit2AndWriteNothing) {
  json j = tiny_experiment();
  j["sweep"]["precision"] = {"fp32", "fp8"};
  auto r = bb("run " + write_experiment(j) + " --db db.sqlite");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("/sweep/precision/1: invalid precision 'fp8'"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir_.path("db.sqlite")));
  write_text(dir_.path("broken.json"), "{\"schema_version\": 1,");
  r = bb("run broken.json --db db.sqlite");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("not valid JSON"), std::string::npos) << r.out;
  r = bb("run " + dir_.path("exp.json") + " --db db.sqlite --shard 3/3");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_FALSE(fs::exists(dir_.path("db.sqlite")));
  // A dataset file that does not exist: the trial fails, is recorded, and the sweep goes on (exit 3).
  json missing = tiny_experiment();
  missing["dataset"] = {{"path", "nope.npz"}};
  missing["sweep"]["precision"] = {"fp32"};
  missing["sweep"]["repeats"] = 1;
  r = bb("run " + write_experiment(missing, "missing.json") + " --db db.sqlite --tables none");
  EXPECT_EQ(r.exit_code, 2) << r.out;  // the dataset is loaded before the first trial: bad input
  EXPECT_NE(r.out.find("nope.npz"), std::string::npos) << r.out;
}

// Stored data a report cannot use is a clear error with exit code 2, never an internal error: a
// cost.eta outside [0, 1], text in a number's column, a time beyond the year 9999, and a result that
// is not JSON.
TEST_F(SweepCli, DamagedStoredDataIsAClearErrorInReports) {
  json j = tiny_experiment();
  j["sweep"]["precision"] = {"fp32"};
  j["sweep"]["repeats"] = 1;
  ASSERT_EQ(bb("run " + write_experiment(j) + " --db db.sqlite --progress none --tables none").exit_code, 0);
  if (!python_has("sqlite3")) GTEST_SKIP() << "python3 sqlite3 missing";
  const auto edit = [&](const std::string& sql) {
    const auto r = run_command(python_binary() + " -c \"import sqlite3; c=sqlite3.connect('" + dir_.path("db.sqlite") +
                               "'); c.execute(\\\"" + sql + "\\\"); c.commit()\"");
    ASSERT_EQ(r.exit_code, 0) << r.out;
  };
  edit("update experiments set spec_json=json_set(spec_json, '$.cost.eta', json('[0.5, 1.5]'))");
  auto r = bb("report --db db.sqlite --table cost");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("stored cost.eta holds 1.5, not a number in [0, 1]"), std::string::npos) << r.out;
  edit("update experiments set spec_json=json_set(spec_json, '$.cost.eta', json('[0.5]'))");
  edit("update trials set train_s='abc'");  // was read as 0 s
  r = bb("report --db db.sqlite --table trials");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("db.sqlite: column train_s holds the text 'abc', not a number"), std::string::npos) << r.out;
  edit("update trials set train_s=1, started_unix_s=1e300");  // was printed as the year -219246529
  r = bb("report --db db.sqlite --table trials");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("column started_unix_s holds 1e+300, not a time from 1970 to the year 9999"), std::string::npos)
      << r.out;
  edit("update trials set started_unix_s=1700000000");
  edit("update trials set result_json='{not json'");
  r = bb("report --db db.sqlite --table trials");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("column result_json holds text that is not JSON"), std::string::npos) << r.out;
}

// A learning rate that makes the losses NaN (lr 1e30) fails the trial with the reason, exit code 3
// (was: status ok, exit 0, and the precision table's ratios with no mark). A database an earlier
// version wrote, with such a trial stored as ok and its losses null, reads the same way in reports.
TEST_F(SweepCli, DivergedTrainingFailsTheTrialAndIsLeftOutOfTheTables) {
  json j = tiny_experiment();
  j["training"]["lr"] = 1e30;
  j["sweep"]["precision"] = {"fp32"};
  j["sweep"]["repeats"] = 1;
  auto r = bb("run " + write_experiment(j) + " --db diverged.sqlite --progress none --tables precision");
  EXPECT_EQ(r.exit_code, 3) << r.out;
  EXPECT_NE(r.out.find("training diverged: the training loss is"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("| fp32 |"), std::string::npos) << r.out;  // no row, so no ratio
  const auto stored = Store(dir_.path("diverged.sqlite"), StoreAccess::kReadOnly).trials();
  ASSERT_EQ(stored.size(), 1u);
  EXPECT_EQ(stored[0].status, TrialStatus::kFailed);

  // As an earlier balerbench stored it: fp64 ok, with its losses null.
  j = tiny_experiment();
  j["sweep"]["repeats"] = 1;
  r = bb("run " + write_experiment(j) + " --db old.sqlite --progress none --tables none");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  if (!python_has("sqlite3")) GTEST_SKIP() << "python3 sqlite3 missing";
  const auto edit = run_command(
      python_binary() + " -c \"import sqlite3; c=sqlite3.connect('" + dir_.path("old.sqlite") +
      "'); c.execute(\\\"update trials set result_json=json_set(result_json, '$.final_train_loss', json('null')) "
      "where precision='fp64'\\\"); c.execute(\\\"update epochs set train_loss=NULL, val_loss=NULL where trial_id in "
      "(select id from trials where precision='fp64')\\\"); c.commit()\"");
  ASSERT_EQ(edit.exit_code, 0) << edit.out;
  r = bb("report --db old.sqlite --table precision --wide");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("| fp32 |"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("| fp64 |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 failed and 0 skipped"), std::string::npos) << r.out;
  r = bb("report --db old.sqlite --table trials --wide");
  EXPECT_NE(r.out.find("training diverged: its last epoch's loss is not finite"), std::string::npos) << r.out;
}

// What every trial would refuse is refused before the database exists (docs/sweeps.md, "Before the
// first trial"), exit code 2: a test_size that leaves no training row, and a meter named in
// energy.meters that cannot run here (was: a database of failed trials, exit code 3).
TEST_F(SweepCli, DataAndMetersEveryTrialWouldRefuseAreRefusedBeforeTheDatabase) {
  json j = tiny_experiment();
  j["dataset"]["generator"]["rows"] = 1;
  auto r = bb("run " + write_experiment(j) + " --db r.sqlite --progress none");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("/training/test_size: test_size 0.2 leaves no training rows out of 1"), std::string::npos)
      << r.out;
  j = tiny_experiment();
  j["training"]["test_size"] = 0.9999;
  r = bb("run " + write_experiment(j) + " --db r.sqlite --progress none");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("test_size 0.9999 leaves no training rows out of 2000"), std::string::npos) << r.out;
  j = tiny_experiment();
  j["energy"]["meters"] = {"nvml"};
  const std::string env = fake_nvml_env();
  write_text(dir_.path("nvml.json"), R"({"init_error": 999, "devices": []})");  // nvmlInit fails
  r = bb("run " + write_experiment(j) + " --db r.sqlite --progress none", env);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("meter 'nvml' is not available"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("== trial"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir_.path("r.sqlite")));
}

TEST_F(SweepCli, FailedTrialIsRecordedAndTheSweepGoesOn) {
  json j = tiny_experiment();
  j["sweep"]["precision"] = {"amp_fp16", "fp32"};  // amp_fp16 needs CUDA: fails on the CPU
  j["sweep"]["repeats"] = 1;
  const auto r = bb("run " + write_experiment(j) + " --db db.sqlite --progress none --tables trials");
  if (r.out.find("ok: train") != std::string::npos && r.out.find("failed:") == std::string::npos)
    GTEST_SKIP() << "CUDA here: amp_fp16 runs";
  EXPECT_EQ(r.exit_code, 3) << r.out;
  EXPECT_NE(r.out.find("failed: "), std::string::npos) << r.out;
  const auto trials = Store(dir_.path("db.sqlite"), StoreAccess::kReadOnly).trials();
  ASSERT_EQ(trials.size(), 2u);
  EXPECT_EQ(trials[0].status, TrialStatus::kFailed);
  EXPECT_NE(trials[0].error.find("amp_fp16"), std::string::npos);
  EXPECT_EQ(trials[1].status, TrialStatus::kOk);
  // --retry-failed runs it again (and it fails again, replacing the old row, never duplicating it).
  const auto again =
      bb("run " + dir_.path("exp.json") + " --db db.sqlite --progress none --tables none --retry-failed");
  EXPECT_EQ(again.exit_code, 3) << again.out;
  EXPECT_EQ(Store(dir_.path("db.sqlite"), StoreAccess::kReadOnly).trials().size(), 2u);
}

// The engine as a sweep axis: each trial stores the engine that trained it (the column, the result
// and the provenance), and the tables keep the engines apart.
TEST_F(SweepCli, EngineAxisIsStoredPerTrialAndShownInTheTables) {
  json j = tiny_experiment();
  j["name"] = "engines";
  j["sweep"] = {{"batch_size", {256}}, {"precision", {"fp32"}}, {"engine", {"libtorch", "fused", "auto"}},
                {"epochs", {2}}, {"repeats", 1}};
  const auto r = bb("run " + write_experiment(j) + " --db db.sqlite --progress none --tables precision");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("bs=256 fp32 fused pl=- ep=2 #0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| engine |"), std::string::npos) << r.out;
  const auto trials = Store(dir_.path("db.sqlite"), StoreAccess::kReadOnly).trials("engines");
  ASSERT_EQ(trials.size(), 3u);
  std::multiset<std::string> engines;
  for (const auto& t : trials) {
    engines.insert(t.engine);
    EXPECT_EQ(t.result["engine"]["name"], t.engine);
    EXPECT_EQ(t.provenance["engine"]["name"], t.engine);
    EXPECT_TRUE(t.result["threads"].contains("source")) << t.result.dump();
  }
  EXPECT_EQ(engines, (std::multiset<std::string>{"fused", "fused", "libtorch"}));  // auto chose fused
  const auto table = bb("report --db db.sqlite --experiment engines --table precision --format json");
  ASSERT_EQ(table.exit_code, 0) << table.out;
  EXPECT_EQ(json::parse(table.out)["tables"][0]["rows"].size(), 2u);  // libtorch, and fused (2 trials)
}

// The compression ratio as a sweep axis: each trial trains its own latent size, and the precision
// table has a row per precision and ratio, each ratio against the FP32 row of its own ratio.
TEST_F(SweepCli, CompressionRatioAxisGivesARowPerPrecisionAndRatio) {
  json j = tiny_experiment();
  j["name"] = "ratios";
  j["model"].erase("compression_ratio");
  j["sweep"] = {{"compression_ratio", {1.6, 4}}, {"batch_size", {256}}, {"precision", {"fp32", "fp64"}},
                {"epochs", {2}}, {"repeats", 1}};
  const std::string exp = write_experiment(j);
  const auto dry = bb("run " + exp + " --db db.sqlite --dry-run");
  ASSERT_EQ(dry.exit_code, 0) << dry.out;
  EXPECT_NE(dry.out.find("grid: 2 compression ratios x 1 batch size x 2 precisions"), std::string::npos) << dry.out;
  EXPECT_NE(dry.out.find("compression ratios 1.6, 4 (/sweep/compression_ratio)"), std::string::npos) << dry.out;
  EXPECT_NE(dry.out.find("cr=4 bs=256 fp64 auto pl=- ep=2 #0"), std::string::npos) << dry.out;
  const auto r = bb("run " + exp + " --db db.sqlite --progress none --tables trials");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::map<double, int64_t> latent;  // ratio -> the latent size its trials trained
  for (const auto& t : Store(dir_.path("db.sqlite"), StoreAccess::kReadOnly).trials("ratios"))
    latent[t.spec["run_config"]["compression_ratio"].get<double>()] = t.result["model"]["latent"].get<int64_t>();
  EXPECT_EQ(latent, (std::map<double, int64_t>{{1.6, 15}, {4, 6}}));  // ceil(24 / ratio)
  const auto csv = bb("report --db db.sqlite --experiment ratios --table precision --format csv");
  ASSERT_EQ(csv.exit_code, 0) << csv.out;
  std::vector<std::string> lines;
  std::istringstream in(csv.out);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  ASSERT_EQ(lines.size(), 5u) << csv.out;  // the header, then two rows per precision
  EXPECT_EQ(lines[0].rfind("mode,precision,compression_ratio,latent,parameters,", 0), 0u) << lines[0];
  std::map<std::string, int> rows_per_precision;
  for (std::size_t i = 1; i < lines.size(); ++i) ++rows_per_precision[lines[i].substr(lines[i].find(',') + 1, 4)];
  EXPECT_EQ(rows_per_precision, (std::map<std::string, int>{{"fp32", 2}, {"fp64", 2}})) << csv.out;
  EXPECT_NE(lines[1].find(",fp32,1.6,15,"), std::string::npos) << lines[1];
  EXPECT_NE(lines[3].find(",fp32,4,6,"), std::string::npos) << lines[3];
}

// ---- comparable results: the system in the key, canonical data, interleaving, warm-ups ----

TEST_F(SweepCli, TheSameExperimentSpelledTwoWaysIsOneSetOfTrials) {
  json j = tiny_experiment();
  j["sweep"]["precision"] = {"fp32"};
  j["sweep"]["epochs"] = {1};
  ASSERT_EQ(bb("data generate --kind cms --rows 600 --out data.npz").exit_code, 0);
  j["dataset"] = {{"path", "data.npz"}};
  write_experiment(j, "tiny.json");
  const auto first = bb("run " + dir_.path("tiny.json") + " --db r.sqlite --progress none");
  ASSERT_EQ(first.exit_code, 0) << first.out;
  EXPECT_NE(first.out.find("2 to run"), std::string::npos) << first.out;
  fs::create_directories(dir_.path("elsewhere"));
  const auto again = run_command("cd " + dir_.path("elsewhere") + " && " + balerbench_binary() +
                                 " run ../tiny.json --db ../r.sqlite --progress none");
  ASSERT_EQ(again.exit_code, 0) << again.out;
  EXPECT_NE(again.out.find("2 already in ../r.sqlite, 0 to run"), std::string::npos) << again.out;
  // The same bytes under another name are the same data.
  fs::copy_file(dir_.path("data.npz"), dir_.path("elsewhere/copy.npz"));
  j["dataset"] = {{"path", "copy.npz"}};
  write_experiment(j, "elsewhere/tiny.json");
  const auto copy = bb("run elsewhere/tiny.json --db r.sqlite --progress none");
  EXPECT_NE(copy.out.find("0 to run"), std::string::npos) << copy.out;
}

TEST_F(SweepCli, RepeatsRunInterleavedAfterAWarmUpAndTheOrderIsRecorded) {
  json j = tiny_experiment();
  j["sweep"]["epochs"] = {1};
  j["sweep"]["warmup_trials"] = 1;
  write_experiment(j);
  const auto r = bb("run exp.json --db r.sqlite --progress none");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto at = [&](const std::string& s) { return r.out.find(s); };
  ASSERT_NE(at("trial 1/5 (warm-up, left out of statistics)"), std::string::npos) << r.out;
  EXPECT_LT(at("(grid #0): bs=256 fp32"), at("(grid #2): bs=256 fp64"));
  EXPECT_LT(at("(grid #2): bs=256 fp64"), at("(grid #1): bs=256 fp32"));  // repeat 1 after every repeat 0
  EXPECT_LT(at("(grid #1): bs=256 fp32"), at("(grid #3): bs=256 fp64"));
  Store s(dir_.path("r.sqlite"), StoreAccess::kReadOnly);
  const auto trials = s.trials("tiny", false, false);
  ASSERT_EQ(trials.size(), 5u);
  int warmups = 0;
  for (const auto& t : trials) {
    const json& d = t.result["run_design"];
    EXPECT_EQ(d["order"], "interleaved");
    EXPECT_EQ(d["of"], 5);
    warmups += d["warmup"].get<bool>();
    const json& dist = t.result["disturbance"];
    ASSERT_TRUE(dist.is_object()) << t.result.dump();
    EXPECT_GE(dist["other_cpu_cores"].get<double>(), 0);
    EXPECT_TRUE(dist["disturbed"].is_boolean());
    for (const char* w : {"train", "compress_decompress"}) {
      ASSERT_TRUE(dist["windows"][w].is_object()) << dist.dump();
      EXPECT_GE(dist["windows"][w]["other_cpu_cores"].get<double>(), 0);
      if (dist["windows"][w]["disturbed"].get<bool>()) EXPECT_TRUE(dist["disturbed"].get<bool>());  // any window flags the trial
    }
  }
  EXPECT_EQ(warmups, 1);
  // A finished grid runs no warm-up.
  const auto again = bb("run exp.json --db r.sqlite --progress none");
  EXPECT_EQ(again.out.find("(warm-up, left out of statistics)"), std::string::npos) << again.out;
}

}  // namespace
}  // namespace balerbench
