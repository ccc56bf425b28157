// strict_json.h: reading a JSON object strictly, key by key. Every error is an
// InputError naming the source file and the JSON path ("/energy/sample_hz"),
// and keys never read are rejected at the end, so a misspelled key cannot be
// silently ignored. Shared by the run config and its sections.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace balerbench {

// A JSON value as text for an error message. Strings that are not valid UTF-8 (a file name, a
// `--set` value) are shown with U+FFFD where the bad bytes were, instead of making the message
// itself throw.
std::string shown(const nlohmann::json& v);

class StrictReader {
 public:
  // `path` is the JSON path of `j` itself: "" for the root, "/energy" for a section.
  StrictReader(const nlohmann::json& j, std::string source, std::string path = "");

  [[noreturn]] void fail(const std::string& key, const std::string& what, const std::string& hint = "") const;
  // The value under `key`, or nullptr when absent or null; marks the key as read.
  const nlohmann::json* get(const std::string& key);

  void str(const std::string& key, std::string& out);
  void boolean(const std::string& key, bool& out);
  void integer(const std::string& key, int64_t& out, int64_t min_value);
  void number(const std::string& key, double& out);
  // A number in [min_value, max_value]; nullopt stays nullopt when absent.
  void number_in(const std::string& key, double& out, double min_value, double max_value);
  void optional_number_in(const std::string& key, std::optional<double>& out, double min_value, double max_value);
  void choice(const std::string& key, std::string& out, const std::vector<std::string>& allowed);
  // A list of strings; a single string is taken as a list of one.
  void strings(const std::string& key, std::vector<std::string>& out);
  // A sub-object; fails when present and not an object.
  const nlohmann::json* object(const std::string& key);

  // Throws for the first key never read. `extra_hint` decides the hint.
  void reject_unknown(const std::string& hint = "see README.md 'Configuration' for the valid keys") const;

  std::string path_of(const std::string& key) const { return path_ + "/" + key; }
  const std::string& source() const { return source_; }

 private:
  const nlohmann::json& j_;
  std::string source_, path_;
  std::set<std::string> seen_;
};

}  // namespace balerbench
