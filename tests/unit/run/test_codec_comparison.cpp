// test_codec_comparison.cpp: the classical codecs beside Baler (run/codec_comparison.h): the tolerance
// matched to Baler's maximum error, the decoder's bytes in the ratio, and energy windows against a
// meter whose truth is known.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cmath>
#include <vector>

#include "common/error.h"
#include "datasets/dataset.h"
#include "harness/energy/energy_settings.h"
#include "harness/report/tables.h"
#include "harness/run/codec_comparison.h"
#include "harness/run/result_sections.h"
#include "harness/run/training_session.h"
#include "tests/test_util.h"
#include "tests/unit/table_values.h"

namespace balerbench {
namespace {

using nlohmann::json;

// A dataset of `rows` CMS-like rows (float64), and Baler's side with a reconstruction that is the data
// plus `error` at one element (so Baler's max abs error is exactly `error`).
struct Fixture {
  explicit Fixture(double error, int64_t rows = 600) {
    const std::vector<double> v = table_values(rows, 8, 1, false);
    ds.data = at::from_blob(const_cast<double*>(v.data()), {rows, 8}, at::kDouble).clone();
    ds.original_shape = {rows, 8};
    ds.source_path = "fixture";
    baler.reconstruction = ds.data.clone();
    baler.reconstruction[rows / 2][3] += error;
    baler.latent_bytes = rows * 5 * 4;  // 5 float32 latent columns
    baler.model_bytes = 12345;
    baler.normalization_bytes = 321;
    baler.engine = "fused";
    baler.compress.duration_s = 0.002;
    baler.decompress.duration_s = 0.003;
    keys.min_window_s = 0.001;
  }
  Dataset ds;
  BalerCodecSide baler;
  RunConfig::CodecsKeys keys;
};

const json& row_of(const json& cmp, const std::string& codec) {
  for (const json& r : cmp["codecs"])
    if (r["codec"] == codec) return r;
  static const json none;
  ADD_FAILURE() << "no row " << codec;
  return none;
}

TEST(CodecComparison, ToleranceIsBalersMaxErrorAndTheDecoderCountsExactly) {
  Fixture f(0.5);
  const json cmp = compare_codecs(f.ds, f.baler, nullptr, f.keys);
  const int64_t original = 600 * 8 * 8;
  EXPECT_EQ(cmp["original_bytes"], original);
  EXPECT_DOUBLE_EQ(cmp["tolerance"].get<double>(), 0.5);
  const json& b = row_of(cmp, "baler");
  EXPECT_DOUBLE_EQ(b["error"]["max_abs"].get<double>(), 0.5);
  EXPECT_EQ(b["decoder_bytes"], 12345 + 321);
  EXPECT_DOUBLE_EQ(b["ratio"].get<double>(), static_cast<double>(original) / (600 * 5 * 4));
  EXPECT_DOUBLE_EQ(b["ratio_with_decoder"].get<double>(),
                   static_cast<double>(original) / (600 * 5 * 4 + 12345 + 321));
  const json& z = row_of(cmp, "zfp_accuracy");
  EXPECT_DOUBLE_EQ(z["tolerance"].get<double>(), 0.5);
  EXPECT_TRUE(z["bound_held"].get<bool>());
  EXPECT_LE(z["error"]["max_abs"].get<double>(), 0.5);
  // Per column: Baler's error is 0.5 in column 3 and 0 elsewhere, so the others are lossless.
  const json& zc = row_of(cmp, "zfp_columns");
  EXPECT_TRUE(zc["bound_held"].get<bool>());
  EXPECT_EQ(zc["column_tolerances"], json({0.0, 0.0, 0.0, 0.5, 0.0, 0.0, 0.0, 0.0}));
  EXPECT_NE(zc["setting"].get<std::string>().find("7 exact columns lossless"), std::string::npos) << zc["setting"];
  // ZFP at Baler's ratio: within its header of it.
  EXPECT_NEAR(row_of(cmp, "zfp_rate")["ratio"].get<double>(), b["ratio"].get<double>(), 0.05);
  EXPECT_EQ(row_of(cmp, "zstd")["error"]["max_abs"], 0.0);
  EXPECT_EQ(cmp["basis"], "time");  // no meters
  for (const char* codec : {"baler", "zfp_accuracy", "zfp_columns", "zfp_rate", "zstd", "float16", "bfloat16"})
    EXPECT_GE(row_of(cmp, codec)["compress"]["repeats"].get<int64_t>(), 1) << codec;
}

TEST(CodecComparison, AFloat16OverflowIsInfiniteAndTheTableSaysInf) {
  Fixture f(0.5);
  f.ds.data[0][0] = 1e6;  // beyond float16's 65504
  f.baler.reconstruction[0][0] = 1e6;
  const json cmp = compare_codecs(f.ds, f.baler, nullptr, f.keys);
  const json& h = row_of(cmp, "float16");
  EXPECT_FALSE(h["error"]["finite"].get<bool>());
  EXPECT_TRUE(h["error"]["max_abs"].is_null());
  EXPECT_EQ(h["overflow"], 1);
  EXPECT_NE(h["notes"][0].get<std::string>().find("overflow"), std::string::npos) << h["notes"];
  const Table t = codecs_table(cmp, "t");
  bool inf = false;
  for (const auto& row : t.rows)
    if (row[0] == "float16") inf = row[4] == "inf" && row[5] == "inf";
  EXPECT_TRUE(inf);
}

TEST(CodecComparison, AnExactBalerLeavesZfpAccuracyOutAndSaysSo) {
  Fixture f(0.0);
  const json cmp = compare_codecs(f.ds, f.baler, nullptr, f.keys);
  for (const json& r : cmp["codecs"]) EXPECT_NE(r["codec"], "zfp_accuracy");
  bool said = false;
  for (const json& n : cmp["notes"]) said |= n.get<std::string>().find("exact here") != std::string::npos;
  EXPECT_TRUE(said) << cmp["notes"];
}

TEST(CodecComparison, EnergyWindowsFollowAMeterOfKnownPowerAndTheTrainingIsAmortised) {
  // The simulated GPU at a fixed load draws 60 + (300 - 60) x 0.5 = 180 W, whatever runs: every
  // window's energy is 180 W x its duration, exactly.
  const EnergySettings settings = parse_energy_settings(
      {{"meters", {"simulated_gpu"}},
       {"sample_hz", 0},
       {"simulated_gpu", {{"idle_power_w", 60}, {"max_power_w", 300}, {"min_limit_w", 100}, {"max_limit_w", 300},
                          {"power_limit_w", 300}, {"load", 0.5}}}},
      "test", "/energy", ".");
  const std::unique_ptr<EnergySession> energy = open_energy_session(settings, c10::Device(c10::kCPU), "");
  ASSERT_TRUE(energy);
  Fixture f(0.5);
  f.keys.min_window_s = 0.02;
  f.keys.uses = {1, 10, 1000};
  // Baler's own windows, in the same session.
  f.baler.compress = measure_repeated(energy.get(), "codecs:baler:compress", 0.02, [] {});
  f.baler.decompress = measure_repeated(energy.get(), "codecs:baler:decompress", 0.02, [] {});
  f.baler.train_s = 2.0;
  f.baler.train_energy_j = 360.0;
  const json cmp = compare_codecs(f.ds, f.baler, energy.get(), f.keys);
  EXPECT_EQ(cmp["basis"], "energy");
  const double mb = 600 * 8 * 8 / 1e6;
  for (const json& r : cmp["codecs"])
    for (const char* dir : {"compress", "decompress"}) {
      const json& p = r[dir];
      SCOPED_TRACE(r["codec"].get<std::string>() + " " + dir);
      EXPECT_NEAR(p["energy_j"].get<double>(), 180.0 * p["duration_s"].get<double>(),
                  1e-6 * 180.0 * p["duration_s"].get<double>() + 1e-12);
      EXPECT_NEAR(p["j_per_mb"].get<double>(), p["energy_j"].get<double>() / mb, 1e-9);
      EXPECT_NEAR(p["duration_s"].get<double>() * p["repeats"].get<double>(), 0.02, 0.5);
    }
  const json& b = row_of(cmp, "baler");
  const double baler_cd = b["j_per_mb"].get<double>();
  ASSERT_EQ(b["amortised"].size(), 3u);
  EXPECT_NEAR(b["amortised"][1]["j_per_mb"].get<double>(), 360.0 / mb / 10 + baler_cd, 1e-9);
  for (const json& e : b["break_even"]) {
    const json& other = row_of(cmp, e["codec"].get<std::string>());
    const bool accurate = other["error"]["max_abs"].is_number() && other["error"]["max_abs"].get<double>() <= 0.5;
    if (!accurate) {
      EXPECT_TRUE(e["uses"].is_null()) << e;
      continue;
    }
    const double x = other["j_per_mb"].get<double>();
    if (x <= baler_cd) {
      EXPECT_TRUE(e["uses"].is_null()) << e;
    } else {
      const double n = e["uses"].get<double>();
      EXPECT_LT(360.0 / mb / n + baler_cd, x) << e;        // cheaper from n on
      EXPECT_GE(360.0 / mb / (n - 1) + baler_cd, x) << e;  // and not before
    }
  }
}

}  // namespace
}  // namespace balerbench
