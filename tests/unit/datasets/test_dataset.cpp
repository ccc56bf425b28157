// test_dataset.cpp: Dataset loading and validation; min-max normalization.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cmath>
#include <limits>

#include "datasets/dataset.h"
#include "common/error.h"
#include "datasets/normalizer.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

TEST(Dataset, LoadsTablesAndFlattensFrames) {
  TempDir dir;
  write_npz(dir.path("t.npz"), {{"data", NpyArray::from_doubles({2, 3}, {1, 2, 3, 4, 5, 6})},
                                {"names", NpyArray::from_strings({"a", "b", "c"})}});
  Dataset t = load_dataset(dir.path("t.npz"));
  EXPECT_EQ(t.data_dimension(), 1);
  EXPECT_EQ(t.names, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(t.data.sizes(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(t.data.scalar_type(), at::kDouble);
  std::vector<double> frames(2 * 2 * 3);
  for (std::size_t i = 0; i < frames.size(); ++i) frames[i] = static_cast<double>(i);
  write_npz(dir.path("f.npz"), {{"data", NpyArray::from_doubles({2, 2, 3}, frames)},
                                {"names", NpyArray::from_doubles({0}, {})}});
  Dataset f = load_dataset(dir.path("f.npz"));
  EXPECT_EQ(f.data_dimension(), 2);
  EXPECT_EQ(f.data.sizes(), (std::vector<int64_t>{2, 6}));
  EXPECT_EQ(f.data[1][4].item<double>(), 10.0);  // row-major flattening
  EXPECT_EQ(f.original_shape, (std::vector<int64_t>{2, 2, 3}));
}

TEST(Dataset, ConvertsOtherNumericDtypes) {
  TempDir dir;
  write_npz(dir.path("i.npz"), {{"data", NpyArray::from_int64({2, 2}, {1, -2, 3, 4})}});
  Dataset d = load_dataset(dir.path("i.npz"));
  EXPECT_EQ(d.source_dtype, "int64");
  EXPECT_EQ(d.data[0][1].item<double>(), -2.0);
}

TEST(Dataset, Errors) {
  TempDir dir;
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  write_npz(dir.path("nan.npz"), {{"data", NpyArray::from_doubles({3, 3}, {1, 2, 3, 4, nan, inf, 7, nan, 9})},
                                  {"names", NpyArray::from_strings({"a", "b", "c"})}});
  expect_input_error([&] { load_dataset(dir.path("nan.npz")); },
                     "column 1 ('b') has 2 non-finite values (2 NaN, 0 Inf), first at row 1; 2 column(s) affected");
  write_npz(dir.path("nodata.npz"), {{"x", NpyArray::from_doubles({1, 1}, {1})}});
  expect_input_error([&] { load_dataset(dir.path("nodata.npz")); }, "no 'data' array in the .npz (found: x)");
  write_npz(dir.path("empty.npz"), {{"data", NpyArray::from_doubles({0, 24}, {})}});
  expect_input_error([&] { load_dataset(dir.path("empty.npz")); }, "zero rows");
  write_npz(dir.path("str.npz"), {{"data", NpyArray::from_strings({"a"})}});
  expect_input_error([&] { load_dataset(dir.path("str.npz")); }, "strings");
  write_npz(dir.path("1d.npz"), {{"data", NpyArray::from_doubles({3}, {1, 2, 3})}});
  expect_input_error([&] { load_dataset(dir.path("1d.npz")); }, "1 dimensions");
  write_npz(dir.path("names.npz"), {{"data", NpyArray::from_doubles({1, 2}, {1, 2})},
                                    {"names", NpyArray::from_strings({"a"})}});
  expect_input_error([&] { load_dataset(dir.path("names.npz")); }, "'names' has 1 entries but 'data' has 2 columns");
}

TEST(Normalization, MinMaxPerColumnAsBaler) {
  const at::Tensor x = at::tensor({1.0, 10.0, 3.0, 20.0, 5.0, 30.0}, at::kDouble).view({3, 2});
  const Normalization n = Normalization::fit(x);
  EXPECT_TRUE(at::allclose(n.min, at::tensor({1.0, 10.0}, at::kDouble)));
  EXPECT_TRUE(at::allclose(n.range, at::tensor({4.0, 20.0}, at::kDouble)));
  const at::Tensor y = n.apply(x);
  EXPECT_TRUE(at::allclose(y, at::tensor({0.0, 0.0, 0.5, 0.5, 1.0, 1.0}, at::kDouble).view({3, 2})));
  EXPECT_TRUE(at::equal(n.invert(y), x));
}

// Values whose span overflows a double (max - min = inf) cannot be min-max normalized: refused, naming the
// column (was: training ran with a NaN loss, and compress then blamed the normalization file).
TEST(Normalization, ASpanBeyondADoubleIsRefused) {
  const at::Tensor x = at::tensor(std::vector<double>{1.0, -1.7e308, 2.0, 1.7e308}, at::kDouble).reshape({2, 2});
  expect_input_error([&] { Normalization::fit(x); }, "column 1: its values span more than a double holds");
  EXPECT_NO_THROW(Normalization::fit(at::tensor(std::vector<double>{1e308, 1.7e308}, at::kDouble).reshape({2, 1})));
}

TEST(Normalization, ConstantColumnNormalizesToZeroAndInvertsExactly) {
  // Departure 1: Baler gets 0/0 = NaN here.
  const at::Tensor x = at::tensor({7.5, 1.0, 7.5, 2.0}, at::kDouble).view({2, 2});
  const Normalization n = Normalization::fit(x);
  EXPECT_EQ(n.zero_range_features(), 1);
  const at::Tensor y = n.apply(x);
  EXPECT_TRUE(at::isfinite(y).all().item<bool>());
  EXPECT_EQ(y[0][0].item<double>(), 0.0);
  EXPECT_TRUE(at::equal(n.invert(y), x));
}

TEST(Normalization, SavedLayoutIsTwoByFeatureShape) {
  const at::Tensor x = at::rand({4, 6}, at::kDouble);
  const Normalization n = Normalization::fit(x);
  const NpyArray a = n.to_npy({2, 3});
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 2, 3}));
  const Normalization back = Normalization::from_npy(a, 6, "mem");
  EXPECT_TRUE(at::equal(back.min, n.min));
  EXPECT_TRUE(at::equal(back.range, n.range));
  expect_input_error([&] { Normalization::from_npy(a, 5, "mem"); }, "do not match");
}

}  // namespace
}  // namespace balerbench
