// test_limits_cli.cpp: a sweep on a file system that fills up (a size-limited tmpfs, the small disk
// or quota a cluster job meets) ends with a clear message naming the database and exit code 4, keeps
// every trial it stored in a consistent database, and the same command resumes once there is room; a
// merge there says that nothing was merged.
// Mounting needs root and CAP_SYS_ADMIN; the test says so and skips where the machine does not allow
// it. The file-size limit (`ulimit -f`) is tested in test_io_errors_cli.cpp and test_sweep_cli.cpp.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>

#include "harness/store/store.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

using nlohmann::json;

const char* kExperiment = R"({
  "schema_version": 1, "name": "fills_disk",
  "dataset": {"generator": {"kind": "cms", "rows": 2000, "seed": 1}},
  "model": {"name": "AE", "compression_ratio": 1.6},
  "training": {"test_size": 0.2, "threads": 1},
  "sweep": {"batch_size": [256], "precision": ["fp32", "fp64"], "epochs": [3], "repeats": 2},
  "energy": {"meters": ["cpu_estimate", "ram_estimate"], "sample_hz": 0, "cpu_tdp_w": 100}
})";

class SmallFilesystem : public ::testing::Test {
 protected:
  void TearDown() override {
    if (mounted_) run_command("umount " + mount_point_);
  }
  // Mounts a tmpfs of `size_kib` at dir_/fs; "" on success, else why not.
  std::string mount_tmpfs(long size_kib) {
    if (geteuid() != 0) return "mounting a tmpfs needs root";
    mount_point_ = dir_.path("fs");
    mkdir(mount_point_.c_str(), 0755);
    const CommandResult r =
        run_command("mount -t tmpfs -o size=" + std::to_string(size_kib) + "k balerbench-test " + mount_point_);
    if (r.exit_code != 0) return "this machine does not allow mounting a tmpfs (" + r.out + ")";
    mounted_ = true;
    return "";
  }
  CommandResult run_sweep(const std::string& db) {
    return run_command("cd " + dir_.root() + " && " + balerbench_binary() + " run " + dir_.path("e.json") + " --db " +
                       db + " --progress none --tables none");
  }
  TempDir dir_;
  std::string mount_point_;
  bool mounted_ = false;
};

TEST_F(SmallFilesystem, AFullFilesystemStopsTheSweepWithAMessageAndItResumes) {
  write_text(dir_.path("e.json"), kExperiment);
  // A trial takes 30-60 KiB here (no power series: sample_hz 0), so one of these sizes holds some
  // of the 4 trials but not all; the first that does is used.
  CommandResult full;
  size_t stored = 0;
  long size_kib = 0;
  std::string db;
  for (const long kib : {192L, 256L, 320L, 384L}) {
    if (mounted_) {
      ASSERT_EQ(run_command("umount " + mount_point_).exit_code, 0);
      mounted_ = false;
    }
    if (const std::string why = mount_tmpfs(kib); !why.empty()) GTEST_SKIP() << why;
    db = mount_point_ + "/db.sqlite";
    full = run_sweep(db);
    stored = full.exit_code == 4 ? Store(db, StoreAccess::kReadOnly).trials().size() : 0;
    size_kib = kib;
    if (stored >= 1) break;
  }
  ASSERT_EQ(full.exit_code, 4) << "a " << size_kib << " KiB file system\n" << full.out;
  ASSERT_GE(stored, 1u) << full.out;
  EXPECT_LT(stored, 4u);
  EXPECT_NE(full.out.find(db + ": could not "), std::string::npos) << full.out;  // the database named
  EXPECT_NE(full.out.find("disk is full"), std::string::npos) << full.out;      // SQLite's SQLITE_FULL
  EXPECT_NE(full.out.find("stopped (a trial could not be stored)"), std::string::npos) << full.out;
  EXPECT_EQ(run_command("cd " + dir_.root() + " && " + balerbench_binary() + " report --db " + db +
                        " --table trials --format csv")
                .exit_code,
            0);

  // Room again: the same command resumes after the stored trials, and every trial is stored once.
  ASSERT_EQ(run_command("mount -o remount,size=64m " + mount_point_).exit_code, 0);
  const CommandResult resumed = run_sweep(db);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out;
  EXPECT_NE(resumed.out.find(std::to_string(stored) + " already in"), std::string::npos) << resumed.out;
  const auto trials = Store(db, StoreAccess::kReadOnly).trials();
  std::set<std::string> keys;
  for (const auto& t : trials) keys.insert(t.key);
  EXPECT_EQ(trials.size(), 4u);
  EXPECT_EQ(keys.size(), 4u);
}

// A merge into a file system too small for the merged database: exit 4, saying that nothing was
// merged and --out is as it was, and no file left behind (was: the sweep's "the trials stored so far
// are kept and the rest run", for a merge that runs nothing and keeps nothing).
TEST_F(SmallFilesystem, AMergeOnAFullFilesystemSaysNothingWasMerged) {
  write_text(dir_.path("e.json"), kExperiment);
  ASSERT_EQ(run_sweep(dir_.path("src.sqlite")).exit_code, 0);
  const long half_kib = static_cast<long>(std::filesystem::file_size(dir_.path("src.sqlite")) / 2048);
  if (const std::string why = mount_tmpfs(std::max(half_kib, 96L)); !why.empty()) GTEST_SKIP() << why;
  const CommandResult r = run_command(balerbench_binary() + " merge " + dir_.path("src.sqlite") + " --out " +
                                      mount_point_ + "/merged.sqlite");
  EXPECT_EQ(r.exit_code, 4) << r.out;
  EXPECT_NE(r.out.find(mount_point_ + "/merged.sqlite: the merged database could not be written ("), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("nothing was merged and " + mount_point_ + "/merged.sqlite is left as it was"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("make room and run the same merge again"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("the rest run"), std::string::npos) << r.out;
  EXPECT_TRUE(std::filesystem::is_empty(mount_point_)) << "the temporary is removed";
}

}  // namespace
}  // namespace balerbench
