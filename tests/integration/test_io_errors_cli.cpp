// test_io_errors_cli.cpp: the files and streams around a command, end to end.
// A write that fails (a full stdout, a file-size limit) is an error with exit
// code 4, never exit 0 with half the output; a file-size limit is reported, not
// a kill by SIGXFSZ (but a command run by `measure` keeps the user's SIGXFSZ);
// a path that cannot be written or read (under a regular file, a folder given
// as a file, no permission) is an InputError (exit 2) before any work, with
// nothing left behind; a stored experiment name never writes outside --out;
// `run` checks its options before the database or any trial.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

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
  // The limit is met storing a trial, or claiming the next one before it runs.
  EXPECT_EQ(r.exit_code, 4) << r.out;
  EXPECT_TRUE(has(r, "could not store trial") || has(r, "could not claim trial")) << r.out;
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

// Before: train trained first and then died with "internal error: filesystem error: cannot create
// directories"; data generate, report and measure --json gave the same internal error, and
// `report --out DB` overwrote the database with the report.
TEST_F(IoErrorsCli, OutputUnderARegularFileIsAnErrorBeforeAnyWork) {
  const std::string cfg = cms_config();
  write_text(dir_.path("afile"), "x");
  const auto before = files_under(dir_.root());
  const auto train = bb("train --config " + cfg + " --out afile");
  expect_error(train, 2, "afile/training: afile is not a folder");
  EXPECT_FALSE(has(train, "hazard")) << "nothing ran: " << train.out;
  for (const char* cmd : {"compress", "decompress"})
    expect_error(bb(std::string(cmd) + " --config " + cfg + " --out afile"), 2, "afile is not a folder");
  expect_error(bb("data generate --kind cms --rows 10 --out afile/x.npz"), 2, "afile/x.npz: afile is not a folder");
  expect_error(bb("report --db " + db() + " --out afile/r.md"), 2, "afile/r.md: afile is not a folder");
  expect_error(bb("report --db " + db() + " --format csv --out afile"), 2, "afile: is not a folder");
  expect_error(bb("report --db " + db() + " --format csv --out afile/sub"), 2, "afile/sub: afile is not a folder");
  expect_error(bb("report --db " + db() + " --out " + db()), 2, "is the results database itself");
  expect_error(bb("measure --meters ram_estimate --json afile/m.json -- true"), 2, "afile/m.json: afile is not a folder");
  EXPECT_EQ(files_under(dir_.root()), before) << "nothing written";
}

// A folder the user cannot write into: run as nobody (the tests run as root, who may write anywhere).
TEST_F(IoErrorsCli, UnwritableFolderIsAnErrorBeforeAnyWork) {
  std::string as_nobody;
  if (fs::exists("/usr/bin/setpriv")) as_nobody = "setpriv --reuid=nobody --regid=nogroup --clear-groups";
  else if (fs::exists("/usr/sbin/runuser")) as_nobody = "runuser -u nobody --";
  if (as_nobody.empty() || ::geteuid() != 0) GTEST_SKIP() << "needs root and setpriv or runuser";
  const std::string cfg = cms_config();
  fs::create_directories(dir_.path("ro"));
  fs::permissions(dir_.path("ro"), fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                       fs::perms::others_read | fs::perms::others_exec);
  const auto bb_nobody = [&](const std::string& args) {
    return run_command("cd " + dir_.root() + " && HOME=" + dir_.root() + " " + as_nobody + " " +
                       balerbench_binary() + " " + args);
  };
  expect_error(bb_nobody("train --config " + cfg + " --out ro/out"), 2, "ro/out/training: cannot write into ro");
  expect_error(bb_nobody("data generate --kind cms --rows 10 --out ro/x.npz"), 2, "ro/x.npz: cannot write into ro");
  expect_error(bb_nobody("report --db " + db() + " --out ro/r.md"), 2, "ro/r.md: cannot write into ro");
  expect_error(bb_nobody("measure --meters ram_estimate --json ro/m.json -- true"), 2, "cannot write into ro");
  EXPECT_TRUE(fs::is_empty(dir_.path("ro")));
}

// Before: `run .` and `train --config .` were internal errors (a stream reading a folder throws).
TEST_F(IoErrorsCli, FolderGivenAsAnInputFileIsAnInputError) {
  const std::string cfg = cms_config();
  fs::create_directories(dir_.path("folder"));
  expect_error(bb("run ."), 2, ".: is a folder (experiment file expected)");
  expect_error(bb("run . --dry-run"), 2, "is a folder (experiment file expected)");
  expect_error(bb("train --config ."), 2, ".: is a folder (config file expected)");
  expect_error(bb("data info folder"), 2, "folder: is a folder");
  expect_error(bb("measure --meters wattmeter --wattmeter-log folder -- true"), 2, "is a folder, not a wattmeter log");
  expect_error(bb("wattmeter-energy --log folder --start 0 --end 1"), 2, "folder: is a folder (wattmeter log expected)");
  fs::create_directories(dir_.path("out/training/model.pt"));
  expect_error(bb("compress --config " + cfg + " --out out"), 2, "model.pt: is a folder (model file expected)");
  // A data path that is a folder, in a dry run too: before the database exists.
  json ex = tiny_experiment();
  ex["dataset"] = {{"path", "folder"}};
  write_text(dir_.path("exp.json"), ex.dump());
  for (const char* dry : {" --dry-run", ""})
    expect_error(bb(std::string("run exp.json --db db.sqlite --progress none") + dry), 2, "/dataset/path");
  EXPECT_FALSE(fs::exists(dir_.path("db.sqlite")));
}

// Before: `--tables bogus` failed after the whole sweep had run; a port in use or an --influx-file
// under a regular file failed after the database was created; --db under a regular file was an
// internal error.
TEST_F(IoErrorsCli, RunChecksItsOptionsBeforeTheDatabaseOrAnyTrial) {
  write_text(dir_.path("exp.json"), tiny_experiment().dump());
  write_text(dir_.path("afile"), "x");
  const std::string run = "run exp.json --db db.sqlite --progress none ";
  const auto tables = bb(run + "--tables precision,bogus");
  expect_error(tables, 2, "--tables 'bogus': no such table");
  EXPECT_FALSE(has(tables, "== trial")) << tables.out;
  expect_error(bb(run + "--tables bogus --dry-run"), 2, "--tables 'bogus'");
  expect_error(bb(run + "--influx-file afile/points.lp"), 2, "afile/points.lp");
  expect_error(bb("run exp.json --db afile/db.sqlite --progress none"), 2, "afile/db.sqlite: afile is not a folder");
  // A port in use: held by this test's own listening socket.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const auto port = bb(run + "--prometheus-port " + std::to_string(ntohs(a.sin_port)));
  ::close(fd);
  expect_error(port, 2, "port in use");
  EXPECT_FALSE(fs::exists(dir_.path("db.sqlite"))) << "no database for a run that cannot start";
  EXPECT_EQ(files_under(dir_.root()), (std::set<std::string>{"afile", "exp.json"}));
}

// A database that an older balerbench or a merge wrote may hold names that are not file names: report's
// CSV files stay in --out whatever the experiment is called.
TEST_F(IoErrorsCli, StoredNamesNeverWriteOutsideTheReportFolder) {
  const std::string db_path = dir_.path("names.sqlite");
  {
    const Store from(db(), StoreAccess::kReadOnly);
    Store to(db_path);
    for (const std::string name : {"../../escaped", "a/b", ".."}) {
      to.put_experiment(name, "exp.json", tiny_experiment());
      for (TrialRecord t : from.trials("tiny")) {
        t.experiment = name;
        t.key = name + t.key;
        to.insert_trial(t);
      }
    }
  }
  const std::string out = dir_.path("x/y/rep");
  const auto r = bb("report --db " + db_path + " --format csv --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  for (const auto& f : files_under(dir_.root()))
    if (f.rfind("names.sqlite", 0) != 0) EXPECT_EQ(f.rfind("x/y/rep/", 0), 0u) << f << " is outside --out";
  std::set<std::string> experiments;
  for (const auto& f : files_under(out)) {
    EXPECT_EQ(f.find('/'), std::string::npos) << f << " is in a subfolder of --out";
    EXPECT_NE(f.front(), '.') << f;
    if (f.size() > 12 && f.substr(f.size() - 12) == ".tables.json")
      experiments.insert(json::parse(read_text(out + "/" + f))["experiment"].get<std::string>());
  }
  // One index per experiment, each naming the stored name itself for the reader.
  EXPECT_EQ(experiments, (std::set<std::string>{"../../escaped", "a/b", ".."}));
}

// An output named by a device, a pipe or a link: a device or pipe is refused (an output is written
// beside its target and renamed into place, which would replace the device: /dev/null, run as root),
// and a link keeps pointing where it did, at the new content.
TEST_F(IoErrorsCli, OutputsNeverReplaceADeviceAPipeOrALink) {
  ASSERT_EQ(run_command("mkfifo " + dir_.path("fifo")).exit_code, 0);
  std::vector<std::string> specials = {"fifo"};
  if (::geteuid() == 0 && run_command("mknod -m 666 " + dir_.path("null") + " c 1 3").exit_code == 0)
    specials.push_back("null");  // a copy of /dev/null
  const std::string config = cms_config();
  for (const std::string& special : specials) {
    for (const std::string& cmd :
         {"report --db " + db() + " --out " + special, "data generate --kind cms --rows 100 --force --out " + special,
          "measure --meters ram_estimate --json " + special + " -- true",
          "train --config " + config + " --out o --profile --profile-trace " + special,
          "train --config " + config + " --out o --influx-file " + special}) {
      expect_error(bb(cmd), 2, special + ": is not a regular file");
      EXPECT_FALSE(fs::is_regular_file(dir_.path(special))) << cmd;
    }
  }
  EXPECT_TRUE(fs::is_fifo(dir_.path("fifo")));
  write_text(dir_.path("target.md"), "old");
  fs::create_symlink("target.md", dir_.path("link.md"));
  ASSERT_EQ(bb("report --db " + db() + " --table trials --out link.md").exit_code, 0);
  EXPECT_TRUE(fs::is_symlink(dir_.path("link.md")));
  EXPECT_NE(read_text(dir_.path("target.md")), "old");
}

// An empty path (an unset shell variable) is refused before any work: `--db ''` would be SQLite's
// temporary database, every result thrown away at exit.
TEST_F(IoErrorsCli, EmptyPathsAreRefusedBeforeAnyWork) {
  write_text(dir_.path("exp.json"), tiny_experiment().dump());
  const std::string config = cms_config();
  const auto before = files_under(dir_.root());
  for (const std::string& cmd :
       std::vector<std::string>{"run exp.json --db '' --progress none", "report --db ''", "report --db " + db() + " --out ''",
        "merge " + db() + " --out ''", std::string("data generate --kind cms --rows 100 --out ''"),
        std::string("measure --json '' -- true"), "train --config " + config + " --out ''",
        "train --config " + config + " --set input_path= --out o2"}) {
    const auto r = bb(cmd);
    EXPECT_EQ(r.exit_code, 2) << cmd << ": " << r.out;
    EXPECT_FALSE(has(r, "internal error")) << r.out;
  }
  EXPECT_EQ(files_under(dir_.root()), before);
}

// An emissions.csv that is not balerbench's, in the output folder: refused before training, with the
// folder as it was (was: refused after training, with model.pt and the other files already replaced).
TEST_F(IoErrorsCli, AForeignEmissionsCsvIsRefusedBeforeAnyWork) {
  const std::string config = cms_config();
  fs::create_directories(dir_.path("o/training"));
  write_text(dir_.path("o/training/emissions.csv"), "a,b,c\n1,2,3\n");
  expect_error(bb("train --config " + config + " --out o"), 2, "emissions.csv: exists with other columns");
  EXPECT_EQ(files_under(dir_.path("o")), std::set<std::string>{"training/emissions.csv"});
}

// Data larger than the machine's memory is the user's request, said as such: exit code 2.
TEST_F(IoErrorsCli, DataLargerThanMemoryIsAClearError) {
  const auto r = bb("data generate --kind cfd --rows 1000000 --height 65536 --width 65536 --out huge.npz");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  // Said before any is taken, counted without overflow.
  EXPECT_TRUE(has(r, "1000000 frames need 6.87e+07 GB for 4.29e+15 values (float64, 2 copies)")) << r.out;
  EXPECT_FALSE(has(r, "internal error")) << r.out;
  EXPECT_FALSE(fs::exists(dir_.path("huge.npz")));
}

}  // namespace
}  // namespace balerbench
