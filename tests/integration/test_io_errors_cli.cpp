// test_io_errors_cli.cpp: the files and streams around a command, end to end.
// A write that fails (a full stdout, a file-size limit) is an error with exit
// code 4, never exit 0 with half the output; a file-size limit is reported, not
// a kill by SIGXFSZ (but a command run by `measure` keeps the user's SIGXFSZ).
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "harness/store/store.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json tiny_experiment(const std::string& name = "tiny") {
  return json::parse(R"({
    "schema_version": 1, "name": ")" + name + R"(",
    "dataset": {"generator": {"kind": "cms", "rows": 2000, "seed": 1}},
    "model": {"name": "AE", "compression_ratio": 1.6},
    "training": {"test_size": 0.2},
    "sweep": {"batch_size": [256], "precision": ["fp32", "fp64"], "epochs": [2], "repeats": 3},
    "target": {"relative_error": 0.9},
    "energy": {"meters": ["ram_estimate"], "sample_hz": 20},
    "cost": {"eta": [0, 0.5, 1], "max_power_w": 100}
  })");
}

// Every regular file under `root`, relative to it.
std::set<std::string> files_under(const std::string& root) {
  std::set<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (e.is_regular_file()) out.insert(fs::relative(e.path(), root).string());
  return out;
}

bool has(const CommandResult& r, const std::string& text) { return r.out.find(text) != std::string::npos; }

// A file-size limit for the shell that runs balerbench (dash counts 512-byte blocks).
constexpr char kLimit[] = " ulimit -f 96 &&";
constexpr std::size_t kLimitBytes = 96 * 512;

class IoErrorsCli : public ::testing::Test {
 protected:
  // The suite's results database, made by the first test that needs one: six trials of a tiny sweep,
  // copied under two more experiment names so that a report outgrows kLimit (which leaves room for
  // SQLite's 32 KiB shared-memory file).
  static std::string db() {
    if (shared_) return shared_->path("db.sqlite");
    shared_ = new TempDir();
    write_text(shared_->path("exp.json"), tiny_experiment().dump());
    const auto r = run_command("cd " + shared_->root() + " && " + balerbench_binary() +
                               " run exp.json --db db.sqlite --progress none --tables none");
    EXPECT_EQ(r.exit_code, 0) << r.out;
    Store store(shared_->path("db.sqlite"));
    for (const std::string name : {"tiny2", "tiny3"}) {
      store.put_experiment(name, "exp.json", tiny_experiment(name));
      for (TrialRecord t : store.trials("tiny")) {
        t.experiment = name;
        t.key = name + t.key;
        store.insert_trial(t);
      }
    }
    return shared_->path("db.sqlite");
  }
  static void TearDownTestSuite() {
    delete shared_;
    shared_ = nullptr;
  }

  // `args` may redirect stdout; stderr is captured (the braces keep run_command's 2>&1 outside).
  CommandResult bb(const std::string& args, const std::string& prefix = "") {
    return run_command("cd " + dir_.root() + " && { " + prefix + " " + balerbench_binary() + " " + args + "; }");
  }
  std::string cms_config() {
    EXPECT_EQ(bb("data generate --kind cms --rows 1500 --seed 1 --out cms.npz").exit_code, 0);
    const json c = {{"input_path", dir_.path("cms.npz")}, {"model_name", "AE"}, {"compression_ratio", 1.6},
                    {"epochs", 2}, {"batch_size", 256}, {"progress", "none"}};
    write_text(dir_.path("c.json"), c.dump());
    return dir_.path("c.json");
  }
  // `r` is a clear error with exit code `code`, not an internal error, and says `text`.
  static void expect_error(const CommandResult& r, int code, const std::string& text) {
    EXPECT_EQ(r.exit_code, code) << r.out;
    EXPECT_TRUE(has(r, text)) << "expected '" << text << "' in: " << r.out;
    EXPECT_FALSE(has(r, "internal error")) << r.out;
  }

  static TempDir* shared_;
  TempDir dir_;
};

TempDir* IoErrorsCli::shared_ = nullptr;

// Before: `report > /dev/full` and a report cut by a file-size limit exited 0.
TEST_F(IoErrorsCli, StdoutThatCannotBeWrittenIsAnErrorWithExitCodeFour) {
  const auto r = bb("report --db " + db() + " > /dev/full");
  expect_error(r, 4, "balerbench: error: could not write the output to stdout: No space left on device");
  EXPECT_TRUE(has(r, "hint: the disk may be full or a file-size limit reached")) << r.out;
  expect_error(bb("report --db " + db() + " --format json > /dev/full"), 4, "could not write the output to stdout");
  expect_error(bb("system > /dev/full"), 4, "could not write the output to stdout");
  expect_error(bb("--version > /dev/full"), 4, "could not write the output to stdout");
  expect_error(bb("report --db " + db() + " --table bogus > /dev/full"), 2, "--table 'bogus': no such table");

  // A file-size limit (dash counts 512-byte blocks: 48 KiB, room for SQLite's 32 KiB shared-memory file),
  // with SIGXFSZ ignored by the shell as the tester did, and at its default.
  const std::string full = bb("report --db " + db() + " --format json 2>/dev/null").out;
  ASSERT_GT(full.size(), kLimitBytes) << "the report must outgrow the limit";
  for (const std::string trap : {"trap '' XFSZ &&", ""}) {
    const auto cut = bb("report --db " + db() + " --format json > r.json", trap + kLimit);
    expect_error(cut, 4, "could not write the output to stdout: File too large");
    EXPECT_LT(fs::file_size(dir_.path("r.json")), full.size());
  }
}

// Before: killed by SIGXFSZ (the shell's exit code 153), with no word of why.
TEST_F(IoErrorsCli, FileSizeLimitStopsASweepWithAMessageNotASignal) {
  write_text(dir_.path("exp.json"), tiny_experiment().dump());
  const auto r = bb("run exp.json --db db.sqlite --progress none --tables none", "ulimit -f 160 &&");
  expect_error(r, 4, "could not store trial");
  EXPECT_TRUE(has(r, "hint: the disk may be full")) << r.out;
  EXPECT_TRUE(has(r, "stopped (a trial could not be stored)")) << r.out;
}

// balerbench ignores SIGXFSZ for itself; the command it measures gets the disposition balerbench was
// started with (without the reset before exec it would inherit SIG_IGN, see EFBIG and exit 1).
TEST_F(IoErrorsCli, MeasuredCommandKeepsTheUsersFileSizeSignal) {
  const std::string cmd = "measure --meters ram_estimate -- sh -c 'head -c 100000 /dev/zero > big'";
  const auto killed = bb(cmd, "ulimit -f 8 &&");
  EXPECT_EQ(killed.exit_code, 128 + SIGXFSZ) << killed.out;
  const auto ignored = bb(cmd, "trap '' XFSZ && ulimit -f 8 &&");
  EXPECT_EQ(ignored.exit_code, 1) << ignored.out;  // head's own error: File too large
  EXPECT_TRUE(has(ignored, "File too large")) << ignored.out;
}

// A write that fails once the file is open: exit code 4, and no output nor temporary file left.
TEST_F(IoErrorsCli, FailedFileWritesLeaveNothingAndExitFour) {
  expect_error(bb("report --db " + db() + " --format json --out r.json", kLimit), 4, "r.json: write failed: File too large");
  expect_error(bb("data generate --kind cms --rows 20000 --out gen/x.npz", kLimit), 4,
               "gen/x.npz: cannot write the archive: File too large");
  EXPECT_EQ(files_under(dir_.root()), std::set<std::string>{}) << "left behind";
}

}  // namespace
}  // namespace balerbench
