// test_strict_json_hints.cpp: the hints of StrictReader's errors (base/strict_json.h): what to write
// for each type, the range and the reference for a range, "did you mean" for a misspelt key (and the
// edit distance behind it, base/edit_distance.h). The CLI's own check is in
// tests/integration/test_cli.cpp (BadInput.SetValueOfTheWrongTypeHasAHint).
#include <gtest/gtest.h>

#include "common/error.h"
#include "harness/base/edit_distance.h"
#include "harness/base/strict_json.h"
#include "harness/run/run_config.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

using nlohmann::json;

// The full message of the InputError that `read` throws on `input` (a reader of "c.json").
std::string message_of(const json& input, const std::function<void(StrictReader&)>& read) {
  try {
    StrictReader r(input, "c.json");
    read(r);
    r.reject_unknown();
  } catch (const JsonPathError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error for " << input.dump();
  return "";
}

// ---- type errors: the message as before, and what to write instead ----

TEST(StrictJsonHints, EachTypeSaysWhatToWrite) {
  std::string s;
  bool b = false;
  int64_t i = 0;
  double d = 0;
  std::vector<std::string> list;
  EXPECT_EQ(message_of({{"name", 3}}, [&](StrictReader& r) { r.str("name", s); }),
            "c.json: /name: expected a string, got number (hint: write text in double quotes)");
  EXPECT_EQ(message_of({{"shuffle", "yes"}}, [&](StrictReader& r) { r.boolean("shuffle", b); }),
            "c.json: /shuffle: expected true or false, got string (hint: write true or false, without quotes)");
  EXPECT_EQ(message_of({{"epochs", "abc"}}, [&](StrictReader& r) { r.integer("epochs", i, 1); }),
            "c.json: /epochs: expected an integer, got string \"abc\" (hint: write a whole number without quotes, "
            "e.g. 100)");
  EXPECT_EQ(message_of({{"epochs", 2.5}}, [&](StrictReader& r) { r.integer("epochs", i, 1); }),
            "c.json: /epochs: expected an integer, got number 2.5 (hint: write a whole number without quotes, "
            "e.g. 100)");
  EXPECT_EQ(message_of({{"lr", "0.1"}}, [&](StrictReader& r) { r.number("lr", d); }),
            "c.json: /lr: expected a number, got string \"0.1\" (hint: write a number without quotes, e.g. 0.001)");
  EXPECT_EQ(message_of({{"meters", 1}}, [&](StrictReader& r) { r.strings("meters", list); }),
            "c.json: /meters: expected a list of strings, got number (hint: write a list of texts in double "
            "quotes, e.g. [\"a\", \"b\"], or one text)");
  EXPECT_EQ(message_of({{"meters", {"rapl", 2}}}, [&](StrictReader& r) { r.strings("meters", list); }),
            "c.json: /meters/1: expected a string, got number (hint: each entry is text in double quotes, "
            "e.g. [\"a\", \"b\"])");
  EXPECT_EQ(message_of({{"energy", 1}}, [&](StrictReader& r) { r.object("energy"); }),
            "c.json: /energy: expected an object, got number (hint: write an object in braces, e.g. "
            "{\"key\": value}, or {} for the defaults)");
  expect_input_error([] { StrictReader(json::array(), "c.json", "/energy"); },
                     "c.json: /energy: expected a JSON object, got array (hint: write an object in braces");
}

TEST(StrictJsonHints, AChoiceOfTheWrongTypeListsTheChoices) {
  std::string s;
  EXPECT_EQ(message_of({{"order", 1}}, [&](StrictReader& r) { r.choice("order", s, {"grid", "shuffled"}); }),
            "c.json: /order: expected a string, got number (hint: one of: grid, shuffled, in double quotes)");
  EXPECT_EQ(message_of({{"order", "random"}}, [&](StrictReader& r) { r.choice("order", s, {"grid", "shuffled"}); }),
            "c.json: /order: invalid value 'random' (hint: one of: grid, shuffled)");
}

// ---- range errors: the range and where the keys are described ----

TEST(StrictJsonHints, ARangeErrorGivesTheRangeAndTheReference) {
  int64_t i = 0;
  double d = 0;
  EXPECT_EQ(message_of({{"batch_size", 0}}, [&](StrictReader& r) { r.integer("batch_size", i, 1, 2147483647); }),
            "c.json: /batch_size: must be at least 1 (got 0) (hint: a whole number from 1 to 2147483647; see "
            "`balerbench config reference`)");
  EXPECT_EQ(message_of({{"batch_size", int64_t{1} << 40}},
                       [&](StrictReader& r) { r.integer("batch_size", i, 1, 2147483647); }),
            "c.json: /batch_size: must be at most 2147483647 (got 1099511627776) (hint: a whole number from 1 to "
            "2147483647; see `balerbench config reference`)");
  // No maximum but int64's: only the minimum is named.
  EXPECT_EQ(message_of({{"epochs", -3}}, [&](StrictReader& r) { r.integer("epochs", i, 1); }),
            "c.json: /epochs: must be at least 1 (got -3) (hint: a whole number of at least 1; see "
            "`balerbench config reference`)");
  EXPECT_EQ(message_of({{"pue", 0.5}}, [&](StrictReader& r) { r.number_in("pue", d, 1, 10); }),
            "c.json: /pue: must be in [1.0, 10.0] (got 0.5) (hint: a number from 1.0 to 10.0; see "
            "`balerbench config reference`)");
  EXPECT_EQ(message_of({{"val_loss", -1}}, [&](StrictReader& r) { r.number_in("val_loss", d, 0, 1e300); }),
            "c.json: /val_loss: must be in [0.0, 1e+300] (got -1.0) (hint: a number of at least 0.0; see "
            "`balerbench config reference`)");
  std::optional<double> o;
  EXPECT_EQ(message_of({{"val_loss", -1}}, [&](StrictReader& r) { r.optional_number_in("val_loss", o, 0, 1); }),
            "c.json: /val_loss: must be in [0.0, 1.0] (got -1.0) (hint: a number from 0.0 to 1.0; see "
            "`balerbench config reference`)");
}

// ---- unknown keys: "did you mean" ----

TEST(StrictJsonHints, AnUnknownKeyNearAKnownOneSuggestsIt) {
  int64_t i = 0;
  const auto read = [&](StrictReader& r) {
    r.integer("epochs", i, 1);
    r.integer("batch_size", i, 1);
    r.object("energy");
  };
  const std::string rest = " see docs/configuration.md (or `balerbench config reference`) for the valid keys)";
  EXPECT_EQ(message_of({{"epoch", 3}}, read), "c.json: /epoch: unknown key (hint: did you mean 'epochs'?" + rest);
  EXPECT_EQ(message_of({{"batchsize", 3}}, read),
            "c.json: /batchsize: unknown key (hint: did you mean 'batch_size'?" + rest);
  EXPECT_EQ(message_of({{"Epochs", 3}}, read), "c.json: /Epochs: unknown key (hint: did you mean 'epochs'?" + rest);
  EXPECT_EQ(message_of({{"batch", 3}}, read), "c.json: /batch: unknown key (hint: did you mean 'batch_size'?" + rest);
  // Far from every known key: the hint as before.
  EXPECT_EQ(message_of({{"learning_rate", 3}}, read),
            "c.json: /learning_rate: unknown key (hint: see docs/configuration.md (or `balerbench config "
            "reference`) for the valid keys)");
}

TEST(StrictJsonHints, DidYouMeanComesBeforeTheCallersHint) {
  double d = 0;
  // A StrictReader keeps a reference to its JSON: each lives in a variable.
  const json near = {{"smaple_hz", 5}, {"sample_hz", 1}}, far_away = {{"colour", 5}}, no_hint_given = {{"sample_h", 5}};
  StrictReader r(near, "c.json", "/energy");
  r.number("sample_hz", d);
  try {
    r.reject_unknown("valid keys: sample_hz");
    ADD_FAILURE() << "no error";
  } catch (const JsonPathError& e) {
    EXPECT_EQ(e.what_text(), "unknown key");
    EXPECT_EQ(e.hint(), "did you mean 'sample_hz'? valid keys: sample_hz");
  }
  StrictReader far(far_away, "c.json", "/energy");
  far.number("sample_hz", d);
  expect_input_error([&] { far.reject_unknown("valid keys: sample_hz"); },
                     "c.json: /energy/colour: unknown key (hint: valid keys: sample_hz)");
  StrictReader no_hint(no_hint_given, "c.json");
  no_hint.number("sample_hz", d);
  EXPECT_EQ(no_hint.unknown_key_hint("sample_h", ""), "did you mean 'sample_hz'?");
}

TEST(StrictJsonHints, ARunConfigAndItsSetValuesGetTheHints) {
  const json base = {{"input_path", "x.npz"}, {"model_name", "AE"}, {"compression_ratio", 1.6}};
  json j = base;
  j["epoch"] = 3;
  expect_input_error([&] { parse_run_config(j, "c.json", ""); }, "c.json: /epoch: unknown key (hint: did you mean "
                                                                  "'epochs'?");
  j = base;
  j["energy"] = {{"smaple_hz", 5}};
  expect_input_error([&] { parse_run_config(j, "c.json", ""); }, "/energy/smaple_hz: unknown key (hint: did "
                                                                  "you mean 'sample_hz'? valid keys: enabled,");
  j = base;
  j["input_path"] = "";
  expect_input_error([&] { parse_run_config(j, "c.json", ""); },
                     "c.json: /input_path: must not be empty (hint: the .npz file to train on");
  j = base;
  apply_override(j, "epochs=abc");
  try {
    parse_run_config(j, "c.json", "");
    ADD_FAILURE() << "no error";
  } catch (const JsonPathError& e) {
    expect_input_error([&] { rethrow_with_origin(e, {{"/epochs", "--set epochs=abc"}}); },
                       "--set epochs=abc: expected an integer, got string \"abc\" (hint: write a whole number "
                       "without quotes, e.g. 100)");
  }
}

// ---- the edit distance ----

TEST(EditDistance, CountsInsertionsDeletionsSubstitutionsAndSwaps) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("abc", ""), 3u);
  EXPECT_EQ(edit_distance("epochs", "epochs"), 0u);
  EXPECT_EQ(edit_distance("epoch", "epochs"), 1u);       // an insertion
  EXPECT_EQ(edit_distance("epochss", "epochs"), 1u);     // a deletion
  EXPECT_EQ(edit_distance("epoxhs", "epochs"), 1u);      // a substitution
  EXPECT_EQ(edit_distance("epohcs", "epochs"), 1u);      // two neighbours swapped
  EXPECT_EQ(edit_distance("batchsize", "batch_size"), 1u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("sitting", "kitten"), 3u);
  EXPECT_EQ(edit_distance("ca", "abc"), 3u);  // optimal string alignment: a swapped pair is not edited again
}

TEST(EditDistance, ClosestNameIsNearOrNothing) {
  const std::set<std::string> known = {"batch_size", "epochs", "lr", "seed", "sample_hz"};
  EXPECT_EQ(closest_name("epoch", known), "epochs");
  EXPECT_EQ(closest_name("EPOCHS", known), "epochs");     // another case
  EXPECT_EQ(closest_name("batch", known), "batch_size");  // a prefix
  EXPECT_EQ(closest_name("seeds", known), "seed");
  EXPECT_EQ(closest_name("sample_hzz", known), "sample_hz");
  EXPECT_EQ(closest_name("epochs", known), std::nullopt);  // itself is no suggestion
  EXPECT_EQ(closest_name("x", known), std::nullopt);       // short words need a near-exact match
  EXPECT_EQ(closest_name("ep", known), std::nullopt);      // a prefix needs 3 bytes
  EXPECT_EQ(closest_name("learning_rate", known), std::nullopt);
  EXPECT_EQ(closest_name("epo", known), "epochs");
  EXPECT_EQ(closest_name("anything", {}), std::nullopt);
}

}  // namespace
}  // namespace balerbench
