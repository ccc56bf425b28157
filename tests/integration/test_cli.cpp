// test_cli.cpp: the `balerbench` executable end to end, the real CFD file,
// and every bad input of the foundation issue (exit code 2, one line, no
// output left behind).
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "datasets/npz.h"
#include "datasets/synthetic.h"
#include "models/autoencoder.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class Cli : public ::testing::Test {
 protected:
  CommandResult bb(const std::string& args) { return run_command(balerbench_binary() + " " + args); }
  std::string config(const json& j, const std::string& name = "c.json") {
    write_text(dir.path(name), j.dump());
    return dir.path(name);
  }
  json cms_config(const std::string& input) {
    return {{"input_path", input}, {"model_name", "AE"}, {"compression_ratio", 1.6}, {"epochs", 5},
            {"batch_size", 256}, {"progress", "none"},
            {"type_list", cms_type_list()}};
  }
  json info(const std::string& cfg, const std::string& out) {
    const auto r = bb("info --json --config " + cfg + " --out " + out);
    EXPECT_EQ(r.exit_code, 0) << r.out;
    return json::parse(r.out);
  }
  void cycle(const std::string& cfg, const std::string& out) {
    for (const char* cmd : {"compress", "decompress"}) {
      const auto r = bb(std::string(cmd) + " --config " + cfg + " --out " + out);
      ASSERT_EQ(r.exit_code, 0) << cmd << ": " << r.out;
    }
  }
  TempDir dir;
};

// --json: stdout is exactly one JSON document, with the default progress setting (lines when
// stdout is not a terminal) and an energy meter; the epoch lines and summaries go to stderr.
TEST_F(Cli, JsonOutputIsOneDocumentOnStdout) {
  ASSERT_EQ(bb("data generate --kind cms --rows 1500 --seed 1 --out " + dir.path("cms.npz")).exit_code, 0);
  json j = cms_config(dir.path("cms.npz"));
  j.erase("progress");  // the default, "auto"
  j["epochs"] = 3;
  j["energy"] = {{"meters", {"ram_estimate"}}};
  const std::string cfg = config(j);
  const std::string out = dir.path("out");
  for (const char* cmd : {"train", "compress", "decompress", "info"}) {
    const std::string err = dir.path(std::string(cmd) + ".err");
    const auto r = run_command("{ " + balerbench_binary() + " " + cmd + " --json --config " + cfg + " --out " + out +
                               " 2>" + err + "; }");
    ASSERT_EQ(r.exit_code, 0) << cmd << ": " << r.out << read_text(err);
    json doc;
    EXPECT_NO_THROW(doc = json::parse(r.out)) << cmd << " stdout:\n" << r.out;
    EXPECT_TRUE(doc.is_object()) << cmd;
    if (std::string(cmd) == "train") {
      EXPECT_NE(read_text(err).find("Epoch 3/3"), std::string::npos) << read_text(err);
      EXPECT_EQ(r.out.find("Epoch"), std::string::npos) << r.out;
    }
  }
  // Without --json the epoch lines stay on stdout.
  const auto plain = run_command("{ " + balerbench_binary() + " train --config " + cfg + " --out " + out +
                                 " 2>/dev/null; }");
  EXPECT_NE(plain.out.find("Epoch 3/3"), std::string::npos) << plain.out;
}

// SIGKILL at any moment of compress or decompress leaves the output absent or whole under its final
// name, never half-written: kills at delays from before start-up to after the end.
TEST_F(Cli, SigkillDuringCompressAndDecompressLeavesNoPartialFile) {
  ASSERT_EQ(bb("data generate --kind cms --rows 20000 --seed 2 --out " + dir.path("cms.npz")).exit_code, 0);
  json j = cms_config(dir.path("cms.npz"));
  j["epochs"] = 1;
  const std::string cfg = config(j);
  const std::string out = dir.path("out");
  ASSERT_EQ(bb("train --config " + cfg + " --out " + out).exit_code, 0);
  cycle(cfg, out);
  const auto find = [&](const std::string& name) {
    for (const auto& e : fs::recursive_directory_iterator(out))
      if (e.path().filename() == name) return e.path().string();
    return std::string();
  };
  for (const char* cmd : {"compress", "decompress"}) {
    const std::string final_path = find(std::string(cmd) + "ed.npz");
    ASSERT_FALSE(final_path.empty()) << cmd;
    for (const char* delay : {"0", "0.05", "0.1", "0.2", "0.3", "0.5", "0.8", "1.2"}) {
      fs::remove(final_path);
      run_command("{ " + balerbench_binary() + " " + cmd + " --config " + cfg + " --out " + out +
                  " > /dev/null 2>&1 & p=$!; sleep " + delay + "; kill -9 $p 2>/dev/null; wait $p; } 2>/dev/null; true");
      if (!fs::exists(final_path)) continue;  // absent: the kill came before the rename
      NpzMembers members;
      EXPECT_NO_THROW(members = read_npz(final_path)) << cmd << " killed after " << delay << " s";
      EXPECT_FALSE(members.empty()) << cmd << " killed after " << delay << " s";
    }
    const auto r = bb(std::string(cmd) + " --config " + cfg + " --out " + out);  // and it runs again
    ASSERT_EQ(r.exit_code, 0) << cmd << ": " << r.out;
    EXPECT_NO_THROW(read_npz(final_path)) << cmd;
  }
}

TEST_F(Cli, EndToEndCmsCycleBeatsAnUntrainedModel) {
  ASSERT_EQ(bb("data generate --kind cms --rows 3000 --seed 1 --out " + dir.path("cms.npz")).exit_code, 0);
  json j = cms_config(dir.path("cms.npz"));
  j["progress"] = "lines";
  const std::string cfg = config(j);
  const std::string out = dir.path("out");
  const auto train = bb("train --config " + cfg + " --out " + out);
  ASSERT_EQ(train.exit_code, 0) << train.out;
  EXPECT_NE(train.out.find("Epoch 5/5"), std::string::npos) << train.out;
  for (const char* f : {"training/model.pt", "training/loss_data.npy", "training/normalization_features.npy",
                        "training/run_config.json", "training/training_report.json"})
    EXPECT_TRUE(fs::exists(out + "/" + f)) << f;
  EXPECT_EQ(read_npy(out + "/training/loss_data.npy").shape, (std::vector<int64_t>{2, 5}));
  cycle(cfg, out);
  const NpzMembers c = read_npz(out + "/compressed_output/compressed.npz");
  EXPECT_EQ(c.at("data").shape, (std::vector<int64_t>{3000, 15}));
  EXPECT_EQ(c.at("names").to_strings().size(), 24u);
  EXPECT_EQ(c.at("normalization_features").shape, (std::vector<int64_t>{2, 24}));
  const NpzMembers d = read_npz(out + "/decompressed_output/decompressed.npz");
  EXPECT_EQ(d.at("data").shape, (std::vector<int64_t>{3000, 24}));
  const auto values = d.at("data").to_doubles();
  for (int64_t r = 0; r < 3000; ++r) EXPECT_EQ(values[r * 24 + 12], std::round(values[r * 24 + 12]));
  const json trained = info(cfg, out);
  const double trained_err = trained["reconstruction"]["normalized_rmse"].get<double>();
  EXPECT_TRUE(std::isfinite(trained_err));
  EXPECT_NEAR(trained["compression_ratio"].get<double>(), 24.0 / 15.0, 0.05);  // npz headers, names
  EXPECT_LT(trained["actual_compression_ratio"].get<double>(), trained["compression_ratio"].get<double>());

  torch::manual_seed(123);  // same cycle with an untrained model
  save_state_dict(*make_model("AE", 24, 15), out + "/training/model.pt");
  cycle(cfg, out);
  const double untrained_err = info(cfg, out)["reconstruction"]["normalized_rmse"].get<double>();
  EXPECT_LT(trained_err, untrained_err);
}

TEST_F(Cli, OptionsCheckpointsValidationFloat16LatentAndTruncation) {
  ASSERT_EQ(bb("data generate --kind cms --rows 1200 --out " + dir.path("cms.npz")).exit_code, 0);
  json j = cms_config(dir.path("cms.npz"));
  j["epochs"] = 5;
  j["test_size"] = 0.25;
  j["intermittent_model_saving"] = true;
  j["intermittent_saving_patience"] = 2;
  j["latent_dtype"] = "float16";
  j["extra_compression"] = true;
  const std::string cfg = config(j);
  const std::string out = dir.path("out");
  const auto t = bb("train --json --config " + cfg + " --out " + out);
  ASSERT_EQ(t.exit_code, 0) << t.out;
  const json report = json::parse(t.out);
  EXPECT_EQ(report["train_rows"], 900);
  EXPECT_EQ(report["val_rows"], 300);
  EXPECT_NE(report["final_train_loss"], report["final_val_loss"]);
  for (int e : {0, 2, 4}) EXPECT_TRUE(fs::exists(out + "/training/model_" + std::to_string(e) + ".pt")) << e;
  EXPECT_FALSE(fs::exists(out + "/training/model_1.pt"));
  cycle(cfg, out);
  const NpzMembers c = read_npz(out + "/compressed_output/compressed.npz");
  EXPECT_EQ(c.at("data").dtype, DType::kFloat16);
  const auto rounded = read_npz(out + "/decompressed_output/decompressed.npz").at("data").to_doubles();
  const auto truncated_run = bb("decompress --config " + cfg + " --set truncate=true --out " + out);
  ASSERT_EQ(truncated_run.exit_code, 0) << truncated_run.out;
  const auto truncated = read_npz(out + "/decompressed_output/decompressed.npz").at("data").to_doubles();
  int differ = 0;
  for (std::size_t r = 0; r < 1200; ++r) {
    const double a = rounded[r * 24 + 13], b = truncated[r * 24 + 13];  // an int column
    EXPECT_EQ(b, std::trunc(b));
    EXPECT_LE(std::abs(a - b), 1.0);
    differ += a != b;
    EXPECT_EQ(rounded[r * 24 + 0], truncated[r * 24 + 0]);  // float columns untouched
  }
  EXPECT_GT(differ, 0) << "rounding and truncation should disagree somewhere";
}

TEST_F(Cli, PyTorchReproducesOurLatentCode) {
  if (!python_has("numpy, torch")) GTEST_SKIP() << "python3-torch not available";
  ASSERT_EQ(bb("data generate --kind cms --rows 1000 --out " + dir.path("cms.npz")).exit_code, 0);
  json j = cms_config(dir.path("cms.npz"));
  j["epochs"] = 2;
  const std::string cfg = config(j);
  ASSERT_EQ(bb("train --config " + cfg + " --out " + dir.path("out")).exit_code, 0);
  ASSERT_EQ(bb("compress --config " + cfg + " --out " + dir.path("out")).exit_code, 0);
  const auto r = run_command(python_binary() + " " + source_dir() + "/tests/integration/torch_golden.py " +
                             dir.path("cms.npz") + " " + dir.path("out"));
  EXPECT_EQ(r.exit_code, 0) << r.out;
}

TEST_F(Cli, RealCfdAnimationRoundTrip) {
  const std::string input = shared_data_dir() + "/CFD_animation.npz";
  if (!fs::exists(input)) GTEST_SKIP() << input << " not present";
  const std::string cfg = config({{"input_path", input}, {"model_name", "CFD_dense_AE"}, {"compression_ratio", 100},
                                  {"epochs", 30}, {"batch_size", 6000}, {"custom_norm", true}, {"progress", "none"}});
  const std::string out = dir.path("out");
  const auto t = bb("train --config " + cfg + " --out " + out);
  ASSERT_EQ(t.exit_code, 0) << t.out;
  cycle(cfg, out);
  const NpzMembers c = read_npz(out + "/compressed_output/compressed.npz");
  EXPECT_EQ(c.at("data").shape, (std::vector<int64_t>{60, 25}));
  EXPECT_EQ(c.at("data").dtype, DType::kFloat32);
  const NpzMembers d = read_npz(out + "/decompressed_output/decompressed.npz");
  EXPECT_EQ(d.at("data").shape, (std::vector<int64_t>{60, 50, 50}));
  const json i = info(cfg, out);
  EXPECT_TRUE(std::isfinite(i["reconstruction"]["rmse"].get<double>()));
  EXPECT_LT(i["actual_compression_ratio"].get<double>(), 1.0) << "the 4.2 MB model outweighs 1.2 MB of data";
}

TEST_F(Cli, ModelInfoReproducesT1) {
  const auto r = bb("model-info --model AE --features 24 --compression-ratio 1.6 --batch-size 512");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  for (const char* cell : {"2,457,800", "10,240,100", "2,560,050", "384,015", "384,050", "2,560,100", "10,240,200",
                           "2,457,624", "31,283,939", "61,839"})
    EXPECT_NE(r.out.find(cell), std::string::npos) << cell;
  const auto j = json::parse(bb("model-info --model AE --features 24 --compression-ratio 1.6 --format json").out);
  EXPECT_EQ(j["total"]["t1_operations_per_batch"], 31283939);
  EXPECT_EQ(j["total"]["flops_per_sample"], 122200);
}

TEST_F(Cli, DataInfoPrintsPerColumnStatistics) {
  ASSERT_EQ(bb("data generate --kind cms --rows 100 --out " + dir.path("cms.npz")).exit_code, 0);
  const auto r = bb("data info " + dir.path("cms.npz"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("(100, 24)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("mNeutralMultiplicity"), std::string::npos);
  const auto j = json::parse(bb("data info --format json " + dir.path("cms.npz")).out);
  EXPECT_EQ(j["features"].size(), 24u);
  EXPECT_GE(j["features"][0]["min"].get<double>(), 5.0);
}

// generate refuses to replace a file unless told to, and the file is left as it was.
TEST_F(Cli, GenerateKeepsAnExistingFileWithoutForce) {
  const std::string out = dir.path("cms.npz");
  ASSERT_EQ(bb("data generate --kind cms --rows 100 --out " + out).exit_code, 0);
  const auto size = fs::file_size(out);
  const auto r = bb("data generate --kind cms --rows 10 --out " + out);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(r.out, "balerbench: error: " + out + ": already exists (hint: pass --force to replace it, or choose another --out)\n");
  EXPECT_EQ(fs::file_size(out), size);
  const auto forced = bb("data generate --kind cms --rows 10 --force --out " + out);
  ASSERT_EQ(forced.exit_code, 0) << forced.out;
  EXPECT_EQ(read_npz(out).at("data").shape, (std::vector<int64_t>{10, 24}));
}

// Counts of zero are refused in a line a user can read (CLI11's own check printed its range with
// the largest double written out, 309 digits).
TEST_F(Cli, ZeroCountsAreRefusedReadably) {
  const auto rows = bb("data generate --kind cms --rows 0 --out " + dir.path("z.npz"));
  EXPECT_EQ(rows.exit_code, 2) << rows.out;
  EXPECT_EQ(rows.out, "balerbench: error: --rows: must be at least 1 (got 0) (hint: balerbench data generate --help)\n");
  EXPECT_FALSE(fs::exists(dir.path("z.npz")));
  const auto width = bb("data generate --kind cfd --rows 2 --width 0 --out " + dir.path("z.npz"));
  EXPECT_EQ(width.exit_code, 2) << width.out;
  EXPECT_NE(width.out.find("--width: must be at least 1 (got 0)"), std::string::npos) << width.out;
  const auto features = bb("model-info --model AE --features 0 --compression-ratio 2");
  EXPECT_EQ(features.exit_code, 2) << features.out;
  EXPECT_NE(features.out.find("--features: must be at least 1 (got 0)"), std::string::npos) << features.out;
  const auto duration = bb("serve-metrics --duration -1");
  EXPECT_EQ(duration.exit_code, 2) << duration.out;
  EXPECT_NE(duration.out.find("--duration: must be at least 0 (got -1)"), std::string::npos) << duration.out;
  // Beyond what can be counted, and NaN: refused by the same checks (was: clamped, or no limit at all).
  const auto huge = bb("model-info --model AE --features 18446744073709551616 --compression-ratio 2");
  EXPECT_EQ(huge.exit_code, 2) << huge.out;
  EXPECT_NE(huge.out.find("--features: must be at most 1e+09"), std::string::npos) << huge.out;
  for (const char* nan : {"run x.json --db-wait nan", "wattmeter-energy --log w.csv --start 1 --end 2 --clock-offset nan"}) {
    const auto r = bb(nan);
    EXPECT_EQ(r.exit_code, 2) << nan << "\n" << r.out;
    EXPECT_NE(r.out.find("must be a number (got nan)"), std::string::npos) << nan << "\n" << r.out;
  }
}

TEST_F(Cli, GenerateDeflatedAndFramesInfo) {
  ASSERT_EQ(bb("data generate --kind cfd --rows 6 --height 8 --width 10 --seed 3 --compressed --out " +
               dir.path("cfd.npz")).exit_code, 0);
  const NpzMembers m = read_npz(dir.path("cfd.npz"));
  EXPECT_EQ(m.at("data").shape, (std::vector<int64_t>{6, 8, 10}));
  EXPECT_EQ(m.at("names").numel(), 0) << "Baler's CFD files store names as an empty float64 array";
  const auto summary = bb("data info " + dir.path("cfd.npz"));
  EXPECT_NE(summary.out.find("2D frames, 80 features"), std::string::npos) << summary.out;
  const auto all = json::parse(bb("data info --all-features --format json " + dir.path("cfd.npz")).out);
  EXPECT_EQ(all["features"].size(), 80u);
}

// info's ratios are file sizes: a compressed.npz cut in half gave twice the ratio. Now it is read
// first, and a damaged one is an error naming it.
TEST_F(Cli, InfoRefusesATruncatedCompressedFile) {
  ASSERT_EQ(bb("data generate --kind cms --rows 1000 --out " + dir.path("cms.npz")).exit_code, 0);
  json j = cms_config(dir.path("cms.npz"));
  j["epochs"] = 1;
  const std::string cfg = config(j), out = dir.path("out");
  ASSERT_EQ(bb("train --config " + cfg + " --out " + out).exit_code, 0);
  ASSERT_EQ(bb("compress --config " + cfg + " --out " + out).exit_code, 0);
  const double ratio = info(cfg, out)["compression_ratio"].get<double>();
  const std::string file = out + "/compressed_output/compressed.npz";
  fs::resize_file(file, fs::file_size(file) / 2);
  const auto r = bb("info --config " + cfg + " --out " + out);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("balerbench: error: " + file + ": the .npz archive is truncated or damaged"), std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("compression ratio"), std::string::npos) << "no ratio from a damaged file (was " << ratio << ")";
}

// A batch size beyond the training rows trains (one step an epoch) and says so, once, on stderr.
TEST_F(Cli, BatchLargerThanTheTrainingRowsIsNoted) {
  ASSERT_EQ(bb("data generate --kind cms --rows 1000 --out " + dir.path("cms.npz")).exit_code, 0);
  json j = cms_config(dir.path("cms.npz"));
  j["epochs"] = 2;
  j["batch_size"] = 4096;
  j["test_size"] = 0.2;
  const auto r = run_command("{ " + balerbench_binary() + " train --json --config " + config(j) + " --out " +
                             dir.path("out") + " 2>&1 >/dev/null; }");  // stderr alone
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string note = "note: batch_size 4096 is larger than the 800 training rows: every epoch is one step of 800 rows\n";
  ASSERT_NE(r.out.find(note), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(note), r.out.rfind(note)) << "once, not per epoch";
  j["batch_size"] = 800;
  const auto exact = bb("train --config " + config(j) + " --out " + dir.path("out2"));
  ASSERT_EQ(exact.exit_code, 0) << exact.out;
  EXPECT_EQ(exact.out.find("note: batch_size"), std::string::npos) << exact.out;
}

TEST_F(Cli, ProgressBarOnlyWhenAsked) {
  ASSERT_EQ(bb("data generate --kind cms --rows 2000 --out " + dir.path("cms.npz")).exit_code, 0);
  json j = cms_config(dir.path("cms.npz"));
  j["epochs"] = 2;
  j["progress"] = "bar";
  const auto bar = bb("train --config " + config(j) + " --out " + dir.path("a"));
  ASSERT_EQ(bar.exit_code, 0) << bar.out;
  EXPECT_NE(bar.out.find('\r'), std::string::npos) << "a bar redraws with carriage returns";
  EXPECT_NE(bar.out.find("epoch 2/2 [##"), std::string::npos) << bar.out;
  EXPECT_NE(bar.out.find(" left"), std::string::npos) << bar.out;  // the remaining-time estimate
  j["progress"] = "auto";  // stdout is a pipe here: plain lines
  const auto lines = bb("train --config " + config(j) + " --out " + dir.path("b"));
  ASSERT_EQ(lines.exit_code, 0) << lines.out;
  EXPECT_EQ(lines.out.find('\r'), std::string::npos);
  EXPECT_NE(lines.out.find("Epoch 2/2  train_loss"), std::string::npos) << lines.out;
}

// --- bad input: exit code 2, one line naming the problem, nothing written ---

class BadInput : public Cli {
 protected:
  void SetUp() override {
    ASSERT_EQ(bb("data generate --kind cms --rows 600 --out " + dir.path("cms.npz")).exit_code, 0);
    ASSERT_EQ(bb("data generate --kind cfd --rows 4 --height 5 --width 6 --out " + dir.path("cfd.npz")).exit_code, 0);
  }
  // Runs `args`; expects exit 2, exactly one output line containing every fragment, and no `out` folder.
  void expect_rejected(const std::string& args, const std::vector<std::string>& fragments) {
    const auto r = bb(args + " --out " + dir.path("bad_out"));
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
    for (const auto& f : fragments) EXPECT_NE(r.out.find(f), std::string::npos) << "missing '" << f << "' in: " << r.out;
    EXPECT_FALSE(fs::exists(dir.path("bad_out"))) << "output left behind by: " << args;
  }
  std::string train_with(json j) { return "train --config " + config(j, "bad.json"); }
  json base() { json j = cms_config(dir.path("cms.npz")); j["epochs"] = 1; return j; }
};

TEST_F(BadInput, MissingFile) {
  json j = base();
  j["input_path"] = dir.path("nope.npz");
  expect_rejected(train_with(j), {"nope.npz", "no such file"});
}

TEST_F(BadInput, NotAZip) {
  write_text(dir.path("text.npz"), "hello, I am not an archive\n");
  json j = base();
  j["input_path"] = dir.path("text.npz");
  expect_rejected(train_with(j), {"text.npz", "not a zip"});
}

TEST_F(BadInput, TruncatedNpz) {
  fs::copy_file(dir.path("cms.npz"), dir.path("cut.npz"));
  fs::resize_file(dir.path("cut.npz"), fs::file_size(dir.path("cut.npz")) / 2);
  json j = base();
  j["input_path"] = dir.path("cut.npz");
  expect_rejected(train_with(j), {"cut.npz: the .npz archive is truncated or damaged", "write or copy the file again"});
}

TEST_F(BadInput, NpzWithoutData) {
  write_npz(dir.path("nodata.npz"), {{"table", NpyArray::from_doubles({2, 2}, {1, 2, 3, 4})}});
  json j = base();
  j["input_path"] = dir.path("nodata.npz");
  expect_rejected(train_with(j), {"no 'data' array", "found: table"});
}

TEST_F(BadInput, UnsupportedDtype) {
  std::vector<uint8_t> img = serialize_npy(NpyArray::from_doubles({1, 1}, {1.0}));
  std::string s(img.begin(), img.end());
  s.replace(s.find("'<f8'"), 5, "'<c8'");  // complex64, same length
  write_raw_member_npz(dir.path("complex.npz"), "data.npy", std::vector<uint8_t>(s.begin(), s.end()));
  json j = base();
  j["input_path"] = dir.path("complex.npz");
  expect_rejected(train_with(j), {"unsupported dtype '<c8'", "complex.npz:data.npy"});
}

TEST_F(BadInput, NanAndInfNameTheColumnAndCount) {
  std::vector<double> v(4 * 3, 1.0);
  v[4] = std::nan("");
  v[7] = INFINITY;
  v[10] = std::nan("");
  write_npz(dir.path("nan.npz"), {{"data", NpyArray::from_doubles({4, 3}, v)},
                                  {"names", NpyArray::from_strings({"pt_", "eta_", "phi_"})}});
  json j = base();
  j["input_path"] = dir.path("nan.npz");
  j.erase("type_list");
  expect_rejected(train_with(j), {"column 1 ('eta_')", "3 non-finite values (2 NaN, 1 Inf)"});
}

TEST_F(BadInput, FramesToTableModelAndTheReverse) {
  json j = base();
  j["input_path"] = dir.path("cfd.npz");
  j.erase("type_list");
  expect_rejected(train_with(j), {"model AE is for 1D tables", "2D frames", "CFD_dense_AE"});
  j = base();
  j["model_name"] = "CFD_dense_AE";
  expect_rejected(train_with(j), {"model CFD_dense_AE is for 2D frames", "1D table"});
}

TEST_F(BadInput, ZeroRows) {
  write_npz(dir.path("zero.npz"), {{"data", NpyArray::from_doubles({0, 24}, {})}});
  json j = base();
  j["input_path"] = dir.path("zero.npz");
  expect_rejected(train_with(j), {"zero rows"});
}

TEST_F(BadInput, BatchSizeAndCompressionRatio) {
  // A value from --set is named as typed, not as a key of the config file.
  expect_rejected(train_with(base()) + " --set batch_size=0", {"--set batch_size=0: must be at least 1"});
  expect_rejected(train_with(base()) + " --set batch_size=-4", {"--set batch_size=-4"});
  expect_rejected(train_with(base()) + " --set compression_ratio=0", {"--set compression_ratio=0", "positive"});
  expect_rejected(train_with(base()) + " --set compression_ratio=0.5", {"latent size of 48", "larger than the 24"});
}

TEST_F(BadInput, SetValueOfTheWrongTypeHasAHint) {
  // The hints of the strict reader (tests/unit/base/test_strict_json_hints.cpp) reach the command line.
  expect_rejected(train_with(base()) + " --set epochs=abc",
                  {"balerbench: error: --set epochs=abc: expected an integer, got string \"abc\" (hint: write a whole "
                   "number without quotes, e.g. 100)"});
  expect_rejected(train_with(base()) + " --set epoch=3", {"--set epoch=3: unknown key (hint: did you mean 'epochs'?"});
}

TEST_F(BadInput, UnknownModelListsValidNames) {
  json j = base();
  j["model_name"] = "VAE";
  expect_rejected(train_with(j), {"unknown model_name 'VAE'", "AE, AE_Dropout_BN, CFD_dense_AE, FPGA_prototype_model"});
}

TEST_F(BadInput, ConfigUnknownKeyAndWrongType) {
  json j = base();
  j["learning_rate"] = 0.1;
  expect_rejected(train_with(j), {"bad.json: /learning_rate: unknown key"});
  j = base();
  j["epochs"] = "many";
  expect_rejected(train_with(j), {"/epochs: expected an integer, got string"});
  write_text(dir.path("broken.json"), "{\"input_path\": ");
  expect_rejected("train --config " + dir.path("broken.json"), {"not valid JSON"});
}

TEST_F(BadInput, DecompressWithAModelThatDoesNotMatch) {
  const std::string good = config(base(), "good.json");
  const std::string out = dir.path("out");
  ASSERT_EQ(bb("train --config " + good + " --out " + out).exit_code, 0);
  ASSERT_EQ(bb("compress --config " + good + " --out " + out).exit_code, 0);
  json other = base();
  other["compression_ratio"] = 2.0;  // latent 12, the file has 15
  const auto r = bb("decompress --config " + config(other, "other.json") + " --out " + out);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("latent code has 15 columns"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(out + "/decompressed_output/decompressed.npz"));
  // Same latent size, different model: the state dict does not fit.
  torch::manual_seed(0);
  save_state_dict(*make_model("FPGA_prototype_model", 24, 15), out + "/training/model.pt");
  const auto r2 = bb("decompress --config " + good + " --out " + out);
  EXPECT_EQ(r2.exit_code, 2) << r2.out;
  EXPECT_NE(r2.out.find("the model does not match"), std::string::npos) << r2.out;
  EXPECT_FALSE(fs::exists(out + "/decompressed_output/decompressed.npz"));
}

TEST_F(BadInput, CliOptionErrorsExitTwo) {
  const auto r = bb("data generate --kind lhc --rows 5 --out " + dir.path("x.npz"));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(bb("frobnicate").exit_code, 2);
  EXPECT_EQ(bb("model-info --model Nope --features 24 --compression-ratio 2").exit_code, 2);
}

}  // namespace
}  // namespace balerbench
