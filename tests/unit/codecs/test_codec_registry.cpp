// test_codec_registry.cpp: the codecs by name (codecs/codec_registry.h): the registry lists the
// classical codecs in the comparison's order, an unknown name is an InputError naming the known
// ones, and a codec registered from outside (here a test's copy codec) is measured by
// compare_codecs's loop beside the others, and gone again once its registration ends.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "common/error.h"
#include "datasets/dataset.h"
#include "harness/codecs/codec_registry.h"
#include "harness/run/codec_comparison.h"

namespace balerbench {
namespace {

using nlohmann::json;

TEST(CodecRegistry, ListsTheClassicalCodecsInTheComparisonsOrder) {
  EXPECT_EQ(codec_names(),
            (std::vector<std::string>{"zfp_accuracy", "zfp_columns", "zfp_rate", "zstd", "float16", "bfloat16"}));
  EXPECT_STREQ(codec_entry("zstd").name, "zstd");
}

TEST(CodecRegistry, AnUnknownNameIsAnInputErrorNamingTheKnownCodecs) {
  try {
    codec_entry("lz4");
    FAIL() << "no error for an unknown codec";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "unknown codec 'lz4' (hint: one of: zfp_accuracy, zfp_columns, zfp_rate, zstd, float16, bfloat16)");
  }
}

// A codec that stores the values as they are: ratio 1, no error.
class CopyRun final : public CodecRun {
 public:
  explicit CopyRun(const CodecInput& in) : in_(in) {}
  void compress() override {
    const FloatTable& t = in_.table;
    copy_.assign(t.values, t.values + t.rows * t.cols);
  }
  void decompress(std::vector<double>& out) override { out = copy_; }
  json row(const std::vector<double>&, const ErrorMetrics&) const override {
    const auto bytes = static_cast<int64_t>(copy_.size() * sizeof(double));
    return {{"codec", "test_copy"},
            {"label", "a copy (test only)"},
            {"lossless", true},
            {"setting", "none"},
            {"compressed_bytes", bytes},
            {"ratio", static_cast<double>(in_.table.original_bytes()) / static_cast<double>(bytes)}};
  }

 private:
  const CodecInput& in_;
  std::vector<double> copy_;
};

std::unique_ptr<CodecRun> make_copy(const CodecInput& in, std::string&) { return std::make_unique<CopyRun>(in); }
const CodecEntry kCopyEntry{"test_copy", &make_copy};

// 200 rows x 4 float64 columns, and Baler's side at max abs error 0.25.
struct Comparison {
  Comparison() {
    ds.data = at::arange(800, at::kDouble).reshape({200, 4}).mul(0.5);
    ds.original_shape = {200, 4};
    ds.source_path = "fixture";
    baler.reconstruction = ds.data.clone();
    baler.reconstruction[10][2] += 0.25;
    baler.latent_bytes = 200 * 2 * 4;
    baler.engine = "libtorch";
    keys.min_window_s = 0.0;
  }
  Dataset ds;
  BalerCodecSide baler;
  RunConfig::CodecsKeys keys;
};

std::vector<std::string> codecs_of(const json& cmp) {
  std::vector<std::string> names;
  for (const json& r : cmp["codecs"]) names.push_back(r["codec"].get<std::string>());
  return names;
}

TEST(CodecRegistry, ARegisteredCodecIsMeasuredByTheComparisonLoop) {
  Comparison f;
  {
    const CodecRegistration copy(kCopyEntry);
    EXPECT_EQ(codec_names().back(), "test_copy");
    EXPECT_THROW(CodecRegistration again(kCopyEntry), InputError);  // a name is registered once
    const json cmp = compare_codecs(f.ds, f.baler, nullptr, f.keys);
    EXPECT_EQ(codecs_of(cmp), (std::vector<std::string>{"baler", "zfp_accuracy", "zfp_columns", "zfp_rate", "zstd",
                                                        "float16", "bfloat16", "test_copy"}));
    const json& row = cmp["codecs"].back();
    EXPECT_DOUBLE_EQ(row["ratio"].get<double>(), 1.0);
    EXPECT_DOUBLE_EQ(row["error"]["max_abs"].get<double>(), 0.0);
    EXPECT_EQ(row["compress"]["repeats"].get<int64_t>(), 1);
    EXPECT_TRUE(row["notes"].is_array());
    // Baler's break-even is said against it too (as accurate as Baler: exact).
    EXPECT_EQ(cmp["codecs"][0]["break_even"].back()["codec"], "test_copy");
  }
  EXPECT_EQ(codec_names().size(), 6u);
  EXPECT_EQ(codecs_of(compare_codecs(f.ds, f.baler, nullptr, f.keys)).back(), "bfloat16");
}

}  // namespace
}  // namespace balerbench
