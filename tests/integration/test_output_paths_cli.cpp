// test_output_paths_cli.cpp: where a command's outputs may go, end to end. An output never replaces a
// file of the results database (the database, its -wal, -shm or -journal, a side file): a report
// written over the write-ahead log of a run killed with kill -9 lost the trials that lived only there,
// and exited 0. An output never replaces one of the command's own inputs (the experiment file, the
// data, a trace). A report of a database whose trials sit only in a side file says so, and how to fold
// it in; report's CSV files never replace each other. A JSON file given as the database is said to be
// one, not a damaged database.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <set>
#include <string>

#include "harness/store/store.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// Two short trials (a second or two each on 2 cores).
json two_trials(const std::string& name = "w") {
  return json::parse(R"({
    "schema_version": 1, "name": ")" + name + R"(",
    "dataset": {"generator": {"kind": "cms", "rows": 2000, "seed": 1}},
    "model": {"name": "AE", "compression_ratio": 1.6},
    "sweep": {"batch_size": [256], "precision": ["fp32"], "epochs": [2], "repeats": 2},
    "energy": {"meters": ["cpu_estimate"], "sample_hz": 0, "cpu_tdp_w": 100}
  })");
}

class OutputPathsCli : public ::testing::Test {
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
  // The number of trials `report` finds in `db` (-1 when it cannot read them).
  int trials_in(const std::string& db) {
    const CommandResult r = bb("report --db " + db + " --table trials --format json");
    if (r.exit_code != 0) return -1;
    return static_cast<int>(json::parse(r.out.substr(r.out.find('{')))["tables"][0]["rows"].size());
  }
  TempDir dir_;
};

bool has(const CommandResult& r, const std::string& text) { return r.out.find(text) != std::string::npos; }

int count_of(const std::string& text, const std::string& part) {
  int n = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size())) ++n;
  return n;
}

// kill -9 during the second trial leaves the first only in w.sqlite-wal. Every output named by the
// write-ahead log, however spelled, is refused with exit 2 before anything is written (was: `report
// --format html --out w.sqlite-wal` wrote the page over it, exit 0, and the database became "an SQLite
// file with no tables"); the trial is still there after all of them.
TEST_F(OutputPathsCli, AnOutputOverTheDatabasesWriteAheadLogIsRefusedAndItsTrialKept) {
  // The second trial long (300 epochs), so that it is still training when it is killed: with two
  // short repeats the run could store both and close the database (checkpointing its log) before the
  // kill, once a repeat no longer waited for the thread choice's load sample.
  json j = two_trials();
  j["sweep"]["epochs"] = {2, 300};
  j["sweep"]["repeats"] = 1;
  write_text(dir_.path("exp.json"), j.dump());
  const auto r = sh(R"(
$B run exp.json --db w.sqlite --progress lines --tables none > run.txt 2>&1 & pid=$!
wait_for run.txt "== trial 2/2" || exit 1
kill -9 $pid; wait $pid
[ -s w.sqlite-wal ] && echo "the write-ahead log holds the trial"
cp w.sqlite-wal wal.before
mkdir sub; ln -s w.sqlite-wal page.html
try() { "$@" > out.txt 2>&1; echo "exit $?: $*"; cat out.txt; cmp -s w.sqlite-wal wal.before || echo "WAL CHANGED by $*"; }
try $B report --db w.sqlite --format html --out w.sqlite-wal
try $B report --db w.sqlite --format md --out sub/../w.sqlite-wal
try $B report --db w.sqlite --format latex --out page.html
try $B report --db w.sqlite --format json --out w.sqlite-shm
try $B report --db ./w.sqlite --format json --out w.sqlite.unstored-0123456789ab-1.sqlite
try $B run exp.json --db w.sqlite --html w.sqlite-wal --progress none --tables none
try $B run exp.json --db w.sqlite --influx-file sub/../w.sqlite-wal --progress none --tables none
try $B merge w.sqlite --out w.sqlite-wal --force
)");
  EXPECT_TRUE(has(r, "the write-ahead log holds the trial")) << r.out;
  EXPECT_FALSE(has(r, "WAL CHANGED")) << r.out;
  EXPECT_FALSE(has(r, "exit 0:")) << r.out;
  EXPECT_EQ(count_of(r.out, "exit 2:"), 8) << r.out;
  EXPECT_TRUE(has(r, "--out w.sqlite-wal: is the write-ahead log of the results database w.sqlite (its latest "
                     "trials may live only there); writing there would lose trials")) << r.out;
  EXPECT_TRUE(has(r, "--out page.html: is the write-ahead log")) << r.out;
  EXPECT_TRUE(has(r, "--out w.sqlite-shm: is the shared-memory index")) << r.out;
  EXPECT_TRUE(has(r, "is a side file of the results database ./w.sqlite")) << r.out;
  EXPECT_TRUE(has(r, "--html w.sqlite-wal: is the write-ahead log")) << r.out;
  EXPECT_TRUE(has(r, "--influx-file " + dir_.path("w.sqlite-wal") + ": is the write-ahead log")) << r.out;
  EXPECT_FALSE(fs::exists(dir_.path("w.sqlite.unstored-0123456789ab-1.sqlite")));
  EXPECT_EQ(trials_in("w.sqlite"), 1);
}

// An output never replaces another results database either, nor the -wal, -shm or -journal beside
// one, whichever command writes it (was: measure --json, report --out, replay --out and --profile-trace
// wrote over them and exited 0; a CSV folder named DB-shm made the database unreadable).
TEST_F(OutputPathsCli, AnOutputOverAnyResultsDatabaseOrItsSideFilesIsRefused) {
  write_text(dir_.path("exp.json"), two_trials().dump());
  ASSERT_EQ(bb("run exp.json --db a.sqlite --progress none --tables none").exit_code, 0);
  ASSERT_EQ(bb("merge a.sqlite --out other.sqlite").exit_code, 0);
  const auto r = sh(R"(
cp other.sqlite other.before
try() { "$@" > out.txt 2>&1; echo "exit $?: $*"; cat out.txt; cmp -s other.sqlite other.before || echo "CHANGED by $*"; }
try $B measure --json other.sqlite -- true
try $B measure --json other.sqlite-wal -- true
try $B report --db a.sqlite --table precision --out other.sqlite
try $B report --db a.sqlite --table precision --format csv --out other.sqlite-shm
try $B report --db a.sqlite --table precision --format latex --out other.sqlite-journal
try $B run exp.json --db a.sqlite --html other.sqlite --progress none --tables none
)");
  EXPECT_FALSE(has(r, "CHANGED")) << r.out;
  EXPECT_FALSE(has(r, "exit 0:")) << r.out;
  EXPECT_EQ(count_of(r.out, "exit 2:"), 6) << r.out;
  EXPECT_TRUE(has(r, "--json other.sqlite: is an SQLite database (a results database?): the output would replace it"))
      << r.out;
  EXPECT_TRUE(has(r, "--json other.sqlite-wal: is the wal file of the SQLite database other.sqlite")) << r.out;
  EXPECT_TRUE(has(r, "--out other.sqlite-shm: is the shm file of the SQLite database other.sqlite")) << r.out;
  EXPECT_FALSE(fs::exists(dir_.path("other.sqlite-shm")));
  EXPECT_FALSE(fs::exists(dir_.path("other.sqlite-wal")));
  EXPECT_EQ(trials_in("other.sqlite"), 2);
}

// An output named by an input of the same command is refused, exit 2, and the input is left as it
// was (was: `run base3.json --html base3.json` wrote the page over the experiment).
TEST_F(OutputPathsCli, AnOutputOverTheCommandsOwnInputIsRefused) {
  const std::string experiment = two_trials().dump();
  write_text(dir_.path("exp.json"), experiment);
  fs::create_directories(dir_.path("sub"));
  const auto html = bb("run exp.json --db r.sqlite --html exp.json --progress none --tables none");
  EXPECT_EQ(html.exit_code, 2) << html.out;
  EXPECT_TRUE(has(html, "--html exp.json: is the experiment file (exp.json), which this command reads")) << html.out;
  const auto db = bb("run exp.json --db sub/../exp.json --progress none --tables none");
  EXPECT_EQ(db.exit_code, 2) << db.out;
  EXPECT_TRUE(has(db, "--db sub/../exp.json: is the experiment file")) << db.out;
  const auto influx = bb("run exp.json --db r.sqlite --influx-file exp.json --progress none --tables none");
  EXPECT_EQ(influx.exit_code, 2) << influx.out;
  EXPECT_EQ(read_text(dir_.path("exp.json")), experiment);
  EXPECT_FALSE(fs::exists(dir_.path("r.sqlite"))) << "nothing is made for a run that cannot start";
  // A data file given to the experiment, and the page over it.
  ASSERT_EQ(bb("data generate --kind cms --rows 500 --out data.npz").exit_code, 0);
  json with_data = two_trials();
  with_data["dataset"] = {{"path", "data.npz"}};
  write_text(dir_.path("data.json"), with_data.dump());
  const std::string data_before = read_text(dir_.path("data.npz"));
  const auto data = bb("run data.json --db r.sqlite --html data.npz --progress none --tables none");
  EXPECT_EQ(data.exit_code, 2) << data.out;
  EXPECT_TRUE(has(data, "is the experiment's data file")) << data.out;
  EXPECT_EQ(read_text(dir_.path("data.npz")), data_before);
  // measure: --json over the wattmeter log it reads.
  write_text(dir_.path("watts.csv"), "timestamp,power_w\n");
  const auto measure = bb("measure --meters wattmeter --wattmeter-log watts.csv --json watts.csv -- true");
  EXPECT_EQ(measure.exit_code, 2) << measure.out;
  EXPECT_TRUE(has(measure, "--json watts.csv: is the wattmeter log")) << measure.out;
}

// `compress` encodes its config's input_path into --out's compressed.npz: the same file is refused
// before anything is read or written.
TEST_F(OutputPathsCli, CompressNeverWritesOverTheDataItEncodes) {
  fs::create_directories(dir_.path("o/compressed_output"));
  ASSERT_EQ(bb("data generate --kind cms --rows 500 --out o/compressed_output/compressed.npz").exit_code, 0);
  write_text(dir_.path("c.json"), R"({"input_path": "o/compressed_output/compressed.npz", "model_name": "AE",
                                      "compression_ratio": 1.6, "epochs": 1})");
  const std::string before = read_text(dir_.path("o/compressed_output/compressed.npz"));
  const auto r = bb("compress --config c.json --out o");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_TRUE(has(r, "is the data file (input_path")) << r.out;
  EXPECT_EQ(read_text(dir_.path("o/compressed_output/compressed.npz")), before);
}

// A JSON file (or any file that is not SQLite) given as the database is said to be what it is, and left
// as it is (was: "the file is damaged", "restore it from a copy", for a file that never was a database).
TEST_F(OutputPathsCli, AJsonFileGivenAsTheDatabaseIsSaidToBeOne) {
  write_text(dir_.path("exp.json"), two_trials().dump());
  write_text(dir_.path("other.json"), two_trials("other").dump());
  ASSERT_EQ(bb("data generate --kind cms --rows 500 --out data.npz").exit_code, 0);
  const std::string before = read_text(dir_.path("other.json"));
  for (const std::string& cmd : {"run exp.json --db other.json --progress none --tables none",
                                 "report --db other.json", "merge other.json --out m.sqlite"}) {
    const auto r = bb(cmd);
    EXPECT_EQ(r.exit_code, 2) << cmd << "\n" << r.out;
    EXPECT_TRUE(has(r, "other.json: is not an SQLite database (it holds JSON: an experiment or config file?); it "
                       "is left as it is (hint: give a results database")) << cmd << "\n" << r.out;
    EXPECT_FALSE(has(r, "damaged")) << r.out;
    EXPECT_FALSE(has(r, "restore it from a copy")) << r.out;
  }
  EXPECT_EQ(read_text(dir_.path("other.json")), before);
  const auto npz = bb("report --db data.npz");
  EXPECT_EQ(npz.exit_code, 2) << npz.out;
  EXPECT_TRUE(has(npz, "data.npz: is not an SQLite database (it is a ZIP file: an .npz data file?)")) << npz.out;
}

// A database whose only trial sits in a side file (a run found it locked): report says where the
// trial is and how to fold it in (was: "no trials stored yet"), and a report beside other trials notes it.
TEST_F(OutputPathsCli, ATrialOnlyInASideFileIsNamedByReport) {
  write_text(dir_.path("exp.json"), two_trials().dump());
  ASSERT_EQ(bb("run exp.json --db full.sqlite --progress none --tables none").exit_code, 0);
  { Store empty(dir_.path("r.sqlite")); }
  fs::copy_file(dir_.path("full.sqlite"), dir_.path("r.sqlite.unstored-0123456789ab-7.sqlite"));
  const auto r = bb("report --db r.sqlite");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_TRUE(has(r, "r.sqlite: no trials stored in the database itself; 1 side file beside it holds trials kept "
                     "aside while it was locked, which no report shows: r.sqlite.unstored-0123456789ab-7.sqlite")) << r.out;
  EXPECT_TRUE(has(r, "`balerbench merge r.sqlite r.sqlite.unstored-*.sqlite --out MERGED.sqlite`")) << r.out;
  EXPECT_FALSE(has(r, "no trials stored yet")) << r.out;
  fs::copy_file(dir_.path("full.sqlite"), dir_.path("full.sqlite.unstored-0123456789ab-7.sqlite"));
  const auto beside = bb("report --db full.sqlite --table trials");
  EXPECT_EQ(beside.exit_code, 0) << beside.out;
  EXPECT_TRUE(has(beside, "note: full.sqlite: 1 side file beside it holds trials")) << beside.out;
  // The hint works as written.
  const auto merged = sh("$B merge r.sqlite r.sqlite.unstored-*.sqlite --out MERGED.sqlite");
  EXPECT_EQ(merged.exit_code, 0) << merged.out;
  EXPECT_EQ(trials_in("MERGED.sqlite"), 2);
}

// Experiments whose names map to one file name (`%s%n` was written as _s_n-6776c337, the name of
// the other one): each gets files of its own, none replaced, each index naming its experiment.
TEST_F(OutputPathsCli, CsvFilesOfTwoExperimentsNeverReplaceEachOther) {
  write_text(dir_.path("exp.json"), two_trials().dump());
  ASSERT_EQ(bb("run exp.json --db w.sqlite --progress none --tables none").exit_code, 0);
  const std::set<std::string> names = {"%s%n", "_s_n-6776c337", "_s_n", "_s_n~6776c337"};
  {
    Store store(dir_.path("w.sqlite"));
    for (const std::string& name : names) {
      store.put_experiment(name, "exp.json", two_trials(name));
      for (TrialRecord t : store.trials("w")) {
        t.experiment = name;
        t.key = name + t.key;
        store.insert_trial(t);
      }
    }
  }
  const auto r = bb("report --db w.sqlite --format csv --out csv");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::set<std::string> files, indexed;
  for (const auto& e : fs::directory_iterator(dir_.path("csv"))) {
    const std::string f = e.path().filename().string();
    files.insert(f);
    if (f.size() > 12 && f.substr(f.size() - 12) == ".tables.json")
      indexed.insert(json::parse(read_text(e.path().string()))["experiment"].get<std::string>());
  }
  std::set<std::string> all = names;
  all.insert("w");
  EXPECT_EQ(indexed, all);
  EXPECT_EQ(count_of(r.out, "wrote "), static_cast<int>(files.size() - all.size())) << r.out;
}

}  // namespace
}  // namespace balerbench
