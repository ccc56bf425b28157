// test_config.cpp: strict JSON configs with Baler's key names.
#include <gtest/gtest.h>

#include "common/error.h"
#include <filesystem>
#include <set>

#include "harness/base/strict_json.h"
#include "harness/run/run_config.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

using nlohmann::json;

json minimal() { return {{"input_path", "/data/x.npz"}, {"model_name", "AE"}, {"compression_ratio", 1.6}}; }

TEST(RunConfig, MinimalConfigGetsBalerTemplateDefaults) {
  const RunConfig c = parse_run_config(minimal(), "c.json", "");
  EXPECT_EQ(c.epochs, 5);
  EXPECT_EQ(c.batch_size, 512);
  EXPECT_DOUBLE_EQ(c.lr, 0.001);
  EXPECT_DOUBLE_EQ(c.test_size, 0.0);
  EXPECT_TRUE(c.apply_normalization);
  EXPECT_FALSE(c.custom_norm);
  EXPECT_TRUE(c.early_stopping);
  EXPECT_EQ(c.early_stopping_patience, 100);
  EXPECT_TRUE(c.lr_scheduler);
  EXPECT_EQ(c.lr_scheduler_patience, 50);
  EXPECT_DOUBLE_EQ(c.min_delta, 0.0);
  EXPECT_EQ(c.loss, LossKind::kBalerSum);
  EXPECT_FALSE(c.shuffle);
  EXPECT_TRUE(c.normalizes());
}

// Found by fuzz_run_config (tests/fixtures/fuzz/): a `--set` value that is not valid UTF-8 made the
// error message itself throw (nlohmann's dump), an internal error instead of exit 2; and one that a
// string key accepts (a model name) made writing run_config.json throw later. Both are refused where
// they enter, naming the assignment.
TEST(RunConfig, OverrideThatIsNotUtf8IsAnInputError) {
  nlohmann::json j = {{"input_path", "x.npz"}, {"model_name", "AE"}, {"compression_ratio", 1.6}};
  expect_input_error([&] { apply_override(j, "epochs=3\x85"); }, "--set epochs=3\\x85: not valid UTF-8");
  expect_input_error([&] { apply_override(j, "model_name=AE\xff"); }, "not valid UTF-8");
  EXPECT_EQ(j["model_name"], "AE");  // nothing applied
  // The fuzzer's input as it found it: overrides, then the config.
  const std::string text = read_text(source_dir() + "/tests/fixtures/fuzz/run_config_invalid_utf8_override.txt");
  const std::size_t brace = text.find('{');
  ASSERT_NE(brace, std::string::npos);
  nlohmann::json k = nlohmann::json::parse(text.substr(brace));
  EXPECT_THROW(apply_override(k, text.substr(0, text.find('\n'))), InputError);
}

// Whole numbers beyond int64 are "too large", never wrapped into a negative number that then reads as
// "must be at least 1" (was: codecs.uses [9223372036854775808] refused as "at least 1"); batch_size has
// a stated ceiling (was: an internal error from LibTorch's index arithmetic).
TEST(RunConfig, NumbersBeyondTheirRangeSaySo) {
  json j = minimal();
  j["batch_size"] = json::parse("9223372036854775807");
  expect_input_error([&] { parse_run_config(j, "c.json", ""); }, "/batch_size: must be at most 2147483647");
  j["batch_size"] = json::parse("9223372036854775808");
  expect_input_error([&] { parse_run_config(j, "c.json", ""); }, "/batch_size: must be at most 2147483647");
  j["batch_size"] = 2147483647;
  EXPECT_EQ(parse_run_config(j, "c.json", "").batch_size, 2147483647);
  j = minimal();
  j["epochs"] = json::parse("18446744073709551615");
  expect_input_error([&] { parse_run_config(j, "c.json", ""); }, "/epochs: must be at most 9223372036854775807");
  j = minimal();
  j["codecs"] = {{"uses", json::parse("[9223372036854775808]")}};
  expect_input_error([&] { parse_run_config(j, "c.json", ""); }, "entry 9223372036854775808 is too large");
  j["codecs"] = {{"uses", json::parse("[9223372036854775807]")}};
  EXPECT_EQ(parse_run_config(j, "c.json", "").codecs.uses, std::vector<int64_t>{INT64_MAX});
}

TEST(RunConfig, RequiredKeys) {
  for (const char* key : {"input_path", "model_name", "compression_ratio"}) {
    json j = minimal();
    j.erase(key);
    expect_input_error([&] { parse_run_config(j, "c.json", ""); }, std::string("missing required key /") + key);
  }
}

TEST(RunConfig, UnknownKeysAndWrongTypesNameTheJsonPath) {
  json j = minimal();
  j["epohcs"] = 3;
  expect_input_error([&] { parse_run_config(j, "c.json", ""); }, "c.json: /epohcs: unknown key");
  j = minimal();
  j["epochs"] = "10";
  expect_input_error([&] { parse_run_config(j, "c.json", ""); }, "/epochs: expected an integer, got string");
  j = minimal();
  j["batch_size"] = 0;
  expect_input_error([&] { parse_run_config(j, "c.json", ""); }, "/batch_size: must be at least 1");
  j = minimal();
  j["compression_ratio"] = -2;
  expect_input_error([&] { parse_run_config(j, "c.json", ""); }, "/compression_ratio: must be a positive number");
  j = minimal();
  j["type_list"] = {"float64", "complex"};
  expect_input_error([&] { parse_run_config(j, "c.json", ""); }, "/type_list/1: invalid type 'complex'");
  j = minimal();
  j["loss"] = "l2";
  expect_input_error([&] { parse_run_config(j, "c.json", ""); }, "one of: baler_sum, mse_mean");
}

TEST(RunConfig, BalerDeadAndUnsupportedKeys) {
  json j = minimal();
  j["reg_param"] = 0.001;
  expect_input_error([&] { parse_run_config(j, "c.json", ""); }, "dead keys");
  j = minimal();
  j["activation_extraction"] = false;  // accepted when off, as Baler configs carry it
  EXPECT_NO_THROW(parse_run_config(j, "c.json", ""));
  j["activation_extraction"] = true;
  expect_input_error([&] { parse_run_config(j, "c.json", ""); }, "not supported");
}

TEST(RunConfig, RelativeInputPathResolvesAgainstTheConfigFolder) {
  json j = minimal();
  j["input_path"] = "../data/x.npz";
  EXPECT_EQ(parse_run_config(j, "c.json", "/repo/experiments").input_path, "/repo/data/x.npz");
}

TEST(RunConfig, SetOverridesParseJsonOrFallBackToStrings) {
  json j = minimal();
  apply_override(j, "epochs=7");
  apply_override(j, "model_name=CFD_dense_AE");
  apply_override(j, "shuffle=true");
  apply_override(j, "lr=0.01");
  const RunConfig c = parse_run_config(j, "c.json", "");
  EXPECT_EQ(c.epochs, 7);
  EXPECT_EQ(c.model_name, "CFD_dense_AE");
  EXPECT_TRUE(c.shuffle);
  EXPECT_DOUBLE_EQ(c.lr, 0.01);
  expect_input_error([&] { apply_override(j, "epochs"); }, "expected key=value");
}

TEST(RunConfig, LoadFromFileWithOverridesAndBadJson) {
  TempDir dir;
  write_text(dir.path("c.json"), R"({"input_path": "x.npz", "model_name": "AE", "compression_ratio": 2})");
  const RunConfig c = load_run_config(dir.path("c.json"), {"batch_size=64"});
  EXPECT_EQ(c.batch_size, 64);
  EXPECT_EQ(c.input_path, dir.path("x.npz"));
  write_text(dir.path("bad.json"), R"({"input_path": "x.npz", })");
  expect_input_error([&] { load_run_config(dir.path("bad.json"), {}); }, "not valid JSON");
  expect_input_error([&] { load_run_config(dir.path("none.json"), {}); }, "config file not found");
}

TEST(RunConfig, ShippedExperimentConfigsParse) {
  const std::string dir = source_dir() + "/experiments/";
  const RunConfig cfd = load_run_config(dir + "cfd_animation.json", {});
  EXPECT_EQ(cfd.model_name, "CFD_dense_AE");
  EXPECT_DOUBLE_EQ(cfd.compression_ratio, 100);
  EXPECT_EQ(cfd.epochs, 2000);
  EXPECT_FALSE(cfd.normalizes());
  // Relative to experiments/, so it lands on ../shared/data beside the checkout.
  EXPECT_EQ(std::filesystem::path(cfd.input_path), std::filesystem::path(source_dir()).parent_path() / "shared/data/CFD_animation.npz");
  const RunConfig cms = load_run_config(dir + "cms_like.json", {});
  EXPECT_DOUBLE_EQ(cms.compression_ratio, 1.6);
  EXPECT_EQ(cms.epochs, 25);
  EXPECT_EQ(cms.type_list.size(), 24u);
}

TEST(RunConfig, DuplicateKeysAndHugeNumbersInTheFileAreInputErrors) {
  TempDir dir;
  write_text(dir.path("dup.json"),
             R"({"input_path": "x.npz", "model_name": "AE", "compression_ratio": 2, "epochs": 2, "epochs": 3})");
  expect_input_error([&] { load_run_config(dir.path("dup.json"), {}); }, "dup.json: /epochs: the key is given twice");
  write_text(dir.path("big.json"), R"({"input_path": "x.npz", "model_name": "AE", "compression_ratio": 1e400})");
  expect_input_error([&] { load_run_config(dir.path("big.json"), {}); },
                     "big.json: /compression_ratio: the number 1e400 does not fit a double");
}

TEST(RunConfig, AnErrorInAValueFromTheCommandLineNamesItNotTheFile) {
  TempDir dir;
  write_text(dir.path("c.json"), R"({"input_path": "x.npz", "model_name": "AE", "compression_ratio": 2})");
  const std::string c = dir.path("c.json");
  expect_input_error([&] { load_run_config(c, {"epochs=x"}); }, "--set epochs=x: expected an integer, got string");
  expect_input_error([&] { load_run_config(c, {"epochs=1e400"}); }, "--set epochs=1e400: the number 1e400");
  expect_input_error([&] { load_run_config(c, {"energy.sample_hz=-1"}); }, "--set energy.sample_hz=-1: must be in");
  expect_input_error([&] { load_run_config(c, {"epoch=3"}); }, "--set epoch=3: unknown key");
  // A whole section from --set: the path inside it is kept.
  expect_input_error([&] { load_run_config(c, {R"(energy={"sample_hz": -1})"}); },
                     R"(--set energy={"sample_hz": -1}: /energy/sample_hz: must be in)");
  // The last --set of a key is the one named.
  expect_input_error([&] { load_run_config(c, {"epochs=2", "epochs=-3"}); }, "--set epochs=-3: must be at least 1");
  // An option that stands for a key names the option.
  expect_input_error([&] { load_run_config(c, {}, {{"precision=fp12", "--precision"}}); },
                     "--precision: invalid value 'fp12'");
  // A value from the file still names the file.
  write_text(dir.path("bad.json"), R"({"input_path": "x.npz", "model_name": "AE", "compression_ratio": 2, "lr": -1})");
  expect_input_error([&] { load_run_config(dir.path("bad.json"), {"epochs=3"}); }, "bad.json: /lr: must be a positive");
}

// The learning rate scaled by the batch size: none by default (and then nothing new in to_json, so
// earlier trials' keys stay), linear or square root from a reference batch size, recorded with the
// learning rate trained at, and read back.
TEST(RunConfig, LearningRateScalesWithTheBatchSizeOnlyWhenAsked) {
  const RunConfig plain = parse_run_config(minimal(), "c.json", "");
  EXPECT_EQ(plain.lr_scaling, "none");
  EXPECT_DOUBLE_EQ(plain.effective_lr(), plain.lr);
  EXPECT_FALSE(plain.to_json().contains("lr_scaling"));
  EXPECT_FALSE(plain.to_json().contains("effective_lr"));
  json j = minimal();
  j["lr"] = 0.001;
  j["batch_size"] = 2048;
  j["lr_scaling"] = "linear";
  j["lr_reference_batch_size"] = 512;
  const RunConfig linear = parse_run_config(j, "c.json", "");
  EXPECT_DOUBLE_EQ(linear.effective_lr(), 0.004);
  j["lr_scaling"] = "sqrt";
  const RunConfig sqrt_rule = parse_run_config(j, "c.json", "");
  EXPECT_DOUBLE_EQ(sqrt_rule.effective_lr(), 0.002);
  const json written = sqrt_rule.to_json();
  EXPECT_EQ(written["lr_scaling"], "sqrt");
  EXPECT_EQ(written["lr_reference_batch_size"], 512);
  EXPECT_DOUBLE_EQ(written["effective_lr"].get<double>(), 0.002);
  EXPECT_DOUBLE_EQ(written["lr"].get<double>(), 0.001);  // the configured rate stays as given
  EXPECT_EQ(parse_run_config(written, "resolved", "").to_json(), written);  // read back
  j.erase("lr_reference_batch_size");
  expect_input_error([&] { parse_run_config(j, "c.json", ""); },
                     "c.json: /lr_reference_batch_size: is required with lr_scaling sqrt");
  j["lr_scaling"] = "cubic";
  expect_input_error([&] { parse_run_config(j, "c.json", ""); }, "/lr_scaling");
  j = minimal();
  j["lr_reference_batch_size"] = 512;
  expect_input_error([&] { parse_run_config(j, "c.json", ""); }, "applies only with lr_scaling linear or sqrt");
}

TEST(RunConfig, ToJsonRoundTrips) {
  json j = minimal();
  j["type_list"] = {"float64", "int"};
  j["latent_dtype"] = "float16";
  const RunConfig a = parse_run_config(j, "c.json", "");
  const RunConfig b = parse_run_config(a.to_json(), "resolved", "");
  EXPECT_EQ(a.to_json(), b.to_json());
}

}  // namespace

TEST(RunConfig, PrecisionIsParsedOnceIntoTheEnumAndWrittenBackByName) {
  json j = {{"input_path", "x.npz"}, {"model_name", "AE"}, {"compression_ratio", 1.6}, {"precision", "amp_bf16"}};
  const RunConfig c = parse_run_config(j, "cfg.json", "");
  EXPECT_EQ(c.precision, Precision::kAmpBf16);
  EXPECT_EQ(c.to_json()["precision"], "amp_bf16");
  EXPECT_EQ(parse_run_config(c.to_json(), "again", "").precision, Precision::kAmpBf16);
  j["precision"] = "fp12";
  expect_input_error([&] { parse_run_config(j, "cfg.json", ""); }, "/precision");
}

}  // namespace balerbench
