// test_codec_registry.cpp: the codecs by name (codecs/codec_registry.h): the registry lists each
// classical codec once, an unknown name is an InputError naming the known ones, Zstandard's level is
// its own key, and a codec with a setting of its own registered from outside (the test's copy codec,
// unit/registered_entries.h, with codecs.test_copy_count) is read by the config's parser, measured
// by compare_codecs's loop beside the others with its setting, and gone again once its registration
// ends.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/text.h"
#include "datasets/dataset.h"
#include "harness/codecs/codec_registry.h"
#include "harness/run/codec_comparison.h"
#include "harness/run/run_config.h"
#include "tests/unit/registered_entries.h"

namespace balerbench {
namespace {

using nlohmann::json;

TEST(CodecRegistry, ListsEachCodecOnceByItsName) {
  const std::vector<std::string> names = codec_names();
  ASSERT_EQ(names.size(), codec_registry().size());
  for (const CodecEntry* e : codec_registry()) {
    EXPECT_EQ(std::count(names.begin(), names.end(), e->name), 1) << e->name;
    EXPECT_EQ(&codec_entry(e->name), e);
    EXPECT_NE(std::string(e->name), "baler");  // Baler's row is the comparison's own
  }
}

TEST(CodecRegistry, AnUnknownNameIsAnInputErrorNamingTheKnownCodecs) {
  try {
    codec_entry("lz4");
    FAIL() << "no error for an unknown codec";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "unknown codec 'lz4' (hint: one of: " + joined(codec_names()) + ")");
  }
}

RunConfig::CodecsKeys parse_keys(const json& section) { return parse_codecs_keys(section, "c.json", "/codecs"); }

bool documents(const std::string& path) {
  const std::vector<ConfigKeyDoc> docs = codec_knob_docs();
  return std::any_of(docs.begin(), docs.end(), [&](const ConfigKeyDoc& d) { return d.path == path; });
}

// Zstandard's level is its codec's own key, read and written as codecs.zstd_level, with its own words
// for a level out of range.
TEST(CodecRegistry, ZstdLevelIsTheZstdCodecsOwnKey) {
  EXPECT_EQ(RunConfig::CodecsKeys().knobs.get<int64_t>("zstd_level"), 3);
  const RunConfig::CodecsKeys keys = parse_keys({{"zstd_level", 19}});
  EXPECT_EQ(keys.knobs.get<int64_t>("zstd_level"), 19);
  EXPECT_EQ(keys.to_json()["zstd_level"], 19);
  EXPECT_FALSE(keys.is_default());
  EXPECT_TRUE(parse_keys(json::object()).is_default());
  for (int level : {0, 23}) {
    try {
      parse_keys({{"zstd_level", level}});
      FAIL() << level;
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()), "c.json: /codecs/zstd_level: Zstandard has levels 1 to 22, got " +
                                           std::to_string(level) + " (hint: 3 (the default) is fast; 19 is strong)");
    }
  }
  EXPECT_TRUE(documents("/codecs/zstd_level"));
}

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

// "baler", then every codec of the registry: the comparison's rows.
std::vector<std::string> baler_and_codecs() {
  std::vector<std::string> names = {"baler"};
  for (const std::string& n : codec_names()) names.push_back(n);
  return names;
}

TEST(CodecRegistry, TheComparisonMeasuresEveryCodecOfTheRegistry) {
  Comparison f;
  const json cmp = compare_codecs(f.ds, f.baler, nullptr, f.keys);
  EXPECT_EQ(codecs_of(cmp), baler_and_codecs());
  for (const json& row : cmp["codecs"]) {
    EXPECT_TRUE(row["compress"].contains("duration_s")) << row["codec"];
    EXPECT_TRUE(row["error"]["finite"].get<bool>()) << row["codec"];
  }
}

TEST(CodecRegistry, ARegisteredCodecsKeyIsReadAndReachesItInTheComparison) {
  Comparison f;
  const std::vector<std::string> before = codec_names();
  {
    const CodecRegistration copy(kCopyCodecEntry);  // the one registry line
    EXPECT_EQ(codec_names().back(), "test_copy");
    EXPECT_THROW(CodecRegistration again(kCopyCodecEntry), InputError);  // a name is registered once
    f.keys = parse_keys({{"min_window_s", 0}, {kCopyCount, 4}});
    EXPECT_EQ(f.keys.to_json()[kCopyCount], 4);  // spelled as the config spells it
    EXPECT_EQ(f.keys.to_json()["zstd_level"], 3);  // the built-in codecs' keys are still there
    EXPECT_EQ(parse_keys(json::object()).knobs.get<int64_t>(kCopyCount), 1);  // its default
    EXPECT_THROW(parse_keys({{kCopyCount, 9}}), InputError);
    const json cmp = compare_codecs(f.ds, f.baler, nullptr, f.keys);
    EXPECT_EQ(codecs_of(cmp), baler_and_codecs());
    const json& row = cmp["codecs"].back();
    EXPECT_EQ(row["setting"], "4 copies");
    EXPECT_DOUBLE_EQ(row["ratio"].get<double>(), 0.25);
    EXPECT_DOUBLE_EQ(row["error"]["max_abs"].get<double>(), 0.0);
    EXPECT_EQ(row["compress"]["repeats"].get<int64_t>(), 1);
    EXPECT_TRUE(row["notes"].is_array());
    // Baler's break-even is said against it too (as accurate as Baler: exact).
    EXPECT_EQ(cmp["codecs"][0]["break_even"].back()["codec"], "test_copy");
    EXPECT_TRUE(documents("/codecs/test_copy_count"));
  }
  EXPECT_EQ(codec_names(), before);
  f.keys = RunConfig::CodecsKeys();
  f.keys.min_window_s = 0;
  EXPECT_EQ(codecs_of(compare_codecs(f.ds, f.baler, nullptr, f.keys)), baler_and_codecs());
  EXPECT_THROW(parse_keys({{kCopyCount, 4}}), InputError);  // its key is unknown again
  EXPECT_FALSE(documents("/codecs/test_copy_count"));
  EXPECT_FALSE(RunConfig::CodecsKeys().to_json().contains(kCopyCount));
}

}  // namespace
}  // namespace balerbench
