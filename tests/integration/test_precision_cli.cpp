// test_precision_cli.cpp: precision modes and profiling through the CLI:
// what the reports record, the T5-shaped table, the Chrome trace, and the
// modes a CPU cannot run (exit 2, nothing written).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "datasets/npy.h"
#include "datasets/npz.h"
#include "datasets/synthetic.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class PrecisionCli : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(bb("data generate --kind cms --rows 2000 --seed 3 --out " + dir.path("cms.npz")).exit_code, 0);
    json j = {{"input_path", dir.path("cms.npz")}, {"model_name", "AE"}, {"compression_ratio", 1.6},
              {"epochs", 3}, {"batch_size", 256}, {"progress", "none"}, {"type_list", cms_type_list()},
              {"energy", {{"enabled", false}}}};
    write_text(dir.path("c.json"), j.dump());
  }
  CommandResult bb(const std::string& args) { return run_command(balerbench_binary() + " " + args); }
  std::string cfg() const { return dir.path("c.json"); }
  json report(const std::string& out, const std::string& sub, const std::string& name) {
    return json::parse(read_text(out + "/" + sub + "/" + name));
  }
  TempDir dir;
};

TEST_F(PrecisionCli, AmpBf16CycleRecordsPolicyAndDtypes) {
  const std::string out = dir.path("bf16");
  const auto t = bb("train --config " + cfg() + " --out " + out + " --precision amp_bf16");
  ASSERT_EQ(t.exit_code, 0) << t.out;
  EXPECT_NE(t.out.find("precision amp_bf16: parameters float32, data float32, compute bfloat16 (autocast)"),
            std::string::npos)
      << t.out;
  const json r = report(out, "training", "training_report.json");
  EXPECT_EQ(r["precision"]["name"], "amp_bf16");
  EXPECT_EQ(r["precision"]["param_dtype"], "float32");
  EXPECT_EQ(r["precision"]["compute_dtype"], "bfloat16");
  EXPECT_TRUE(r["precision"]["grad_scaler"].is_null());
  EXPECT_EQ(r["model"]["dtype"], "float32");  // master weights, as stored in model.pt
  EXPECT_EQ(r["model"]["baler_dtype"], "float64");
  EXPECT_EQ(r["cuda_graph"]["used"], false);
  EXPECT_EQ(json::parse(read_text(out + "/training/run_config.json"))["precision"], "amp_bf16");
  for (const char* cmd : {"compress", "decompress"}) {
    const auto c = bb(std::string(cmd) + " --config " + cfg() + " --out " + out + " --precision amp_bf16");
    ASSERT_EQ(c.exit_code, 0) << cmd << c.out;
  }
  EXPECT_EQ(report(out, "compressed_output", "compress_report.json")["latent_dtype"], "float32");
  EXPECT_EQ(report(out, "compressed_output", "compress_report.json")["precision"]["name"], "amp_bf16");
  const NpzMembers d = read_npz(out + "/decompressed_output/decompressed.npz");
  EXPECT_EQ(d.at("data").shape, (std::vector<int64_t>{2000, 24}));
  const auto info = bb("info --json --config " + cfg() + " --out " + out);
  ASSERT_EQ(info.exit_code, 0) << info.out;
  EXPECT_LT(json::parse(info.out)["reconstruction"]["normalized_rmse"].get<double>(), 0.5);
}

TEST_F(PrecisionCli, DefaultIsBalersDtypeAndFp32IsFloat32) {
  const auto a = bb("train --json --config " + cfg() + " --out " + dir.path("auto"));
  ASSERT_EQ(a.exit_code, 0) << a.out;
  EXPECT_EQ(json::parse(a.out)["precision"]["name"], "fp64");
  const auto f = bb("train --json --config " + cfg() + " --out " + dir.path("fp32") + " --set precision=fp32");
  ASSERT_EQ(f.exit_code, 0) << f.out;
  EXPECT_EQ(json::parse(f.out)["model"]["dtype"], "float32");
}

TEST_F(PrecisionCli, Float16AndTf32OnTheCpuExitTwoAndWriteNothing) {
  for (const char* p : {"amp_fp16", "amp_fp16_noscale", "tf32"}) {
    const std::string out = dir.path(std::string("o_") + p);
    const auto r = bb("train --config " + cfg() + " --out " + out + " --precision " + p);
    EXPECT_EQ(r.exit_code, 2) << p << r.out;
    EXPECT_NE(r.out.find("needs a CUDA device"), std::string::npos) << r.out;
    EXPECT_FALSE(fs::exists(out + "/training/model.pt")) << p;
    EXPECT_FALSE(fs::exists(out + "/training/training_report.json")) << p;
  }
  const auto bad = bb("train --config " + cfg() + " --out " + dir.path("x") + " --precision fp12");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.out.find("--precision: invalid value 'fp12'"), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("amp_bf16"), std::string::npos) << bad.out;
}

TEST_F(PrecisionCli, ProfilePrintsT5TableAndWritesAChromeTrace) {
  const std::string out = dir.path("prof");
  const std::string trace = dir.path("trace.json");
  const auto r = bb("train --config " + cfg() + " --out " + out + " --set precision=fp32 --profile --profile-trace " +
                    trace);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  for (const char* row : {"| whole program |", "| train / fit |", "| backward |", "| forward (encode, decode) |",
                          "| optimizer step |", "| loss |", "| data (batch slices, shuffle) |", "CPU time"})
    EXPECT_NE(r.out.find(row), std::string::npos) << row << "\n" << r.out;
  const json rep = report(out, "training", "training_report.json");
  const json& ph = rep["profile"]["phases"];
  EXPECT_EQ(ph["backward"]["count"], 3 * 8);  // 2000 rows / 256 = 8 batches
  EXPECT_EQ(ph["encode"]["count"], 3 * 8);
  EXPECT_LE(rep["profile"]["phase_sum_s"].get<double>(), rep["train_s"].get<double>());
  EXPECT_EQ(rep["profile"]["timer"], "host clock");
  ASSERT_TRUE(fs::exists(trace));
  EXPECT_FALSE(fs::exists(trace + ".partial"));
  const json t = json::parse(read_text(trace));  // Chrome trace: an array of complete ("X") events
  ASSERT_TRUE(t.is_array());
  int backward = 0, products = 0;  // the fused engine's forward products are aten::mm (the bias is in its loop)
  for (const auto& e : t) {
    ASSERT_EQ(e["ph"], "X");
    backward += e["name"] == "balerbench::backward";
    products += e["name"] == "aten::mm" || e["name"] == "aten::addmm";
  }
  EXPECT_EQ(backward, 24);
  EXPECT_GT(products, 0);
  EXPECT_EQ(rep["profile"]["trace"]["events"].get<int64_t>(), static_cast<int64_t>(t.size()));

  const auto c = bb("compress --config " + cfg() + " --out " + out + " --set precision=fp32 --profile");
  ASSERT_EQ(c.exit_code, 0) << c.out;
  EXPECT_NE(c.out.find("| compress (all chunks) |"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("| encode |"), std::string::npos) << c.out;
}

TEST_F(PrecisionCli, ProfileTraceNeedsProfileAndAnExistingFolder) {
  const auto a = bb("train --config " + cfg() + " --out " + dir.path("a") + " --set profile_trace=t.json");
  EXPECT_EQ(a.exit_code, 2) << a.out;
  EXPECT_NE(a.out.find("--set profile_trace=t.json: needs profile: true"), std::string::npos) << a.out;
  const auto b = bb("train --config " + cfg() + " --out " + dir.path("b") + " --profile --profile-trace " +
                    dir.path("no/such/dir/t.json"));
  EXPECT_EQ(b.exit_code, 2) << b.out;
  EXPECT_NE(b.out.find("does not exist"), std::string::npos) << b.out;
  EXPECT_FALSE(fs::exists(dir.path("b") + "/training/model.pt"));
}

TEST_F(PrecisionCli, GradScalerSectionIsStrict) {
  const auto r = bb("train --config " + cfg() + " --out " + dir.path("g") + " --set grad_scaler.backoff_factor=2");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("--set grad_scaler.backoff_factor=2: "), std::string::npos) << r.out;
  const auto u = bb("train --config " + cfg() + " --out " + dir.path("g") + " --set grad_scaler.growth=2");
  EXPECT_EQ(u.exit_code, 2) << u.out;
  EXPECT_NE(u.out.find("growth"), std::string::npos) << u.out;
}

// Engines through the CLI: auto says what it chose, both engines write the same files and reports,
// the fused engine learns what libtorch learns, and a model it cannot train is exit 2.
TEST_F(PrecisionCli, EnginesWriteTheSameOutputsAndSayWhatRan) {
  std::map<std::string, json> reports;
  for (const char* engine : {"libtorch", "fused", "auto"}) {
    const std::string out = dir.path(std::string("e_") + engine);
    const auto r = bb("train --config " + cfg() + " --out " + out + " --engine " + engine + " --set threads=1");
    ASSERT_EQ(r.exit_code, 0) << r.out;
    const json rep = report(out, "training", "training_report.json");
    reports[engine] = rep;
    EXPECT_EQ(rep["threads"]["source"], "config");
    EXPECT_EQ(json::parse(read_text(out + "/training/run_config.json"))["engine"], engine);
    const auto c = bb("compress --config " + cfg() + " --out " + out + " --engine " + engine);
    ASSERT_EQ(c.exit_code, 0) << c.out;
    const auto d = bb("decompress --config " + cfg() + " --out " + out + " --engine " + engine);
    ASSERT_EQ(d.exit_code, 0) << d.out;
    EXPECT_TRUE(fs::exists(out + "/decompressed_output/decompressed.npz"));
    EXPECT_EQ(report(out, "compressed_output", "compress_report.json")["engine"]["name"],
              std::string(engine) == "libtorch" ? "libtorch" : "fused");
  }
  EXPECT_EQ(reports["libtorch"]["engine"], json({{"name", "libtorch"}}));
  EXPECT_EQ(reports["fused"]["engine"]["name"], "fused");
  EXPECT_EQ(reports["fused"]["engine"]["workers"], 1);
  EXPECT_EQ(reports["auto"]["engine"]["note"], "auto: fused (AE, fp64, cpu)");
  // fp64, one thread: the same losses to rounding.
  const double a = reports["libtorch"]["final_train_loss"], f = reports["fused"]["final_train_loss"];
  EXPECT_NEAR(f, a, 1e-9 * a);

  const auto shown = bb("train --config " + cfg() + " --out " + dir.path("shown") + " --engine auto");
  ASSERT_EQ(shown.exit_code, 0) << shown.out;
  EXPECT_NE(shown.out.find("engine fused ("), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find("; auto: fused (AE, fp64, cpu)"), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find("\nthreads "), std::string::npos) << shown.out;

  const std::string bad = dir.path("bad");
  const auto r = bb("train --config " + cfg() + " --out " + bad + " --engine fused --set model_name=AE_Dropout_BN");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("engine 'fused' cannot train this run: AE_Dropout_BN has dropout"), std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(bad + "/training/training_report.json"));
  const auto unknown = bb("train --config " + cfg() + " --out " + bad + " --engine turbo");
  EXPECT_EQ(unknown.exit_code, 2) << unknown.out;
  EXPECT_NE(unknown.out.find("--engine: invalid value 'turbo'"), std::string::npos) << unknown.out;
}

// What CI once caught: two runs of one config differed in their bits when the calibration (threads
// = 0, a timing) picked another thread count, because the fused engine's shards followed the threads.
// fp32 and fp64, threads 1, 2 and calibrated: the same model file, losses and compressed data, and
// the reports say the same shards.
TEST_F(PrecisionCli, TheThreadCountNeverChangesWhatATrainingWrites) {
  for (const char* precision : {"fp32", "fp64"}) {
    SCOPED_TRACE(precision);
    std::vector<std::string> outs;
    for (const char* threads : {"1", "2", "0"}) {
      const std::string out = dir.path(std::string("t_") + precision + "_" + threads);
      const std::string set = std::string(" --engine fused --set precision=") + precision + " --set threads=" + threads;
      const auto r = bb("train --config " + cfg() + " --out " + out + set);
      ASSERT_EQ(r.exit_code, 0) << r.out;
      const auto c = bb("compress --config " + cfg() + " --out " + out + set);
      ASSERT_EQ(c.exit_code, 0) << c.out;
      outs.push_back(out);
    }
    const json first = report(outs[0], "training", "training_report.json");
    EXPECT_EQ(first["engine"]["workers"], 1);
    for (std::size_t i = 1; i < outs.size(); ++i) {
      SCOPED_TRACE(outs[i]);
      EXPECT_EQ(read_text(outs[i] + "/training/model.pt"), read_text(outs[0] + "/training/model.pt"));
      EXPECT_EQ(read_npy(outs[i] + "/training/loss_data.npy").to_doubles(),
                read_npy(outs[0] + "/training/loss_data.npy").to_doubles());
      EXPECT_EQ(read_npz(outs[i] + "/compressed_output/compressed.npz").at("data").to_doubles(),
                read_npz(outs[0] + "/compressed_output/compressed.npz").at("data").to_doubles());
      EXPECT_EQ(report(outs[i], "training", "training_report.json")["engine"]["shards"], first["engine"]["shards"]);
      EXPECT_EQ(report(outs[i], "compressed_output", "compress_report.json")["engine"]["shards"],
                first["engine"]["shards"]);
    }
  }
  // Shards set by hand: recorded; a count out of range is refused before any work.
  const std::string one = dir.path("one_shard");
  const auto r = bb("train --config " + cfg() + " --out " + one + " --engine fused --set fused_shards=3 --set threads=2");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(report(one, "training", "training_report.json")["engine"]["shards"], 3);
  EXPECT_EQ(report(one, "training", "training_report.json")["engine"]["workers"], 2);
  for (const char* bad : {"-1", "257", "two"}) {
    const auto b = bb("train --config " + cfg() + " --out " + dir.path("bad_shards") + " --set fused_shards=" + bad);
    EXPECT_EQ(b.exit_code, 2) << b.out;
    EXPECT_NE(b.out.find("fused_shards"), std::string::npos) << b.out;
    EXPECT_FALSE(fs::exists(dir.path("bad_shards/training/model.pt")));
  }
}

}  // namespace
}  // namespace balerbench
