// test_codecs.cpp: the classical codecs (codecs/float_codecs.h) and the comparison with Baler
// (run/codec_comparison.h): ZFP's bound on every element, Zstandard bit for bit, the downcasts'
// rounding and counts, the error measures, the tolerance matched to Baler's maximum error, the
// decoder's bytes in the ratio, and energy windows against a meter whose truth is known.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "common/error.h"
#include "datasets/dataset.h"
#include "harness/energy/energy_settings.h"
#include "harness/codecs/float_codecs.h"
#include "harness/report/tables.h"
#include "harness/run/codec_comparison.h"
#include "harness/run/result_sections.h"
#include "harness/run/training_session.h"

namespace balerbench {
namespace {

using nlohmann::json;

// rows x cols values: columns of very different scales and offsets (as CMS-like tables have), one
// constant column, one column of zeros; `as_float` rounds every value to float32.
std::vector<double> table_values(int64_t rows, int64_t cols, uint64_t seed, bool as_float) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> normal;
  std::vector<double> v(static_cast<std::size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      double x = std::pow(10.0, static_cast<double>(c % 7) - 3) * (normal(gen) + 0.3 * std::sin(0.01 * r)) + 5.0 * c;
      if (c == 1) x = 42.25;
      if (c == 2) x = 0;
      v[static_cast<std::size_t>(r * cols + c)] = as_float ? static_cast<float>(x) : x;
    }
  return v;
}

TEST(FloatCodecs, ZfpFixedAccuracyBoundHoldsOnEveryElement) {
  for (bool as_float : {false, true})
    for (int64_t rows : {1, 3, 1001}) {
      const std::vector<double> x = table_values(rows, 9, 7 + rows, as_float);
      const FloatTable t{x.data(), rows, 9, as_float ? 4 : 8};
      for (double tol : {10.0, 1e-2, 1e-5}) {
        SCOPED_TRACE(std::to_string(rows) + " rows, tolerance " + std::to_string(tol) + (as_float ? " float32" : " float64"));
        const std::vector<uint8_t> bytes = zfp_encode(t, ZfpMode::kAccuracy, tol);
        std::vector<double> y;
        zfp_decode(bytes, y);
        ASSERT_EQ(y.size(), x.size());
        int64_t over = 0;
        for (std::size_t i = 0; i < x.size(); ++i) over += std::fabs(y[i] - x[i]) > tol;
        EXPECT_EQ(over, 0);
        EXPECT_LE(error_metrics(t, y.data()).max_abs, tol);
      }
    }
}

TEST(FloatCodecs, ZfpPerColumnToleranceHoldsColumnByColumnAndZeroIsExact) {
  for (bool as_float : {false, true}) {
    const std::vector<double> x = table_values(513, 5, 9, as_float);
    const FloatTable t{x.data(), 513, 5, as_float ? 4 : 8};
    const std::vector<double> tol = {1e-3, 0, 10, 1e-6, 0.5};
    const std::vector<uint8_t> bytes = zfp_encode_columns(t, tol);
    std::vector<double> y;
    zfp_decode(bytes, y);
    for (int64_t r = 0; r < 513; ++r)
      for (int c = 0; c < 5; ++c) {
        const double d = std::fabs(y[r * 5 + c] - x[r * 5 + c]);
        if (tol[c] == 0)
          ASSERT_EQ(y[r * 5 + c], x[r * 5 + c]) << r << ", " << c;
        else
          ASSERT_LE(d, tol[c]) << r << ", " << c;
      }
  }
  const std::vector<double> x = {1, 2};
  EXPECT_THROW(zfp_encode_columns(FloatTable{x.data(), 1, 2, 8}, {1.0}), InputError);
  EXPECT_THROW(zfp_encode_columns(FloatTable{x.data(), 1, 2, 8}, {1.0, -1.0}), InputError);
}

TEST(FloatCodecs, ZfpFixedRateGivesItsRatio) {
  const std::vector<double> x = table_values(4096, 6, 3, false);
  const FloatTable t{x.data(), 4096, 6, 8};
  const std::vector<uint8_t> bytes = zfp_encode(t, ZfpMode::kRate, 16);
  EXPECT_DOUBLE_EQ(zfp_actual_rate(8, 16), 16);
  // 16 bits of 64: 4x, less the header (32 bytes and 16 per column).
  const double ratio = static_cast<double>(t.original_bytes()) / static_cast<double>(bytes.size());
  EXPECT_NEAR(ratio, 4.0, 0.02);
  std::vector<double> y;
  zfp_decode(bytes, y);
  EXPECT_GT(error_metrics(t, y.data()).max_abs, 0);  // lossy at that rate
}

TEST(FloatCodecs, ZstdRoundTripsBitForBit) {
  for (bool as_float : {false, true}) {
    std::vector<double> x = table_values(777, 5, 11, as_float);
    x[3] = -0.0;
    x[4] = as_float ? std::numeric_limits<float>::denorm_min() : std::numeric_limits<double>::denorm_min();
    x[5] = as_float ? std::numeric_limits<float>::max() : std::numeric_limits<double>::max();
    const FloatTable t{x.data(), 777, 5, as_float ? 4 : 8};
    const ZstdResult z = zstd_encode(t, 3);
    EXPECT_EQ(static_cast<int64_t>(z.bytes.size()), z.shuffled ? z.shuffled_bytes : z.plain_bytes);
    EXPECT_EQ(static_cast<int64_t>(z.bytes.size()), std::min(z.plain_bytes, z.shuffled_bytes));
    std::vector<double> y;
    zstd_decode(z.bytes, y);
    ASSERT_EQ(y.size(), x.size());
    EXPECT_EQ(std::memcmp(y.data(), x.data(), x.size() * sizeof(double)), 0) << (as_float ? "float32" : "float64");
  }
}

uint16_t bits_of(c10::Half h) { return h.x; }
uint16_t bits_of(c10::BFloat16 h) { return h.x; }

TEST(FloatCodecs, DowncastsRoundToNearestEvenAndCountWhatTheyLose) {
  // float32 inputs: c10's conversions (round to nearest even from float) are the reference.
  std::mt19937_64 gen(5);
  std::uniform_real_distribution<double> exponent(-30, 20), mantissa(1, 2);
  std::vector<double> x;
  for (int i = 0; i < 20000; ++i)
    x.push_back(static_cast<float>((i % 2 ? -1 : 1) * mantissa(gen) * std::pow(2.0, std::floor(exponent(gen)))));
  const FloatTable t{x.data(), static_cast<int64_t>(x.size()), 1, 4};
  const Downcast h = downcast(t, HalfKind::kFloat16), b = downcast(t, HalfKind::kBFloat16);
  int64_t overflow = 0, subnormal = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float f = static_cast<float>(x[i]);
    ASSERT_EQ(h.values[i], bits_of(c10::Half(f))) << x[i];
    ASSERT_EQ(b.values[i], bits_of(c10::BFloat16(f))) << x[i];
    overflow += std::fabs(x[i]) >= 65520;
    subnormal += std::fabs(x[i]) < std::ldexp(1.0, -14);
  }
  EXPECT_EQ(h.overflow, overflow);
  EXPECT_EQ(h.subnormal, subnormal);
  EXPECT_GT(h.overflow, 0);
  EXPECT_EQ(b.overflow, 0);
  // Values that c10 does not reach: float64 ties, and the edges of float16's range.
  const std::vector<double> edge = {65504, 65519.99, 65520, 1 + std::ldexp(1.0, -11), 1 + 3 * std::ldexp(1.0, -11),
                                    std::ldexp(1.0, -25), std::ldexp(1.0, -25) * 1.0001, 1e-30};
  const FloatTable e{edge.data(), static_cast<int64_t>(edge.size()), 1, 8};
  const Downcast d = downcast(e, HalfKind::kFloat16);
  EXPECT_EQ(d.values[0], 0x7BFF);
  EXPECT_EQ(d.values[1], 0x7BFF);
  EXPECT_EQ(d.values[2], 0x7C00);  // the tie rounds to even: infinity
  EXPECT_EQ(d.values[3], 0x3C00);  // 1 + half an ulp: to even (1)
  EXPECT_EQ(d.values[4], 0x3C02);  // 1 + 1.5 ulp: to even (1 + 2 ulp)
  EXPECT_EQ(d.values[5], 0x0000);  // half the smallest subnormal: to even (0)
  EXPECT_EQ(d.values[6], 0x0001);
  EXPECT_EQ(d.overflow, 1);
  EXPECT_EQ(d.flushed_to_zero, 2);
  std::vector<double> y;
  upcast(d, HalfKind::kFloat16, y);
  EXPECT_EQ(y[0], 65504);
  EXPECT_TRUE(std::isinf(y[2]));
  EXPECT_FALSE(error_metrics(e, y.data()).finite);
}

TEST(FloatCodecs, ErrorMeasuresAsBalerAndSdrbenchReadThem) {
  // 2 rows x 3 columns; column 1 is all zeros (no relative error there).
  const std::vector<double> x = {1, 0, 10, 3, 0, 20};
  const std::vector<double> y = {1.5, 0.25, 10, 3, 0, 18};
  const FloatTable t{x.data(), 2, 3, 8};
  const ErrorMetrics m = error_metrics(t, y.data());
  EXPECT_DOUBLE_EQ(m.max_abs, 2);
  EXPECT_DOUBLE_EQ(m.rmse, std::sqrt((0.25 + 0.0625 + 4) / 6));
  ASSERT_TRUE(m.psnr_db);
  EXPECT_DOUBLE_EQ(*m.psnr_db, 20 * std::log10(20 / m.rmse));
  ASSERT_EQ(m.column_relative_rms_pct.size(), 3u);
  EXPECT_DOUBLE_EQ(*m.column_relative_rms_pct[0], std::sqrt((50.0 * 50.0 + 0) / 2));
  EXPECT_FALSE(m.column_relative_rms_pct[1]);
  EXPECT_DOUBLE_EQ(*m.column_relative_rms_pct[2], std::sqrt((0 + 10.0 * 10.0) / 2));
  EXPECT_EQ(m.relative_left_out, 2);
  EXPECT_EQ(m.worst_column, 0);
  const ErrorMetrics exact = error_metrics(t, x.data());
  EXPECT_EQ(exact.rmse, 0);
  EXPECT_FALSE(exact.psnr_db);  // exact: no PSNR
  const std::vector<double> flat = {7, 7, 7, 7};
  const FloatTable c{flat.data(), 4, 1, 8};
  const std::vector<double> off = {7.5, 7, 7, 7};
  EXPECT_FALSE(error_metrics(c, off.data()).psnr_db);  // a constant table has no range
}

// Errors of data near 1e301 are finite and the same in both places that measure them (was: info
// printed "RMSE inf" from an overflowed sum of squares, while codecs printed "-").
TEST(FloatCodecs, ErrorsOfHugeValuesDoNotOverflow) {
  const std::vector<double> x = {1e301, -2e301, 3e301, 4e301};
  const std::vector<double> y = {1.5e301, -2e301, 3e301, 3e301};
  const FloatTable t{x.data(), 2, 2, 8};
  const ErrorMetrics m = error_metrics(t, y.data());
  ASSERT_TRUE(m.finite);
  const double expected = 1e301 * std::sqrt((0.25 + 0 + 0 + 1) / 4);
  EXPECT_NEAR(m.rmse / expected, 1.0, 1e-12);
  Dataset ds;
  ds.data = at::tensor(x, at::kDouble).reshape({2, 2});
  ds.original_shape = {2, 2};
  const nlohmann::json r = reconstruction_json(ds, at::tensor(y, at::kDouble).reshape({2, 2}));
  EXPECT_NEAR(r["rmse"].get<double>() / expected, 1.0, 1e-12) << r.dump();
  EXPECT_TRUE(std::isfinite(r["normalized_rmse"].get<double>())) << r.dump();
  EXPECT_TRUE(std::isfinite(r["worst_feature_normalized_rmse"].get<double>())) << r.dump();
}

// Subnormal values are counted from their bits, whatever the flush-to-zero mode, and a config that
// flushes them says so on stderr (was: flushed to zero without a word).
TEST(FloatCodecs, SubnormalDataAreCountedAndWarnedAbout) {
  const double tiny = 1e-310, smallest_normal = std::numeric_limits<double>::min();
  const at::Tensor x = at::tensor(std::vector<double>{tiny, -tiny, 0.0, smallest_normal, 1.0, 5e-324}, at::kDouble);
  EXPECT_EQ(count_subnormal(x), 3);
  Dataset ds;
  ds.source_path = "tiny.npz";
  ds.subnormal_values = 3;
  RunConfig c;
  c.flush_denormal = true;
  EXPECT_NE(subnormal_warning(ds, c).find("tiny.npz: 3 values are subnormal"), std::string::npos);
  EXPECT_NE(subnormal_warning(ds, c).find("--set flush_denormal=false"), std::string::npos);
  c.flush_denormal = false;
  EXPECT_EQ(subnormal_warning(ds, c), "");
  ds.subnormal_values = 0;
  c.flush_denormal = true;
  EXPECT_EQ(subnormal_warning(ds, c), "");
  // Below float32's smallest normal: subnormal when the file or the model holds float32.
  EXPECT_EQ(count_float32_subnormal(at::tensor(std::vector<double>{1e-39, -1e-40, 0.0, 1e-37}, at::kDouble)), 2);
  ds.float32_subnormal_values = 2;
  c.model_name = "AE";  // float64
  EXPECT_EQ(subnormal_warning(ds, c), "");
  ds.source_dtype = "float32";
  EXPECT_NE(subnormal_warning(ds, c).find("2 values are subnormal (0 < |x| < 1.2e-38, in float32)"), std::string::npos);
  ds.source_dtype = "float64";
  c.model_name = "CFD_dense_AE";  // float32
  EXPECT_NE(subnormal_warning(ds, c).find("in float32"), std::string::npos);
}

TEST(FloatCodecs, BadInputIsAClearError) {
  const std::vector<double> x = {1, 2, 3, 4};
  const FloatTable t{x.data(), 2, 2, 8};
  for (double tol : {0.0, -1.0, std::nan(""), HUGE_VAL}) {
    try {
      zfp_encode(t, ZfpMode::kAccuracy, tol);
      FAIL() << "tolerance " << tol << " must be refused";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("tolerance"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("hint: an exact copy is zstd"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(zfp_encode(t, ZfpMode::kRate, 0), InputError);
  EXPECT_THROW(zfp_encode(FloatTable{x.data(), 0, 2, 8}, ZfpMode::kAccuracy, 1), InputError);
  EXPECT_THROW(zstd_encode(t, 0), InputError);
  EXPECT_THROW(zstd_encode(t, 23), InputError);
  EXPECT_THROW(downcast(FloatTable{x.data(), 2, 2, 2}, HalfKind::kFloat16), InputError);
  std::vector<double> y;
  EXPECT_THROW(zfp_decode({1, 2, 3}, y), InputError);
  std::vector<uint8_t> z = zstd_encode(t, 3).bytes;
  z.resize(z.size() - 3);
  EXPECT_THROW(zstd_decode(z, y), InputError);
}

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
