// test_baler_project.cpp: a Baler project as balerbench reads it: the folder, P_config.py read by
// Debian's python3 with a stand-in Config, each key's fate, Baler's logged times, and the backups
// kept before balerbench replaces a file it did not write (harness/baler/, datasets/baler_project.h).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "datasets/baler_project.h"
#include "common/error.h"
#include "harness/baler/baler_config.h"
#include "harness/baler/baler_log.h"
#include "harness/baler/project_outputs.h"
#include "harness/baler/python_process.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// ROOT/workspaces/WS/P with config/P_config.py holding `body` (the lines of set_config).
std::string make_project(const TempDir& dir, const std::string& body, const std::string& name = "P") {
  const std::string p = dir.path("workspaces/WS/" + name);
  fs::create_directories(p + "/config");
  fs::create_directories(p + "/output/training");
  write_text(p + "/config/" + name + "_config.py", body);
  return p;
}

// Attributes as read_baler_attributes returns them, for the translation alone.
json attributes(const json& values) {
  json order = json::array();
  for (auto it = values.begin(); it != values.end(); ++it) order.push_back(it.key());
  return {{"order", order}, {"values", values}, {"unsupported", json::object()}};
}

const ConfigNote* note_for(const std::vector<ConfigNote>& notes, const std::string& key) {
  for (const auto& n : notes)
    if (n.key == key) return &n;
  return nullptr;
}

TEST(BalerConfig, EachKeyIsReadIgnoredNamedOrRefused) {
  const json values = {{"input_path", "workspaces/WS/data/x.npz"}, {"model_name", "AE"}, {"compression_ratio", 1.6},
                       {"epochs", 3}, {"l1", true}, {"reg_param", 0.001}, {"RHO", 0.05}, {"mse_sum", true},
                       {"latent_space_size", 15}, {"activation_extraction", true}, {"separate_model_saving", false},
                       {"seed", 7}, {"Part", "xcvu9p"}};
  const BalerTranslation t = translate_baler_attributes(attributes(values), "P_config.py");
  EXPECT_EQ(t.config["epochs"], 3);
  EXPECT_EQ(t.config["seed"], 7);  // balerbench's own key: read, and named
  for (const char* k : {"l1", "reg_param", "RHO", "mse_sum", "latent_space_size", "Part", "separate_model_saving",
                        "activation_extraction"})
    EXPECT_FALSE(t.config.contains(k)) << k;
  for (const char* k : {"l1", "reg_param", "RHO", "mse_sum", "latent_space_size", "Part"}) {
    ASSERT_NE(note_for(t.notes, k), nullptr) << k;
    EXPECT_EQ(note_for(t.notes, k)->fate, "ignored") << k;
  }
  EXPECT_NE(note_for(t.notes, "l1")->why.find("validate=True"), std::string::npos);
  EXPECT_EQ(note_for(t.notes, "activation_extraction")->fate, "not done");
  EXPECT_EQ(note_for(t.notes, "seed")->fate, "balerbench");
  EXPECT_EQ(note_for(t.notes, "separate_model_saving"), nullptr);  // False: what balerbench does anyway
  EXPECT_EQ(note_for(t.notes, "epochs"), nullptr);
}

TEST(BalerConfig, FeaturesThatChangeBalersFilesAreRefused) {
  const json base = {{"input_path", "x.npz"}, {"model_name", "AE"}, {"compression_ratio", 2}};
  for (const auto& [key, value] : std::vector<std::pair<std::string, json>>{
           {"separate_model_saving", true}, {"save_error_bounded_deltas", true}, {"convert_to_blocks", {1, 50, 50}},
           {"custom_loss_function", "loss_function_swae"}}) {
    json v = base;
    v[key] = value;
    expect_input_error([&] { translate_baler_attributes(attributes(v), "P_config.py"); }, "c." + key);
  }
  json v = base;
  v["custom_loss_function"] = "something_else";  // Baler applies only the SWAE name
  EXPECT_EQ(note_for(translate_baler_attributes(attributes(v), "P").notes, "custom_loss_function")->fate, "ignored");
  v = base;
  v["apply_normalization"] = true;
  v["custom_norm"] = true;
  expect_input_error([&] { translate_baler_attributes(attributes(v), "P_config.py"); }, "custom_norm = True");
  v = {{"input_path", "x.npz"}, {"model_name", "AE"}, {"number_of_columns", 24}, {"latent_space_size", 15}};
  expect_input_error([&] { translate_baler_attributes(attributes(v), "P_config.py"); }, "no c.compression_ratio");
}

// Integer columns: Baler's decompress truncates them (numpy's astype), so a Baler project does too,
// and says so; a config that sets c.truncate keeps its choice.
TEST(BalerConfig, TypeListTruncatesAsBalerUnlessTheConfigSaysOtherwise) {
  json v = {{"input_path", "x.npz"}, {"model_name", "AE"}, {"compression_ratio", 2}, {"type_list", {"int64"}}};
  BalerTranslation t = translate_baler_attributes(attributes(v), "P_config.py");
  EXPECT_EQ(t.config["truncate"], true);
  ASSERT_NE(note_for(t.notes, "type_list"), nullptr);
  EXPECT_NE(note_for(t.notes, "type_list")->why.find("truncated toward zero"), std::string::npos);
  v["truncate"] = false;
  t = translate_baler_attributes(attributes(v), "P_config.py");
  EXPECT_EQ(t.config["truncate"], false);
  EXPECT_EQ(note_for(t.notes, "type_list"), nullptr);
}

class BalerConfigFile : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = why_python_lacks("json"); !why.empty()) GTEST_SKIP() << why;
  }
  TempDir dir;
};

TEST_F(BalerConfigFile, SetConfigRunsOnAStandInAndItsAttributesComeBackInOrder) {
  const std::string p = make_project(dir,
                                     "import math\n"
                                     "print('configs may print')\n"
                                     "def set_config(c):\n"
                                     "    c.input_path = 'workspaces/WS/data/P_data.npz'\n"
                                     "    c.model_name = 'AE'\n"
                                     "    c.compression_ratio = 1.6\n"
                                     "    c.type_list = ('float64', 'int')\n"
                                     "    c.epochs = int(math.sqrt(9))\n"
                                     "    c.l1 = True\n"
                                     "    assert c.model_type is str  # Baler's Config declares model_type = str\n");
  const json a = read_baler_attributes(open_baler_project(p));
  EXPECT_EQ(a["order"], json({"input_path", "model_name", "compression_ratio", "type_list", "epochs", "l1"}));
  EXPECT_EQ(a["values"]["type_list"], json({"float64", "int"}));
  EXPECT_EQ(a["values"]["epochs"], 3);
  EXPECT_FALSE(fs::exists(p + "/config/__pycache__"));  // nothing written into the user's folder
}

TEST_F(BalerConfigFile, RelativePathsResolveAgainstBalersWorkingDirectoryAndTheLatentIsBalers) {
  const std::string p = make_project(dir,
                                     "def set_config(c):\n"
                                     "    c.input_path = 'workspaces/WS/data/P_data.npz'\n"
                                     "    c.model_name = 'CFD_dense_AE'\n"
                                     "    c.compression_ratio = 100\n"
                                     "    c.reg_param = 0.001\n");
  const BalerProjectConfig c = load_baler_project_config(open_baler_project(p), {"epochs=4"});
  EXPECT_EQ(c.run.input_path, fs::canonical(dir.root()).string() + "/workspaces/WS/data/P_data.npz");
  EXPECT_EQ(c.run.epochs, 4);
  EXPECT_EQ(c.run.latent_dtype, "float32");  // CFD_dense_AE's; Baler decodes the latent as stored
  EXPECT_EQ(c.run.monitoring.experiment, "P");
  EXPECT_NE(format_config_notes(open_baler_project(p), c.notes).find("P_config.py: reg_param: ignored"),
            std::string::npos);
  expect_input_error([&] { load_baler_project_config(open_baler_project(p), {"latent_dtype=float16"}); },
                     "latent_dtype float16");
}

TEST_F(BalerConfigFile, BrokenConfigsAreInputErrorsWithPythonsMessage) {
  std::string p = make_project(dir, "def set_config(c):\n    c.epochs = 1 / 0\n");
  expect_input_error([&] { read_baler_attributes(open_baler_project(p)); }, "line 2: ZeroDivisionError");
  p = make_project(dir, "x = 1\n", "Q");
  expect_input_error([&] { read_baler_attributes(open_baler_project(p)); }, "defines no set_config(c)");
  p = make_project(dir,
                   "def set_config(c):\n    c.input_path = 'x.npz'\n    c.model_name = 'AE'\n"
                   "    c.compression_ratio = 2\n    c.epohcs = 3\n",
                   "R");
  expect_input_error([&] { load_baler_project_config(open_baler_project(p), {}); }, "epohcs");
  p = make_project(dir, "def set_config(c):\n    c.epochs = print\n", "S");
  expect_input_error([&] { translate_baler_attributes(read_baler_attributes(open_baler_project(p)), "S"); },
                     "c.epochs = <built-in function print>");
}

// A config that never returns is stopped at the time limit, and the error says so (was: balerbench waited
// for ever, and a python3 left behind ran on at 100% of a CPU).
TEST_F(BalerConfigFile, AConfigThatNeverReturnsIsStoppedAtTheTimeLimit) {
  const std::string p = make_project(dir, "import time\ndef set_config(c):\n    while True:\n        time.sleep(0.01)\n");
  expect_input_error([&] { read_baler_attributes(open_baler_project(p), 0.5); },
                     "reading it took longer than 0.5 s");
  const ProcessResult r = run_python("import time\nprint('a', flush=True)\ntime.sleep(60)\n", {}, dir.root(), 0.5);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.out, "a\n");
  EXPECT_EQ(r.exit_code, 128 + 9);
  EXPECT_FALSE(run_python("print('b')", {}, dir.root(), 0).timed_out);  // 0: no limit
}

TEST(BalerLog, TimingsComeFromBalersConsoleLines) {
  const std::string text =
      "Epoch 3 of 3\n### Beginning Training\n  0%|    | 0/4 [00:00<?, ?it/s]\r100%|####| 4/4\n"
      "# Finished. Training Loss: 0.123\n0.0168 minutes\n"
      "Compressing...\nCompression took: 0.00134 minutes\n"
      "Decompressing...\r100%|###|\rDecompression took: 1.2e-05 minutes\n";
  const BalerTimings t = parse_baler_log(text, "baler.log");
  ASSERT_TRUE(t.train && t.compress && t.decompress);
  EXPECT_DOUBLE_EQ(t.train->duration_s, 0.0168 * 60);
  EXPECT_DOUBLE_EQ(t.compress->duration_s, 0.00134 * 60);
  EXPECT_DOUBLE_EQ(t.decompress->duration_s, 1.2e-05 * 60);
  EXPECT_EQ(t.train->log, "baler.log");
  EXPECT_FALSE(parse_baler_log("Epoch 1 of 5 minutes\n", "x").train);
}

class ProjectOutputsTest : public ::testing::Test {
 protected:
  fs::path out() const { return dir.path("output"); }
  std::string file(const std::string& rel) const { return (out() / rel).string(); }
  // A new file under the name, as balerbench's atomic writes make it.
  void replace(const std::string& rel, const std::string& text) {
    write_text(file(rel) + ".tmp", text);
    fs::rename(file(rel) + ".tmp", file(rel));
  }
  TempDir dir;
};

TEST_F(ProjectOutputsTest, AForeignFileIsKeptBeforeItIsReplacedAndOursAreNot) {
  fs::create_directories(out() / "compressed_output");
  write_text(file("compressed_output/model.pt"), "Baler's model");
  std::vector<KeptFile> kept;
  {
    ProjectOutputs guard(out(), {"compressed_output/model.pt", "training/loss_data.npy"});
    kept = guard.keep_foreign();
    replace("compressed_output/model.pt", "balerbench's model");
    guard.commit();
  }
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(read_text(kept[0].backup.string()), "Baler's model");
  EXPECT_TRUE(written_by_balerbench(out(), "compressed_output/model.pt"));
  {  // balerbench's own file is replaced without a backup
    ProjectOutputs guard(out(), {"compressed_output/model.pt"});
    EXPECT_TRUE(guard.keep_foreign().empty());
    replace("compressed_output/model.pt", "balerbench's second model");
    guard.commit();
  }
  write_text(file("compressed_output/model.pt"), "Baler again, in place");  // torch.save truncates and writes
  EXPECT_FALSE(written_by_balerbench(out(), "compressed_output/model.pt"));
}

TEST_F(ProjectOutputsTest, AFailedCommandLeavesNoBackupAndTheFileInPlace) {
  fs::create_directories(out() / "compressed_output");
  write_text(file("compressed_output/compressed.npz"), "Baler's latent");
  {
    ProjectOutputs guard(out(), {"compressed_output/compressed.npz"});
    ASSERT_EQ(guard.keep_foreign().size(), 1u);
  }  // no commit: the command threw before writing
  EXPECT_EQ(read_text(file("compressed_output/compressed.npz")), "Baler's latent");
  EXPECT_FALSE(fs::exists(out() / "backup") && !fs::is_empty(out() / "backup"));
}

TEST_F(ProjectOutputsTest, OneBalerRunsFilesGatherInOneBackupFolder) {
  fs::create_directories(out() / "compressed_output");
  fs::create_directories(out() / "training");
  write_text(file("compressed_output/model.pt"), "m1");
  write_text(file("compressed_output/compressed.npz"), "c1");
  auto run = [&](const std::string& rel, const std::string& text) {
    ProjectOutputs guard(out(), {rel});
    const auto kept = guard.keep_foreign();
    replace(rel, text);
    guard.commit();
    return kept.empty() ? fs::path() : kept[0].backup;
  };
  const fs::path first = run("compressed_output/model.pt", "ours");
  const fs::path second = run("compressed_output/compressed.npz", "ours");
  EXPECT_EQ(first.parent_path(), second.parent_path());  // train, then compress: one folder
  write_text(file("compressed_output/model.pt"), "m2");   // Baler trains again
  const fs::path third = run("compressed_output/model.pt", "ours again");
  EXPECT_NE(third.parent_path(), first.parent_path());   // the folder already holds a model.pt
  EXPECT_EQ(read_text(first.string()), "m1");
  EXPECT_EQ(read_text(third.string()), "m2");
}

}  // namespace
}  // namespace balerbench
