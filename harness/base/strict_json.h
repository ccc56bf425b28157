// strict_json.h: reading JSON strictly. The text: an object that names a key twice and a number
// beyond a double are refused (nlohmann's parser keeps the last key silently and throws an
// out_of_range for 1e400). The values: an object is read key by key, every error is an InputError
// naming the source file and the JSON path ("/energy/sample_hz"), and keys never read are rejected
// at the end, so a misspelled key cannot be silently ignored. Shared by run configs (and their
// `--set` values) and experiment files.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/error.h"

namespace balerbench {

// The JSON text of `source` (a file name, for errors). Throws InputError naming `source` for text
// that is not UTF-8 (UTF-16, Latin-1: the offending byte named, never echoed; a UTF-8 byte-order
// mark is allowed), a syntax error (with its byte), a key given twice in one object (with its JSON path) and a number
// that does not fit a double (with its JSON path and text).
nlohmann::json parse_json_text_strict(const std::string& text, const std::string& source);
// The same for the file at `path` (named in errors); a file that cannot be read, or is larger than
// kMaxJsonFileBytes, is an InputError.
inline constexpr std::uintmax_t kMaxJsonFileBytes = std::uintmax_t{64} << 20;
nlohmann::json parse_json_file_strict(const std::string& path);
// For a command-line value that may be JSON or a bare word: nullopt when `text` is not JSON at all;
// a duplicate key or a number beyond a double still throws, naming `source`.
std::optional<nlohmann::json> try_parse_json_strict(const std::string& text, const std::string& source);

// An InputError about the value at a JSON path, as StrictReader::fail throws it: the parts are kept,
// so a caller that knows where the value came from (a `--set`, a command-line option) can say so.
class JsonPathError : public InputError {
 public:
  JsonPathError(std::string source, std::string path, std::string what, std::string hint);
  const std::string& source() const { return source_; }
  const std::string& path() const { return path_; }  // "/energy/sample_hz"
  const std::string& what_text() const { return what_; }
  const std::string& hint() const { return hint_; }

 private:
  std::string source_, path_, what_, hint_;
};

// Where values under some JSON paths came from when not the file: JSON path ("/epochs") -> what the
// user typed ("--set epochs=x", "--hz"). An error at such a path, or below it, names that instead.
using JsonOrigins = std::map<std::string, std::string>;
// Rethrows `e` as an InputError naming the origin of its path (the longest listed prefix), or
// unchanged when its path has none.
[[noreturn]] void rethrow_with_origin(const JsonPathError& e, const JsonOrigins& origins);

// A JSON value as text for an error message. Strings that are not valid UTF-8 (a file name, a
// `--set` value) are shown with U+FFFD where the bad bytes were, instead of making the message
// itself throw.
std::string shown(const nlohmann::json& v);

// Records the JSON path of every key a StrictReader asks for ("/energy/sample_hz"), present in the
// input or not, while a KeyRecording is alive on this thread. Off by default: parsing behaves the same
// either way. `balerbench config reference` uses it to list the keys the parsers themselves read.
class KeyRecording {
 public:
  KeyRecording();
  ~KeyRecording();
  KeyRecording(const KeyRecording&) = delete;
  KeyRecording& operator=(const KeyRecording&) = delete;
  const std::set<std::string>& paths() const { return paths_; }
  // The recording in force on this thread, or nullptr.
  static KeyRecording* active();
  void record(const std::string& path) { paths_.insert(path); }

 private:
  std::set<std::string> paths_;
  KeyRecording* outer_;
};

// The hints of StrictReader's type errors: what to write instead. A parser that checks a value's type
// itself gives the same one.
inline constexpr char kStringHint[] = "write text in double quotes";
inline constexpr char kBooleanHint[] = "write true or false, without quotes";
inline constexpr char kIntegerHint[] = "write a whole number without quotes, e.g. 100";
inline constexpr char kNumberHint[] = "write a number without quotes, e.g. 0.001";
inline constexpr char kStringsHint[] = "write a list of texts in double quotes, e.g. [\"a\", \"b\"], or one text";
inline constexpr char kObjectHint[] = "write an object in braces, e.g. {\"key\": value}, or {} for the defaults";
// Where each key is described, for a hint about a key's range.
inline constexpr char kSeeConfigReference[] = "see `balerbench config reference`";
// The hints of its range errors: the range, and where each key is described. A maximum of int64's
// largest value, or a double's of 1e300 and more, is no maximum ("a whole number of at least 1; ...").
std::string integer_range_hint(int64_t min_value, int64_t max_value = std::numeric_limits<int64_t>::max());
std::string number_range_hint(double min_value, double max_value);

class StrictReader {
 public:
  // `path` is the JSON path of `j` itself: "" for the root, "/energy" for a section.
  StrictReader(const nlohmann::json& j, std::string source, std::string path = "");

  [[noreturn]] void fail(const std::string& key, const std::string& what, const std::string& hint = "") const;
  // The value under `key`, or nullptr when absent or null; marks the key as read.
  const nlohmann::json* get(const std::string& key);

  void str(const std::string& key, std::string& out);
  void boolean(const std::string& key, bool& out);
  // A whole number in [min_value, max_value]; one beyond int64 (read as unsigned) is "too large",
  // never wrapped to a negative number.
  void integer(const std::string& key, int64_t& out, int64_t min_value,
               int64_t max_value = std::numeric_limits<int64_t>::max());
  void number(const std::string& key, double& out);
  // A number in [min_value, max_value]; nullopt stays nullopt when absent.
  void number_in(const std::string& key, double& out, double min_value, double max_value);
  void optional_number_in(const std::string& key, std::optional<double>& out, double min_value, double max_value);
  void choice(const std::string& key, std::string& out, const std::vector<std::string>& allowed);
  // A list of strings; a single string is taken as a list of one.
  void strings(const std::string& key, std::vector<std::string>& out);
  // A sub-object; fails when present and not an object.
  const nlohmann::json* object(const std::string& key);

  // Throws for the first key never read, with `hint`; a key close to one the parser asked for (a typo,
  // another case: base/edit_distance.h) gets "did you mean 'epochs'? " before it.
  void reject_unknown(const std::string& hint = "see docs/configuration.md (or `balerbench config reference`) for the valid keys") const;
  // reject_unknown's hint for the unknown `key`.
  std::string unknown_key_hint(const std::string& key, const std::string& hint) const;

  std::string path_of(const std::string& key) const { return path_ + "/" + key; }
  const std::string& source() const { return source_; }

 private:
  const nlohmann::json& j_;
  std::string source_, path_;
  std::set<std::string> seen_;
};

}  // namespace balerbench
