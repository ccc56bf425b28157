// test_sweep_cli.cpp: `balerbench run`, `report` and `merge` end to end:
// resume without duplicates, shards merged, SIGINT and SIGKILL in the middle
// of a trial, power limits set and restored through the fake NVML library on
// every exit path (its set log records each call), the simulated GPU, the
// power-limit optimiser in a real training run, and bad experiment files.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <thread>

#include "harness/store/store.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

json tiny_experiment() {
  return json::parse(R"({
    "schema_version": 1, "name": "tiny",
    "dataset": {"generator": {"kind": "cms", "rows": 2000, "seed": 1}},
    "model": {"name": "AE", "compression_ratio": 1.6},
    "training": {"test_size": 0.2},
    "sweep": {"batch_size": [256], "precision": ["fp32", "fp64"], "epochs": [3], "repeats": 2},
    "target": {"relative_error": 0.9},
    "energy": {"meters": ["cpu_estimate", "ram_estimate"], "sample_hz": 20, "cpu_tdp_w": 100},
    "cost": {"eta": [0, 0.5, 1], "max_power_w": 100}
  })");
}

// The second trial runs long enough to be interrupted (5,000 rows, 600 epochs).
json long_experiment() {
  json j = tiny_experiment();
  j["name"] = "long";
  j["dataset"]["generator"]["rows"] = 5000;
  j["sweep"] = {{"batch_size", {512}}, {"precision", {"fp32"}}, {"epochs", {2, 600}}, {"repeats", 1}};
  return j;
}

class SweepCli : public ::testing::Test {
 protected:
  std::string write_experiment(const json& j, const std::string& name = "exp.json") {
    write_text(dir_.path(name), j.dump(2));
    return dir_.path(name);
  }
  // Runs balerbench with `args` in the temp dir, with `env` prepended.
  CommandResult bb(const std::string& args, const std::string& env = "") {
    return run_command("cd " + dir_.root() + " && " + env + " " + balerbench_binary() + " " + args);
  }
  std::string fake_nvml_env(const std::string& extra_device = "") {
    write_text(dir_.path("nvml.json"),
               R"({"driver_version": "550.00", "devices": [{"name": "Fake H100", "uuid": "GPU-aaaa",
                   "power_w": 200, "power_limit_w": 300, "default_limit_w": 300, "min_limit_w": 100,
                   "max_limit_w": 300)" +
                   extra_device + "}]}");
    return "BALERBENCH_NVML_LIB=" + std::string(FAKE_NVML_LIB) + " FAKE_NVML_CONFIG=" + dir_.path("nvml.json") +
           " FAKE_NVML_SET_LOG=" + dir_.path("sets.log") + " FAKE_NVML_STATE=" + dir_.path("state.json") +
           " BALERBENCH_POWER_JOURNAL=" + dir_.path("journal.json");
  }
  std::vector<std::string> sets() const { return read_lines(dir_.path("sets.log")); }
  double state_limit_w() const { return json::parse(read_text(dir_.path("state.json")))["GPU-aaaa"].get<double>(); }
  // Starts a run in the background; returns its pid.
  long start_background(const std::string& args, const std::string& env, const std::string& log) {
    const auto r = run_command("cd " + dir_.root() + " && (" + env + " exec " + balerbench_binary() + " " + args +
                               " > " + log + " 2>&1 & echo $! > pid; wait $! ; echo $? > rc) > /dev/null 2>&1 &");
    EXPECT_EQ(r.exit_code, 0);
    for (int i = 0; i < 100 && !fs::exists(dir_.path("pid")); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return std::stol(read_text(dir_.path("pid")));
  }
  // Waits until `log` contains `text` (up to `seconds`).
  bool wait_for(const std::string& log, const std::string& text, double seconds) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < until) {
      if (fs::exists(log) && read_text(log).find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }
  int wait_exit(double seconds) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < until) {
      if (fs::exists(dir_.path("rc"))) {
        const std::string rc = read_text(dir_.path("rc"));
        if (!rc.empty() && rc.back() == '\n') return std::stoi(rc);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return -1;
  }
  void reset_background() {
    fs::remove(dir_.path("pid"));
    fs::remove(dir_.path("rc"));
  }
  TempDir dir_;
};

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
  EXPECT_NE(r.out.find("\n| fp32 | 2 |"), std::string::npos) << r.out;
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

  // Reports from the database only, in every format.
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
  r = bb("report --db db.sqlite --experiment nope");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("no experiment named 'nope'"), std::string::npos) << r.out;
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

// The GPU is lost mid-trial while the sweep holds its power limit at 250 W (the original is 300 W):
// the trial fails naming the GPU, the limit cannot be put back while the GPU does not answer, so the
// original stays in the journal with a warning, and the sweep goes on. When the GPU answers again,
// the next run puts 300 W back before anything else.
TEST_F(SweepCli, GpuLostWhileItsPowerLimitIsChangedKeepsTheOriginalUntilItCanBeRestored) {
  json j = long_experiment();
  j["sweep"] = {{"batch_size", {512}}, {"precision", {"fp32"}}, {"power_limit_w", {250, 200}}, {"epochs", {600}}};
  j["energy"] = {{"meters", {"nvml"}}, {"sample_hz", 20}};
  j["allow_power_limit_changes"] = true;
  const std::string exp = write_experiment(j);
  auto r = bb("run " + exp + " --db db.sqlite --progress none --tables none 2>&1",
              fake_nvml_env(", \"energy_counter\": true, \"lost_after_s\": 2"));
  EXPECT_EQ(r.exit_code, 3) << r.out;
  EXPECT_NE(r.out.find("gpu0 (Fake H100, GPU-aaaa) is lost (NVML_ERROR_GPU_IS_LOST)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the original stays in the power-limit journal"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("done: 2 ran (0 ok, 2 failed"), std::string::npos) << r.out;
  EXPECT_EQ(sets(), std::vector<std::string>{"GPU-aaaa 250000 0"});  // nothing could be set after the loss
  EXPECT_DOUBLE_EQ(state_limit_w(), 250);
  ASSERT_TRUE(fs::exists(dir_.path("journal.json")));
  EXPECT_EQ(json::parse(read_text(dir_.path("journal.json")))["gpus"][0]["original_w"], 300.0);
  const auto trials = Store(dir_.path("db.sqlite"), StoreAccess::kReadOnly).trials();
  ASSERT_EQ(trials.size(), 2u);
  EXPECT_EQ(trials[0].status, TrialStatus::kFailed);
  EXPECT_NE(trials[0].error.find("power-limit journal"), std::string::npos) << trials[0].error;
  // The GPU is back (a new process, no loss scripted): the journal is replayed first.
  r = bb("run " + exp + " --db db.sqlite --progress none --tables none", fake_nvml_env());
  EXPECT_NE(r.out.find("from the journal of an earlier run"), std::string::npos) << r.out;
  EXPECT_DOUBLE_EQ(state_limit_w(), 300);
  EXPECT_EQ(sets().at(1), "GPU-aaaa 300000 0");
}

// SIGKILL at any moment of `merge`: the output is absent or a complete database, never partial.
TEST_F(SweepCli, SigkillDuringMergeLeavesNoPartialOutput) {
  const std::string exp = write_experiment(tiny_experiment());
  ASSERT_EQ(bb("run " + exp + " --db s0.sqlite --progress none --tables none").exit_code, 0);
  const std::string merged = dir_.path("all.sqlite");
  for (const char* delay : {"0", "0.02", "0.05", "0.1", "0.15", "0.2", "0.3", "0.5"}) {
    for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(merged + suffix);
    run_command("cd " + dir_.root() + " && { " + balerbench_binary() +
                " merge s0.sqlite --out all.sqlite > /dev/null 2>&1 & p=$!; sleep " + delay +
                "; kill -9 $p 2>/dev/null; wait $p; } 2>/dev/null; true");
    if (!fs::exists(merged)) continue;  // absent: the kill came before the rename
    EXPECT_EQ(Store(merged, StoreAccess::kReadOnly).trials().size(), 4u) << "killed after " << delay << " s";
  }
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(merged + suffix);
  const auto r = bb("merge s0.sqlite --out all.sqlite");  // a stale .partial does not stop it
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(Store(merged, StoreAccess::kReadOnly).trials().size(), 4u);
}

TEST_F(SweepCli, ShardsMergeIntoTheWholeGridOnce) {
  json j = tiny_experiment();
  j["sweep"]["precision"] = {"fp32"};
  j["sweep"]["repeats"] = 3;  // 3 trials over 2 shards
  const std::string exp = write_experiment(j);
  auto r = bb("run " + exp + " --db s0.sqlite --shard 0/2 --progress none --tables none");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("2 in shard 0/2"), std::string::npos) << r.out;
  r = bb("run " + exp + " --db s1.sqlite --progress none --tables none",
         "SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_COUNT=2");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("1 in shard 1/2"), std::string::npos) << r.out;
  r = bb("merge s0.sqlite s1.sqlite s1.sqlite --out all.sqlite");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("3 trials (1 duplicates skipped)"), std::string::npos) << r.out;
  const auto trials = Store(dir_.path("all.sqlite"), StoreAccess::kReadOnly).trials();
  std::set<int64_t> indices;
  for (const auto& t : trials) indices.insert(t.grid_index);
  EXPECT_EQ(indices, (std::set<int64_t>{0, 1, 2}));
  EXPECT_FALSE(fs::exists(dir_.path("all.sqlite.partial")));
  // The merged database resumes the whole grid: nothing left to run.
  r = bb("run " + exp + " --db all.sqlite --dry-run");
  EXPECT_NE(r.out.find("3 already in all.sqlite, 0 to run (dry run"), std::string::npos) << r.out;
  r = bb("merge s0.sqlite --out all.sqlite");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("exists"), std::string::npos) << r.out;
}

TEST_F(SweepCli, SigintMidTrialKeepsFinishedTrialsAndResumes) {
  const std::string exp = write_experiment(long_experiment());
  const std::string log = dir_.path("run.log");
  const long pid = start_background("run " + exp + " --db db.sqlite --progress lines", "", log);
  ASSERT_TRUE(wait_for(log, "== trial 2/2", 60)) << read_text(log);
  ASSERT_TRUE(wait_for(log, "Epoch", 30)) << read_text(log);
  // While the run writes: a report and a merge read what is stored, a consistent snapshot.
  const auto during = bb("report --db db.sqlite --table trials --format json");
  EXPECT_EQ(during.exit_code, 0) << during.out;
  EXPECT_EQ(json::parse(during.out.substr(during.out.find('{')))["tables"][0]["rows"].size(), 1u) << during.out;
  const auto snapshot = bb("merge --out snapshot.sqlite db.sqlite");
  EXPECT_EQ(snapshot.exit_code, 0) << snapshot.out;
  EXPECT_NE(snapshot.out.find("db.sqlite: 1 trials copied"), std::string::npos) << snapshot.out;
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ASSERT_EQ(::kill(pid, SIGINT), 0);
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
  ASSERT_TRUE(wait_for(log, "== trial 2/2", 60)) << read_text(log);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
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

TEST_F(SweepCli, PowerLimitsAreSetReadBackAndRestoredAfterEveryTrial) {
  json j = tiny_experiment();
  j["sweep"] = {
      {"batch_size", {512}}, {"precision", {"fp32"}}, {"power_limit_w", {250, nullptr, 200}}, {"epochs", {2}}};
  j["energy"] = {{"meters", {"nvml"}}, {"sample_hz", 20}};
  j["allow_power_limit_changes"] = true;
  j["cost"] = {{"eta", {0.5}}};  // MaxPower from the GPU's maximum limit
  const std::string exp = write_experiment(j);
  auto r = bb("run " + exp + " --db db.sqlite --progress none --tables power_limit", fake_nvml_env());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(sets(), (std::vector<std::string>{"GPU-aaaa 250000 0", "GPU-aaaa 300000 0", "GPU-aaaa 200000 0",
                                              "GPU-aaaa 300000 0"}));
  EXPECT_DOUBLE_EQ(state_limit_w(), 300);
  EXPECT_FALSE(fs::exists(dir_.path("journal.json")));
  const auto trials = Store(dir_.path("db.sqlite"), StoreAccess::kReadOnly).trials();
  ASSERT_EQ(trials.size(), 3u);
  EXPECT_DOUBLE_EQ(*trials[0].enforced_power_limit_w, 250);
  EXPECT_FALSE(trials[1].enforced_power_limit_w.has_value());  // null: left as it was
  EXPECT_DOUBLE_EQ(*trials[2].enforced_power_limit_w, 200);
  EXPECT_DOUBLE_EQ(*trials[0].max_power_w, 300);
  EXPECT_EQ(trials[0].result["power_limits"][0]["restored_w"], 300.0);
  EXPECT_EQ(trials[0].provenance["gpus"][0]["uuid"], "GPU-aaaa");
  EXPECT_EQ(trials[0].provenance["nvidia_driver"], "550.00");
  EXPECT_EQ(trials[0].energy_kind, "measured");
  // A measured meter: every epoch's cumulative energy is stored with its ±, and each phase's memory.
  for (const auto& e : trials[0].epoch_rows) {
    ASSERT_TRUE(e.energy_pm_j) << "epoch " << e.epoch;
    EXPECT_GT(*e.energy_pm_j, 0.0);
  }
  EXPECT_GT(trials[0].result["memory"]["train"]["host_peak_rss_mib"].get<double>(), 1.0);
  for (const char* phase : {"train", "compress", "decompress"})  // the fake's default 512 MiB in use
    EXPECT_EQ(trials[0].result["memory"][phase]["gpu_memory_used_peak_mib"], 512.0) << phase;
  // T7: the fake driver samples no process, so none of the GPU's energy is the run's, beside its absolute figure.
  const json gpu = trials[0].result["energy"]["total"]["attribution"]["gpu"];
  EXPECT_EQ(gpu["attributable_j"], 0.0) << gpu.dump();
  EXPECT_GT(gpu["energy_j"].get<double>(), 0.0);
  EXPECT_NE(r.out.find("| 250 W |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Fake H100"), std::string::npos) << r.out;  // hardware named
}

TEST_F(SweepCli, WithoutPermissionTrialsAreSkippedWithTheReason) {
  json j = tiny_experiment();
  j["sweep"] = {{"batch_size", {512}}, {"precision", {"fp32"}}, {"power_limit_w", {200}}, {"epochs", {2}}};
  j["energy"] = {{"meters", {"nvml"}}};
  j["allow_power_limit_changes"] = true;
  const std::string exp = write_experiment(j);
  const auto r =
      bb("run " + exp + " --db db.sqlite --progress none --tables none", fake_nvml_env(R"(, "set_error": 4)"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("skipped: GPU GPU-aaaa: no permission"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("root or CAP_SYS_ADMIN"), std::string::npos) << r.out;
  const auto trials = Store(dir_.path("db.sqlite"), StoreAccess::kReadOnly).trials();
  ASSERT_EQ(trials.size(), 1u);
  EXPECT_EQ(trials[0].status, TrialStatus::kSkipped);
  EXPECT_EQ(sets(), (std::vector<std::string>{"GPU-aaaa 200000 4"}));  // refused: the limit never changed
}

TEST_F(SweepCli, SigintRestoresThePowerLimitAtOnce) {
  json j = long_experiment();
  j["sweep"]["epochs"] = {600};
  j["sweep"]["power_limit_w"] = {150};
  j["energy"] = {{"meters", {"nvml"}}};
  j["allow_power_limit_changes"] = true;
  const std::string exp = write_experiment(j);
  const std::string log = dir_.path("run.log");
  const long pid = start_background("run " + exp + " --db db.sqlite --progress lines", fake_nvml_env(), log);
  ASSERT_TRUE(wait_for(log, "Epoch", 60)) << read_text(log);
  EXPECT_DOUBLE_EQ(state_limit_w(), 150);
  ASSERT_EQ(::kill(pid, SIGINT), 0);
  EXPECT_EQ(wait_exit(30), 130) << read_text(log);
  EXPECT_DOUBLE_EQ(state_limit_w(), 300);
  EXPECT_NE(read_text(log).find("restored to 300 W (enforced 300 W) on the signal"), std::string::npos)
      << read_text(log);
  EXPECT_EQ(sets(), (std::vector<std::string>{"GPU-aaaa 150000 0", "GPU-aaaa 300000 0"}));
  EXPECT_FALSE(fs::exists(dir_.path("journal.json")));
}

TEST_F(SweepCli, KillMidTrialThenRestartRecoversTheOriginalLimit) {
  json j = long_experiment();
  j["sweep"]["epochs"] = {600};
  j["sweep"]["power_limit_w"] = {175};
  j["energy"] = {{"meters", {"nvml"}}};
  j["allow_power_limit_changes"] = true;
  const std::string exp = write_experiment(j);
  const std::string log = dir_.path("run.log");
  const std::string env = fake_nvml_env();
  const long pid = start_background("run " + exp + " --db db.sqlite --progress lines", env, log);
  ASSERT_TRUE(wait_for(log, "Epoch", 60)) << read_text(log);
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  EXPECT_EQ(wait_exit(30), 137);
  EXPECT_DOUBLE_EQ(state_limit_w(), 175);  // nobody could restore it
  ASSERT_TRUE(fs::exists(dir_.path("journal.json")));
  // The restart (any experiment) restores the limit from the journal before anything else.
  const std::string quick = write_experiment(tiny_experiment(), "quick.json");
  const auto r = bb("run " + quick + " --db other.sqlite --progress none --tables none", env);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("restored to 300 W (enforced 300 W) from the journal of an earlier run"), std::string::npos)
      << r.out;
  EXPECT_DOUBLE_EQ(state_limit_w(), 300);
  EXPECT_FALSE(fs::exists(dir_.path("journal.json")));
  EXPECT_EQ(sets(), (std::vector<std::string>{"GPU-aaaa 175000 0", "GPU-aaaa 300000 0"}));
}

TEST_F(SweepCli, SimulatedGpuPowerLimitSweepIsMarkedSimulated) {
  json j = tiny_experiment();
  j["sweep"] = {{"batch_size", {512}}, {"precision", {"fp32"}}, {"power_limit_w", {300, 150}}, {"epochs", {2}}};
  j["energy"] = {{"meters", {"simulated_gpu"}}, {"simulated_gpu", {{"load", 1.0}}}};
  j["allow_power_limit_changes"] = true;
  j["cost"] = {{"eta", {0.5}}};
  const std::string exp = write_experiment(j);
  const auto r = bb("run " + exp + " --db db.sqlite --progress none --tables power_limit",
                    "BALERBENCH_NVML_LIB=/nonexistent/libnvidia-ml.so.1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto trials = Store(dir_.path("db.sqlite"), StoreAccess::kReadOnly).trials();
  ASSERT_EQ(trials.size(), 2u);
  EXPECT_EQ(trials[0].energy_kind, "simulated");
  EXPECT_DOUBLE_EQ(*trials[1].enforced_power_limit_w, 150);
  EXPECT_DOUBLE_EQ(*trials[0].max_power_w, 300);  // the simulated GPU's maximum limit
  // At load 1 the simulated GPU draws 300 W uncapped and 150 W at the 150 W cap.
  const double p300 = *trials[0].train_energy_j / *trials[0].train_s;
  const double p150 = *trials[1].train_energy_j / *trials[1].train_s;
  EXPECT_NEAR(p300, 300, 3);
  EXPECT_NEAR(p150, 150, 2);
  EXPECT_NE(r.out.find("| simulated |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(SIMULATED)"), std::string::npos) << r.out;
}

TEST_F(SweepCli, OptimizerProfilesLimitsInsideOneTrainingRun) {
  json j = tiny_experiment();
  j["dataset"]["generator"]["rows"] = 5000;
  j["sweep"] = {{"batch_size", {512}}, {"precision", {"fp32"}}, {"epochs", {4}}};
  j["energy"] = {{"meters", {"nvml"}}};
  j["allow_power_limit_changes"] = true;
  j["power_limit_optimizer"] = {
      {"enabled", true}, {"wait_steps", 1}, {"warmup_steps", 2}, {"profile_steps", 3}, {"pl_step_w", 100}};
  const std::string exp = write_experiment(j);
  const auto r = bb("run " + exp + " --db db.sqlite --progress none --tables none", fake_nvml_env());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto trials = Store(dir_.path("db.sqlite"), StoreAccess::kReadOnly).trials();
  ASSERT_EQ(trials.size(), 1u);
  ASSERT_EQ(trials[0].status, TrialStatus::kOk) << trials[0].error;
  const json& o = trials[0].result["power_limit_optimizer"];
  EXPECT_EQ(o["state"], "done") << o.dump();
  EXPECT_EQ(o["profiles"].size(), 3u);  // 300, 200, 100 W
  EXPECT_TRUE(o["chosen_w"].is_number());
  EXPECT_DOUBLE_EQ(state_limit_w(), 300);  // restored after the trial
  const auto s = sets();
  ASSERT_GE(s.size(), 4u);
  EXPECT_EQ(s.front(), "GPU-aaaa 300000 0");
  EXPECT_EQ(s.back(), "GPU-aaaa 300000 0");
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
// cost.eta outside [0, 1], and a result that is not JSON.
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
  edit("update trials set result_json='{not json'");
  r = bb("report --db db.sqlite --table trials");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("column result_json holds text that is not JSON"), std::string::npos) << r.out;
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

TEST_F(SweepCli, TwoSystemsLiveSideBySideAndMergeKeepsBoth) {
  // Two OpenBLAS kernels stand for two machines: each is a system of its own.
  json j = tiny_experiment();
  j["sweep"]["precision"] = {"fp32"};
  j["sweep"]["epochs"] = {1};
  const std::string exp = write_experiment(j);
  const auto a = bb("run exp.json --db a.sqlite --progress none", "BALERBENCH_BLAS_KERNEL=Prescott");
  ASSERT_EQ(a.exit_code, 0) << a.out;
  const auto b = bb("run exp.json --db b.sqlite --progress none", "BALERBENCH_BLAS_KERNEL=Core2");
  ASSERT_EQ(b.exit_code, 0) << b.out;
  EXPECT_NE(a.out.find("OpenBLAS 0.3"), std::string::npos) << a.out;
  EXPECT_NE(a.out.find(" Prescott"), std::string::npos) << a.out;
  EXPECT_NE(b.out.find(" Core2"), std::string::npos) << b.out;
  // Resuming in another system's database runs everything: none of it ran here.
  const auto resume = bb("run exp.json --db a.sqlite --progress none --dry-run", "BALERBENCH_BLAS_KERNEL=Core2");
  EXPECT_NE(resume.out.find("0 already in a.sqlite, 2 to run"), std::string::npos) << resume.out;
  const auto merged = bb("merge --out m.sqlite a.sqlite b.sqlite");
  ASSERT_EQ(merged.exit_code, 0) << merged.out;
  EXPECT_NE(merged.out.find("a.sqlite: 2 trials copied, 0 already present"), std::string::npos) << merged.out;
  EXPECT_NE(merged.out.find("b.sqlite: 2 trials copied, 0 already present"), std::string::npos) << merged.out;
  const auto dup = bb("merge --out m2.sqlite m.sqlite b.sqlite");  // true duplicates still dropped
  EXPECT_NE(dup.out.find("b.sqlite: 0 trials copied, 2 already present"), std::string::npos) << dup.out;
  Store m(dir_.path("m.sqlite"), StoreAccess::kReadOnly);
  std::set<std::string> systems;
  for (const auto& t : m.trials("tiny", false, false)) {
    systems.insert(t.system_fingerprint);
    EXPECT_EQ(t.provenance["system_fingerprint"], t.system_fingerprint);
    EXPECT_EQ(t.provenance["system"]["blas"]["choice"]["decision"], "requested");
  }
  EXPECT_EQ(systems.size(), 2u);
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

TEST_F(SweepCli, TheKernelIsChosenOnceCheckedAndRecorded) {
  const auto sys = bb("system --json", "BALERBENCH_BLAS_KERNEL=Prescott");
  ASSERT_EQ(sys.exit_code, 0) << sys.out;
  const json s = json::parse(sys.out);  // a switch prints nothing: --json output stays one document
  if (s["blas"]["library"] != "OpenBLAS") GTEST_SKIP() << "the BLAS is not OpenBLAS";
  EXPECT_EQ(s["blas"]["core"], "Prescott");
  EXPECT_EQ(s["blas"]["choice"]["decision"], "requested");
  EXPECT_EQ(s["fingerprint"].get<std::string>().size(), 12u);
  EXPECT_EQ(s["env"]["BALERBENCH_BLAS_KERNEL"], "Prescott");
  // The commands' own output says so in one line.
  json j = tiny_experiment();
  j["sweep"]["precision"] = {"fp32"};
  j["sweep"]["repeats"] = 1;
  write_experiment(j);
  const auto run = bb("run exp.json --db r.sqlite --dry-run", "BALERBENCH_BLAS_KERNEL=Prescott");
  const auto line = run.out.find("BLAS: ");
  if (s["blas"]["choice"]["from"] != "Prescott") {
    ASSERT_NE(line, std::string::npos) << run.out;
    EXPECT_NE(run.out.find("as BALERBENCH_BLAS_KERNEL asks", line), std::string::npos) << run.out;
    EXPECT_EQ(run.out.find("BLAS: ", line + 1), std::string::npos) << run.out;
  }
  // A name OpenBLAS does not know: one line, no loop, the run goes on.
  const auto bogus = bb("system --json", "BALERBENCH_BLAS_KERNEL=NoSuchCore");
  ASSERT_EQ(bogus.exit_code, 0) << bogus.out;
  EXPECT_NE(bogus.out.find("does not know a kernel named NoSuchCore"), std::string::npos) << bogus.out;
  EXPECT_EQ(json::parse(bogus.out.substr(bogus.out.find('{')))["blas"]["choice"]["decision"], "check failed");
  // The user's own OPENBLAS_CORETYPE is kept.
  const json user = json::parse(bb("system --json", "OPENBLAS_CORETYPE=Core2").out);
  EXPECT_EQ(user["blas"]["core"], "Core2");
  EXPECT_EQ(user["blas"]["choice"]["decision"], "set by user");
  // A command under `measure` runs in the user's environment, not on balerbench's kernel.
  const auto measured = bb("measure -- sh -c 'echo CORETYPE=[$OPENBLAS_CORETYPE] CHOICE=[$BALERBENCH_BLAS_CHOICE]'",
                           "BALERBENCH_BLAS_KERNEL=Core2");
  EXPECT_NE(measured.out.find("CORETYPE=[] CHOICE=[]"), std::string::npos) << measured.out;
  const auto measured_user = bb("measure -- sh -c 'echo CORETYPE=[$OPENBLAS_CORETYPE]'",
                                "BALERBENCH_BLAS_KERNEL=Core2 OPENBLAS_CORETYPE=Nehalem");
  EXPECT_NE(measured_user.out.find("CORETYPE=[Nehalem]"), std::string::npos) << measured_user.out;
  // The text form names the kernel and the decision.
  const auto text = bb("system", "OPENBLAS_CORETYPE=Core2");
  EXPECT_NE(text.out.find("kernel Core2"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("set by user: OPENBLAS_CORETYPE=Core2 is set in the environment"), std::string::npos)
      << text.out;
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

// A database that an older balerbench wrote (schema 1), a foreign SQLite file and an empty file, as
// `report` and `merge` inputs: each is read or refused, and none changes.
TEST_F(SweepCli, ReportAndMergeNeverChangeTheirInputs) {
  auto bytes = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  fs::copy_file(source_dir() + "/tests/fixtures/store_v1.sqlite", dir_.path("old.sqlite"));
  write_text(dir_.path("empty.sqlite"), "");
  const std::string old_bytes = bytes(dir_.path("old.sqlite"));
  auto r = bb("report --db old.sqlite --table trials");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("read through a migration in memory from schema 1"), std::string::npos) << r.out;
  r = bb("merge --out m.sqlite old.sqlite");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("old.sqlite: 2 trials copied"), std::string::npos) << r.out;
  EXPECT_EQ(bytes(dir_.path("old.sqlite")), old_bytes);
  EXPECT_FALSE(fs::exists(dir_.path("old.sqlite.schema1.bak")));
  for (const std::string& cmd : {"report --db empty.sqlite", "merge --out m2.sqlite empty.sqlite"}) {
    r = bb(cmd);
    EXPECT_EQ(r.exit_code, 2) << cmd << ": " << r.out;
    EXPECT_NE(r.out.find("empty.sqlite: an empty file, not a results database"), std::string::npos) << r.out;
    EXPECT_EQ(fs::file_size(dir_.path("empty.sqlite")), 0u) << cmd;
  }
  EXPECT_FALSE(fs::exists(dir_.path("m2.sqlite")));
  if (python_has("sqlite3")) {
    ASSERT_EQ(run_command(python_binary() + " -c \"import sqlite3; c=sqlite3.connect('" + dir_.path("notes.sqlite") +
                          "'); c.execute('create table notes(x)'); c.commit()\"")
                  .exit_code,
              0);
    const std::string before = bytes(dir_.path("notes.sqlite"));
    for (const std::string& cmd : {"report --db notes.sqlite", "merge --out m3.sqlite notes.sqlite",
                                   "run exp.json --db notes.sqlite --progress none"}) {
      write_experiment(tiny_experiment());
      r = bb(cmd);
      EXPECT_EQ(r.exit_code, 2) << cmd << ": " << r.out;
      EXPECT_NE(r.out.find("not a balerbench results database (it is left as it is)"), std::string::npos) << r.out;
      EXPECT_EQ(bytes(dir_.path("notes.sqlite")), before) << cmd;  // not switched to WAL
    }
  }
  // The merged database is one whole file: no -wal beside it, and nothing temporary left.
  EXPECT_FALSE(fs::exists(dir_.path("m.sqlite-wal")));
  for (const auto& e : fs::directory_iterator(dir_.root()))
    EXPECT_EQ(e.path().filename().string().find(".partial"), std::string::npos) << e.path();
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

// Two merges into one --out at once: each writes its own temporary file, and OUT ends whole. Without
// --force the second to finish is refused (OUT appeared meanwhile); with it the last one wins.
TEST_F(SweepCli, ConcurrentMergesIntoOneOutLeaveItWhole) {
  fs::copy_file(source_dir() + "/tests/fixtures/store_v1.sqlite", dir_.path("a.sqlite"));
  for (const std::string force : {"", " --force"}) {
    for (int round = 0; round < 4; ++round) {
      if (force.empty()) fs::remove(dir_.path("out.sqlite"));
      const std::string one = balerbench_binary() + " merge --out out.sqlite a.sqlite" + force;
      const auto r = run_command("cd " + dir_.root() + " && { (" + one + " > m1.log 2>&1; echo $? > m1.rc) & (" + one +
                                 " > m2.log 2>&1; echo $? > m2.rc) & wait; }");
      ASSERT_EQ(r.exit_code, 0) << r.out;
      int ok = 0;
      for (const char* n : {"m1", "m2"}) {
        const int rc = std::stoi(read_text(dir_.path(std::string(n) + ".rc")));
        const std::string log = read_text(dir_.path(std::string(n) + ".log"));
        EXPECT_TRUE(rc == 0 || (force.empty() && rc == 2 && (log.find("appeared while this merge ran") !=
                                                                  std::string::npos ||
                                                              log.find(": exists") != std::string::npos)))
            << force << " round " << round << " rc " << rc << ": " << log;
        EXPECT_EQ(log.find("internal error"), std::string::npos) << log;
        ok += rc == 0;
      }
      EXPECT_GE(ok, 1);
      EXPECT_EQ(Store(dir_.path("out.sqlite"), StoreAccess::kReadOnly).trials().size(), 2u) << force << round;
      EXPECT_FALSE(fs::exists(dir_.path("out.sqlite-wal")));
      for (const auto& e : fs::directory_iterator(dir_.root()))
        EXPECT_EQ(e.path().filename().string().find(".partial"), std::string::npos) << e.path();
    }
  }
  // A folder as --out: refused before anything is written, even with --force.
  fs::create_directories(dir_.path("folder"));
  const auto r = bb("merge --out folder --force a.sqlite");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("--out folder: is a folder"), std::string::npos) << r.out;
  for (const auto& e : fs::directory_iterator(dir_.root()))
    EXPECT_EQ(e.path().filename().string().find(".partial"), std::string::npos) << e.path();
}

}  // namespace
}  // namespace balerbench
