// test_codecs_cli.cpp: `balerbench codecs` after `train`, and the codec comparison in a sweep with
// `report --table codecs`, end to end: the table and the JSON say the same, Baler's decoder bytes are
// the files `train` wrote, and bad input fails before anything is written. The codecs expected are
// the registry's (codecs/codec_registry.h), which the binary shares with this program.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "harness/codecs/codec_registry.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// Baler, then every codec of the registry: the rows of a comparison.
std::vector<std::string> baler_and_codecs() {
  std::vector<std::string> names = {"baler"};
  for (const std::string& n : codec_names()) names.push_back(n);
  return names;
}

class CodecsCli : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(bb("data generate --kind cms --rows 2000 --seed 4 --out " + dir.path("cms.npz")).exit_code, 0);
    const json j = {{"input_path", dir.path("cms.npz")}, {"model_name", "AE"}, {"compression_ratio", 1.6},
                    {"epochs", 3}, {"batch_size", 256}, {"progress", "none"}, {"threads", 1},
                    {"energy", {{"meters", {"cpu_estimate", "ram_estimate"}}, {"cpu_tdp_w", 100}}},
                    {"codecs", {{"min_window_s", 0.02}, {"uses", {1, 10}}}}};
    write_text(dir.path("c.json"), j.dump());
  }
  CommandResult bb(const std::string& args) { return run_command(balerbench_binary() + " " + args); }
  std::string cfg() const { return dir.path("c.json"); }
  TempDir dir;
};

TEST_F(CodecsCli, AfterTrainTheTableAndTheJsonAgreeAndTheDecoderCountsExactly) {
  const std::string out = dir.path("out");
  ASSERT_EQ(bb("train --config " + cfg() + " --out " + out).exit_code, 0);
  const auto j = bb("codecs --config " + cfg() + " --out " + out + " --json");
  ASSERT_EQ(j.exit_code, 0) << j.out;
  const json r = json::parse(j.out);
  const json& cmp = r["comparison"];
  ASSERT_EQ(cmp["codecs"].size(), baler_and_codecs().size()) << cmp.dump(1);
  const json& baler = cmp["codecs"][0];
  EXPECT_EQ(baler["codec"], "baler");
  const int64_t model = static_cast<int64_t>(fs::file_size(out + "/training/model.pt"));
  const int64_t norm = static_cast<int64_t>(fs::file_size(out + "/training/normalization_features.npy"));
  EXPECT_EQ(baler["model_bytes"], model);
  EXPECT_EQ(baler["normalization_bytes"], norm);
  EXPECT_EQ(baler["decoder_bytes"], model + norm);
  const double original = cmp["original_bytes"].get<double>();
  EXPECT_DOUBLE_EQ(baler["ratio_with_decoder"].get<double>(),
                   original / (baler["compressed_bytes"].get<double>() + static_cast<double>(model + norm)));
  // The training report's time and energy, spread over 1 and 10 uses.
  const json train = json::parse(read_text(out + "/training/training_report.json"));
  EXPECT_DOUBLE_EQ(baler["training"]["duration_s"].get<double>(), train["train_s"].get<double>());
  EXPECT_TRUE(baler["training"]["energy_j"].is_number());
  EXPECT_EQ(cmp["basis"], "energy");
  ASSERT_EQ(baler["amortised"].size(), 2u);
  EXPECT_GT(baler["amortised"][0]["j_per_mb"].get<double>(), baler["amortised"][1]["j_per_mb"].get<double>());
  // ZFP at Baler's error, every element within it.
  for (const json& row : cmp["codecs"])
    if (row["codec"] == "zfp_accuracy") {
      EXPECT_DOUBLE_EQ(row["tolerance"].get<double>(), baler["error"]["max_abs"].get<double>());
      EXPECT_TRUE(row["bound_held"].get<bool>());
    }
  // The report file holds the same comparison, with its energy windows.
  const json file = json::parse(read_text(out + "/codecs/codecs_report.json"));
  EXPECT_EQ(file["comparison"]["codecs"].size(), baler_and_codecs().size());
  EXPECT_TRUE(fs::exists(out + "/codecs/energy_report.json"));
  const json energy = json::parse(read_text(out + "/codecs/energy_report.json"));
  std::set<std::string> phases;
  for (const json& p : energy["phases"]) phases.insert(p["phase"].get<std::string>());
  for (const std::string& codec : baler_and_codecs())
    for (const char* d : {"compress", "decompress"})
      EXPECT_TRUE(phases.count("codecs:" + codec + ":" + d)) << codec << " " << d;
  // The printed table.
  const auto text = bb("codecs --config " + cfg() + " --out " + out);
  ASSERT_EQ(text.exit_code, 0) << text.out;
  for (const std::string& codec : baler_and_codecs())
    EXPECT_NE(text.out.find("| " + codec + " |"), std::string::npos) << codec << "\n" << text.out;
  for (const char* s : {"Baler J/MB, training over 10", "codecs/codecs_report.json"})
    EXPECT_NE(text.out.find(s), std::string::npos) << s << "\n" << text.out;
}

TEST_F(CodecsCli, BadInputFailsBeforeAnythingIsWritten) {
  const std::string out = dir.path("out");
  const auto before = bb("codecs --config " + cfg() + " --out " + out);
  EXPECT_EQ(before.exit_code, 2) << before.out;
  EXPECT_NE(before.out.find("no trained model"), std::string::npos) << before.out;
  EXPECT_NE(before.out.find("hint: run `balerbench train`"), std::string::npos) << before.out;
  EXPECT_FALSE(fs::exists(out + "/codecs/codecs_report.json"));
  for (const std::string set : {"codecs.zstd_level=0", "codecs.zstd_level=23", "codecs.uses=[0]", "codecs.uses=[]",
                                "codecs.uses=[1,1]",
                                "codecs.min_window_s=-1", "codecs.turbo=1"}) {
    const auto r = bb("codecs --config " + cfg() + " --out " + out + " --set " + set);
    EXPECT_EQ(r.exit_code, 2) << set << "\n" << r.out;
    EXPECT_NE(r.out.find("codecs"), std::string::npos) << set << "\n" << r.out;
  }
  // An empty data file, and a file with a NaN: named, exit 2.
  ASSERT_EQ(bb("train --config " + cfg() + " --out " + out).exit_code, 0);
  write_text(dir.path("empty.npz"), "");
  const auto empty = bb("codecs --config " + cfg() + " --out " + out + " --set input_path=" + dir.path("empty.npz"));
  EXPECT_EQ(empty.exit_code, 2) << empty.out;
  EXPECT_NE(empty.out.find("empty.npz"), std::string::npos) << empty.out;
  EXPECT_FALSE(fs::exists(out + "/codecs/codecs_report.json"));
  ASSERT_EQ(run_command(python_binary() + " -c \"import numpy as n; d=dict(n.load('" + dir.path("cms.npz") +
                        "')); x=d['data'].copy(); x[5, 2]=n.nan; d['data']=x; n.savez('" + dir.path("nan.npz") +
                        "', **d)\"").exit_code, 0);
  const auto nan = bb("codecs --config " + cfg() + " --out " + out + " --set input_path=" + dir.path("nan.npz"));
  EXPECT_EQ(nan.exit_code, 2) << nan.out;
  EXPECT_NE(nan.out.find("NaN"), std::string::npos) << nan.out;
  EXPECT_FALSE(fs::exists(out + "/codecs/codecs_report.json"));
}

// Trained without meters, compared with them: the cost stays in joules, and the table says the training
// is not amortised (its energy is unknown) instead of falling back to time unsaid.
TEST_F(CodecsCli, ATrainingWithoutEnergyIsNotAmortisedAndSaysSo) {
  const std::string out = dir.path("out");
  ASSERT_EQ(bb("train --config " + cfg() + " --out " + out + " --set energy.enabled=false").exit_code, 0);
  const auto j = bb("codecs --config " + cfg() + " --out " + out + " --json");
  ASSERT_EQ(j.exit_code, 0) << j.out;
  const json cmp = json::parse(j.out)["comparison"];
  EXPECT_EQ(cmp["basis"], "energy");
  EXPECT_TRUE(cmp["codecs"][0]["amortised"].empty());
  bool said = false;
  for (const json& n : cmp["notes"]) said |= n.get<std::string>().find("training energy is unknown") != std::string::npos;
  EXPECT_TRUE(said) << cmp["notes"];
  EXPECT_TRUE(json::parse(j.out)["memory"]["host_peak_rss_mib"].is_number());
}

TEST_F(CodecsCli, ASweepMeasuresTheCodecsAndReportGivesTheTableInEveryFormat) {
  const json ex = {{"schema_version", 1},
                   {"name", "codecs"},
                   {"dataset", {{"generator", {{"kind", "cms"}, {"rows", 1000}, {"seed", 2}}}}},
                   {"model", {{"name", "AE"}, {"compression_ratio", 1.6}}},
                   {"training", {{"progress", "none"}, {"threads", 1}}},
                   {"sweep", {{"batch_size", {256}}, {"precision", {"fp32"}}, {"epochs", {2}}, {"repeats", 2}}},
                   {"energy", {{"meters", {"cpu_estimate"}}, {"cpu_tdp_w", 100}}},
                   {"codecs", {{"min_window_s", 0.01}}}};
  write_text(dir.path("ex.json"), ex.dump());
  const std::string db = dir.path("r.sqlite");
  const auto run = bb("run " + dir.path("ex.json") + " --db " + db);
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const auto md = bb("report --db " + db + " --table codecs");
  ASSERT_EQ(md.exit_code, 0) << md.out;
  for (const std::string& codec : codec_names())
    EXPECT_NE(md.out.find("| " + codec + " |"), std::string::npos) << codec << "\n" << md.out;
  EXPECT_NE(md.out.find("medians over 2 repeats"), std::string::npos) << md.out;
  // CSV: the header's columns with commas quoted, so every line has as many fields.
  const auto csv = bb("report --db " + db + " --table codecs --format csv");
  ASSERT_EQ(csv.exit_code, 0) << csv.out;
  EXPECT_NE(csv.out.find("\"Baler J/MB, training over 10\""), std::string::npos) << csv.out;
  for (const char* format : {"csv", "json", "latex"}) {
    const auto r = bb(std::string("report --db ") + db + " --table codecs --format " + format);
    EXPECT_EQ(r.exit_code, 0) << format << "\n" << r.out;
    EXPECT_NE(r.out.find("bfloat16"), std::string::npos) << format << "\n" << r.out;
  }
  // Without codecs in the experiment: the table says how to get it.
  json plain = ex;
  plain.erase("codecs");
  plain["name"] = "plain";
  write_text(dir.path("plain.json"), plain.dump());
  const std::string db2 = dir.path("p.sqlite");
  ASSERT_EQ(bb("run " + dir.path("plain.json") + " --db " + db2).exit_code, 0);
  const auto none = bb("report --db " + db2 + " --table codecs");
  EXPECT_EQ(none.exit_code, 0) << none.out;
  EXPECT_NE(none.out.find("no trial measured the codecs"), std::string::npos) << none.out;
}

}  // namespace
}  // namespace balerbench
