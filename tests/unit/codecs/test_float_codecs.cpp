// test_float_codecs.cpp: the classical codecs (codecs/float_codecs.h): ZFP's bound on every element,
// Zstandard bit for bit, the downcasts' rounding and counts, the error measures.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#if defined(__SSE2__)
#include <pmmintrin.h>
#include <xmmintrin.h>
#endif

#include "common/error.h"
#include "datasets/dataset.h"
#include "harness/codecs/float_codecs.h"
#include "harness/run/result_sections.h"
#include "tests/test_util.h"
#include "tests/unit/table_values.h"

namespace balerbench {
namespace {

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

#if defined(__SSE2__)
// A run flushes subnormals on its threads (flush_denormal: FTZ and DAZ); Zstandard stays lossless
// there, and the thread's mode is as it was afterwards.
TEST(FloatCodecs, ZstdKeepsSubnormalsWhereTheRunFlushesThem) {
  const unsigned ftz = _MM_GET_FLUSH_ZERO_MODE(), daz = _MM_GET_DENORMALS_ZERO_MODE();
  _MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_ON);
  _MM_SET_DENORMALS_ZERO_MODE(_MM_DENORMALS_ZERO_ON);
  std::vector<double> x = table_values(64, 3, 5, true);
  x[1] = std::numeric_limits<float>::denorm_min();
  x[2] = -std::numeric_limits<float>::min() / 8;
  const ZstdResult z = zstd_encode(FloatTable{x.data(), 64, 3, 4}, 3);
  std::vector<double> y;
  zstd_decode(z.bytes, y);
  const bool flushing = _MM_GET_FLUSH_ZERO_MODE() == _MM_FLUSH_ZERO_ON && _MM_GET_DENORMALS_ZERO_MODE() == _MM_DENORMALS_ZERO_ON;
  _MM_SET_FLUSH_ZERO_MODE(ftz);
  _MM_SET_DENORMALS_ZERO_MODE(daz);
  EXPECT_TRUE(flushing) << "the codec must put the thread's mode back";
  ASSERT_EQ(y.size(), x.size());
  EXPECT_EQ(std::memcmp(y.data(), x.data(), x.size() * sizeof(double)), 0);
  EXPECT_EQ(y[1], std::numeric_limits<float>::denorm_min());
}
#endif

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

}  // namespace
}  // namespace balerbench
