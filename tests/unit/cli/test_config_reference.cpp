// test_config_reference.cpp: the configuration reference cannot drift from the parsers. Every key
// parse_run_config and parse_experiment read has an entry in base/config_key_docs.cpp, every entry
// is still read, and docs/configuration.md is exactly what `balerbench config reference` prints.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "harness/base/config_key_docs.h"
#include "harness/base/strict_json.h"
#include "harness/cli/commands.h"
#include "harness/sweep/experiment.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

using nlohmann::json;

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += "\n  " + x;
  return s;
}

std::vector<ConfigKeyDoc> without(std::vector<ConfigKeyDoc> docs, const std::string& path) {
  docs.erase(std::remove_if(docs.begin(), docs.end(), [&](const ConfigKeyDoc& d) { return d.path == path; }),
             docs.end());
  return docs;
}

TEST(ConfigReference, EveryKeyTheParsersReadIsDocumentedAndEveryEntryIsRead) {
  const cli::ConfigKeyProblems p = cli::check_config_key_docs(run_config_key_docs(), experiment_key_docs());
  EXPECT_TRUE(p.undocumented.empty()) << "keys read by a parser with no entry in harness/base/config_key_docs.cpp:"
                                      << joined(p.undocumented);
  EXPECT_TRUE(p.stale.empty()) << "entries in harness/base/config_key_docs.cpp that no parser reads any more:"
                               << joined(p.stale);
}

// The check itself can fail: an entry taken out is named as undocumented, a made-up one as stale.
TEST(ConfigReference, TheCheckNamesAMissingAndAStaleEntry) {
  std::vector<ConfigKeyDoc> run = without(run_config_key_docs(), "/energy/sample_hz");
  run.push_back({"/no_such_key", "made up", ""});
  const std::vector<ConfigKeyDoc> experiment = without(experiment_key_docs(), "/sweep/repeats");
  const cli::ConfigKeyProblems p = cli::check_config_key_docs(run, experiment);
  const auto has = [](const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
  };
  EXPECT_TRUE(has(p.undocumented, "run config /energy/sample_hz")) << joined(p.undocumented);
  EXPECT_TRUE(has(p.undocumented, "experiment /energy/sample_hz")) << joined(p.undocumented);
  EXPECT_TRUE(has(p.undocumented, "experiment /sweep/repeats")) << joined(p.undocumented);
  EXPECT_TRUE(has(p.stale, "run config /no_such_key")) << joined(p.stale);
}

// /energy/cooldown_s is read by parse_experiment by hand (it is not a run-config key), so the
// recording cannot see it: this checks that it is still read, and still means seconds before a trial.
TEST(ConfigReference, KeysReadOutsideTheStrictReaderAreStillRead) {
  std::vector<std::string> outside;
  for (const auto& d : experiment_key_docs())
    if (d.outside_reader) outside.push_back(d.path);
  ASSERT_EQ(outside, std::vector<std::string>{"/energy/cooldown_s"}) << "give each new one a check here";
  const json e = {{"schema_version", kExperimentSchemaVersion},
                  {"dataset", {{"generator", {{"kind", "cms"}, {"rows", 10}}}}},
                  {"model", {{"name", "AE"}, {"compression_ratio", 1.6}}},
                  {"sweep", json::object()},
                  {"energy", {{"cooldown_s", 2.5}}}};
  EXPECT_DOUBLE_EQ(parse_experiment(e, "e.json", "").cooldown_s, 2.5);
}

TEST(ConfigReference, CheckedInPageIsTheGeneratorsOutput) {
  const std::string page = read_text(source_dir() + "/docs/configuration.md");
  EXPECT_TRUE(page == cli::config_reference("markdown"))
      << "docs/configuration.md differs from `balerbench config reference`; regenerate it: scripts/docs.sh config";
}

TEST(ConfigReference, JsonFormatListsTheSameKeysWithParsedDefaults) {
  const json doc = json::parse(cli::config_reference("json"));
  ASSERT_EQ(doc["run_config"].size(), run_config_key_docs().size());
  ASSERT_EQ(doc["experiment"].size(), experiment_key_docs().size());
  for (const auto& row : doc["run_config"])
    if (row["path"] == "/epochs") EXPECT_EQ(row["default"], 5);
  EXPECT_THROW(cli::config_reference("yaml"), InputError);
}

// Recording is off unless asked for, and nests: the inner recording sees only its own keys.
TEST(ConfigReference, KeyRecordingIsOffByDefaultAndScoped) {
  EXPECT_EQ(KeyRecording::active(), nullptr);
  KeyRecording outer;
  {
    KeyRecording inner;
    const json section = {{"a", 1}};  // StrictReader keeps a reference: the JSON must outlive it
    StrictReader r(section, "x.json", "/s");
    (void)r.get("a");
    (void)r.get("b");
    EXPECT_EQ(inner.paths(), (std::set<std::string>{"/s/a", "/s/b"}));
  }
  EXPECT_TRUE(outer.paths().empty());
  EXPECT_EQ(KeyRecording::active(), &outer);
}

}  // namespace
}  // namespace balerbench
