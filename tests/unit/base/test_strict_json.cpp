// test_strict_json.cpp: strict JSON text: keys given twice, numbers beyond a double, syntax errors.
#include <gtest/gtest.h>

#include "common/error.h"
#include "harness/base/strict_json.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

using nlohmann::json;

// ---- strict JSON text (base/strict_json.h) ----

TEST(StrictJson, AKeyGivenTwiceIsRefusedWithItsPath) {
  expect_input_error([] { parse_json_text_strict(R"({"epochs": 2, "epochs": 3})", "c.json"); },
                     "c.json: /epochs: the key is given twice");
  expect_input_error(
      [] { parse_json_text_strict(R"({"training": {"lr": 1, "epochs": 2, "epochs": 3}})", "e.json"); },
      "e.json: /training/epochs: the key is given twice");
  expect_input_error([] { parse_json_text_strict(R"({"a": [1, {"b": 1}, {"b": 2, "b": 3}]})", "e.json"); },
                     "e.json: /a/2/b: the key is given twice");
  // The same key in two objects, or in an object and its parent, is no duplicate.
  const json j = parse_json_text_strict(R"({"a": {"x": 1}, "b": {"x": 2}, "x": [{"x": 3}, {"x": 4}]})", "ok.json");
  EXPECT_EQ(j["b"]["x"], 2);
  EXPECT_EQ(j["x"][1]["x"], 4);
}

// 150,000 nested brackets crashed the process; a config is a few levels deep.
TEST(StrictJson, NestingDeeperThanAConfigIsRefusedNotACrash) {
  const std::string deep = "{\"a\":" + std::string(150000, '[') + std::string(150000, ']') + "}";
  expect_input_error([&] { parse_json_text_strict(deep, "deep.json"); }, "nested deeper than 256 levels");
  const std::string fine = std::string(200, '[') + std::string(200, ']');
  EXPECT_TRUE(parse_json_text_strict(fine, "ok.json").is_array());
}

TEST(StrictJson, ANumberBeyondADoubleIsAnInputErrorNotAnInternalOne) {
  expect_input_error([] { parse_json_text_strict(R"({"compression_ratio": 1e400})", "c.json"); },
                     "c.json: /compression_ratio: the number 1e400 does not fit a double");
  expect_input_error([] { parse_json_text_strict(R"({"sweep": {"lr": [1, -2e999]}})", "e.json"); },
                     "e.json: /sweep/lr/1: the number -2e999 does not fit a double");
  expect_input_error([] { parse_json_text_strict("1e400", "--set lr=1e400"); },
                     "--set lr=1e400: the number 1e400 does not fit a double");
  EXPECT_DOUBLE_EQ(parse_json_text_strict("[1e308]", "ok")[0].get<double>(), 1e308);
}

TEST(StrictJson, SyntaxErrorsNameTheByteAndBareWordsAreNotJson) {
  expect_input_error([] { parse_json_text_strict(R"({"a": 1,})", "c.json"); }, "c.json: not valid JSON at byte 9");
  EXPECT_FALSE(try_parse_json_strict("AE", "--set model_name=AE").has_value());
  EXPECT_EQ(try_parse_json_strict("7", "--set epochs=7").value(), 7);
  expect_input_error([] { try_parse_json_strict("1e400", "--set epochs=1e400"); }, "--set epochs=1e400: the number");
  expect_input_error([] { try_parse_json_strict(R"({"a": 1, "a": 2})", "--set energy=..."); }, "/a: the key is given twice");
}

// Text that is not UTF-8 is named for what it is, its bytes in hex, never echoed raw (the parser's own
// message printed a Latin-1 byte as it was); a UTF-8 byte-order mark is read past.
TEST(StrictJson, TextThatIsNotUtf8IsNamedAndNeverEchoedRaw) {
  const auto message = [](const std::string& text) {
    try {
      parse_json_text_strict(text, "c.json");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string latin1 = message("{\"model_name\": \"caf\xE9\"}");
  EXPECT_NE(latin1.find("c.json: is not UTF-8: byte 19 is 0xE9 (a Latin-1 or Windows-1252 file?)"), std::string::npos)
      << latin1;
  EXPECT_EQ(latin1.find('\xE9'), std::string::npos) << latin1;
  const std::string utf16 = message(std::string("\xFF\xFE{\0}\0", 6));
  EXPECT_NE(utf16.find("c.json: is UTF-16 or UTF-32 text"), std::string::npos) << utf16;
  EXPECT_NE(utf16.find("iconv -f UTF-16 -t UTF-8"), std::string::npos) << utf16;
  EXPECT_NE(message(std::string("{\"a\": 1}\0", 9)).find("UTF-16 or UTF-32"), std::string::npos);
  EXPECT_EQ(parse_json_text_strict("\xEF\xBB\xBF{\"a\": 1}", "bom.json")["a"], 1);
  EXPECT_EQ(parse_json_text_strict("{\"name\": \"\xC3\xA9t\xC3\xA9\"}", "ok.json")["name"], "\xC3\xA9t\xC3\xA9");
}

}  // namespace
}  // namespace balerbench
