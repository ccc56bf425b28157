// test_merge_cli.cpp: `balerbench merge` end to end: shards merged into the whole grid once, two
// systems side by side, SIGKILL during a merge, inputs never changed, concurrent merges into one output.
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
#include "tests/integration/sweep_cli_fixture.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

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
