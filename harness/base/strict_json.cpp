// strict_json.cpp: see strict_json.h.
#include "harness/base/strict_json.h"

#include "common/text.h"
#include "harness/base/edit_distance.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace balerbench {

using nlohmann::json;

namespace {

// Where nlohmann's parser is, as a JSON path, and the keys seen in each open object. Fed by the
// parser's callback: a container's frame is pushed at its start and popped at its end.
class JsonPathTracker {
 public:
  static constexpr std::size_t kMaxDepth = 256;
  explicit JsonPathTracker(std::string source) : source_(std::move(source)) {}

  bool operator()(int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        // A config is a few levels deep; 150,000 nested brackets crashed the process (stack overflow).
        if (frames_.size() >= kMaxDepth)
          throw InputError(source_ + ": " + message_text(path(), 60) + ": nested deeper than " + std::to_string(kMaxDepth) +
                               " levels of objects and arrays",
                           "a balerbench config is a few levels deep: is this the right file?");
        frames_.push_back({event == json::parse_event_t::object_start, {}, {}, 0});
        break;
      case json::parse_event_t::key: {
        Frame& f = frames_.back();
        f.key = parsed.get<std::string>();
        if (!f.keys.insert(f.key).second)
          throw InputError(source_ + ": " + path() + ": the key is given twice in one object (JSON keeps only the last, silently)",
                           "remove one of them");
        break;
      }
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        frames_.pop_back();
        element_done();
        break;
      case json::parse_event_t::value:
        element_done();
        break;
    }
    return true;
  }

  // The JSON path of the value being parsed ("/training/epochs", "/sweep/batch_size/2"; "/" for the root).
  std::string path() const {
    std::string p;
    for (const Frame& f : frames_) p += "/" + (f.object ? f.key : std::to_string(f.elements));
    return p.empty() ? "/" : p;
  }

 private:
  struct Frame {
    bool object;
    std::set<std::string> keys;
    std::string key;       // object: the key whose value is being parsed
    int64_t elements = 0;  // array: elements done, so the index of the one being parsed
  };
  void element_done() {
    if (!frames_.empty() && !frames_.back().object) ++frames_.back().elements;
  }

  std::string source_;
  std::vector<Frame> frames_;
};

// The offending text of nlohmann's "number overflow parsing '1e400'".
std::string quoted_token(const std::string& message) {
  const auto open = message.find('\'');
  const auto close = message.rfind('\'');
  return open != std::string::npos && close > open ? message.substr(open + 1, close - open - 1) : "";
}

// nlohmann's message without its "[json.exception.parse_error.101] " tag.
std::string untagged(const std::string& message) {
  const auto end = message.find("] ");
  return message.rfind("[json.exception.", 0) == 0 && end != std::string::npos ? message.substr(end + 2) : message;
}

// An InputError for text that is not UTF-8, which JSON must be: a UTF-16 or UTF-32 file (a byte-order
// mark, or NUL bytes), a Latin-1 one (a byte that starts no UTF-8 character). Its bytes are named in
// hex, never echoed: the parser's own message would print them raw.
void check_utf8(const std::string& text, const std::string& source) {
  const auto starts = [&](const char* bom) { return text.rfind(bom, 0) == 0; };
  if (starts("\xFF\xFE") || starts("\xFE\xFF") || text.find('\0') != std::string::npos)
    throw InputError(source + ": is UTF-16 or UTF-32 text (a byte-order mark or NUL bytes), not UTF-8",
                     "save it as UTF-8 (e.g. iconv -f UTF-16 -t UTF-8), as JSON is");
  std::size_t i = starts("\xEF\xBB\xBF") ? 3 : 0;  // a UTF-8 byte-order mark is read past
  while (i < text.size()) {
    const Utf8Char c = utf8_at(text, i);
    if (c.length == 0) {
      char byte[8];
      std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned>(static_cast<unsigned char>(text[i])));
      throw InputError(source + ": is not UTF-8: byte " + std::to_string(i) + " is " + byte +
                           " (a Latin-1 or Windows-1252 file?)",
                       "save it as UTF-8 (e.g. iconv -f LATIN1 -t UTF-8), as JSON is");
    }
    i += c.length;
  }
}

// Parses `text`; a syntax error is returned in `syntax_error` (when given) instead of thrown.
json parse_strict(const std::string& text, const std::string& source, std::string* syntax_error) {
  check_utf8(text, source);
  JsonPathTracker tracker(source);
  try {
    return json::parse(text, std::ref(tracker));
  } catch (const json::parse_error& e) {
    const std::string what = source + ": not valid JSON at byte " + std::to_string(e.byte) + ": " + untagged(e.what());
    if (syntax_error) {
      *syntax_error = what;
      return nullptr;
    }
    throw InputError(what, "strict JSON: double-quoted keys and strings, no comments or trailing commas");
  } catch (const json::out_of_range& e) {
    if (e.id != 406) throw InputError(source + ": cannot be read as JSON: " + untagged(e.what()));
    const std::string where = tracker.path() == "/" ? "" : tracker.path() + ": ";  // a --set value is its own root
    throw InputError(source + ": " + where + "the number " + message_text(quoted_token(e.what()), 40) +
                         " does not fit a double",
                     "numbers must fit a double: magnitude at most about 1.8e308");
  } catch (const json::exception& e) {
    throw InputError(source + ": cannot be read as JSON: " + untagged(e.what()), "check the file's encoding (UTF-8)");
  }
}

}  // namespace

json parse_json_text_strict(const std::string& text, const std::string& source) {
  return parse_strict(text, source, nullptr);
}

json parse_json_file_strict(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw InputError(path + ": is a folder, not a JSON file", "check the path");
  // A config or an experiment is a page of text; a file of gigabytes would only exhaust the memory.
  if (const auto size = std::filesystem::file_size(path, ec); !ec && size > kMaxJsonFileBytes)
    throw InputError(path + ": is " + std::to_string(size) + " bytes, more than a config or an experiment holds (at most " +
                         std::to_string(kMaxJsonFileBytes >> 20) + " MiB)",
                     "check the path: is this the data file?");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open the file", "check the path and its permissions");
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) throw InputError(path + ": cannot read the file", "check the path and its permissions");
  return parse_strict(text.str(), path, nullptr);
}

std::optional<json> try_parse_json_strict(const std::string& text, const std::string& source) {
  std::string syntax_error;
  json j = parse_strict(text, source, &syntax_error);
  if (!syntax_error.empty()) return std::nullopt;
  return j;
}

JsonPathError::JsonPathError(std::string source, std::string path, std::string what, std::string hint)
    : InputError(source + ": " + path + ": " + what, hint),
      source_(std::move(source)),
      path_(std::move(path)),
      what_(std::move(what)),
      hint_(std::move(hint)) {}

void rethrow_with_origin(const JsonPathError& e, const JsonOrigins& origins) {
  const JsonOrigins::value_type* best = nullptr;
  for (const auto& o : origins) {
    const bool covers = e.path() == o.first || e.path().rfind(o.first + "/", 0) == 0;
    if (covers && (!best || o.first.size() > best->first.size())) best = &o;
  }
  if (!best) throw e;
  const std::string where = e.path() == best->first ? "" : e.path() + ": ";
  throw InputError(best->second + ": " + where + e.what_text(), e.hint());
}

std::string integer_range_hint(int64_t min_value, int64_t max_value) {
  if (max_value == std::numeric_limits<int64_t>::max())
    return "a whole number of at least " + std::to_string(min_value) + "; " + kSeeConfigReference;
  return "a whole number from " + std::to_string(min_value) + " to " + std::to_string(max_value) + "; " + kSeeConfigReference;
}

std::string number_range_hint(double min_value, double max_value) {
  if (max_value >= 1e300) return "a number of at least " + json(min_value).dump() + "; " + kSeeConfigReference;
  return "a number from " + json(min_value).dump() + " to " + json(max_value).dump() + "; " + kSeeConfigReference;
}

std::string shown(const nlohmann::json& v) { return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

namespace {
thread_local KeyRecording* active_recording = nullptr;
}  // namespace

KeyRecording::KeyRecording() : outer_(active_recording) { active_recording = this; }
KeyRecording::~KeyRecording() { active_recording = outer_; }
KeyRecording* KeyRecording::active() { return active_recording; }

StrictReader::StrictReader(const json& j, std::string source, std::string path)
    : j_(j), source_(std::move(source)), path_(std::move(path)) {
  if (!j_.is_object())
    throw JsonPathError(source_, path_.empty() ? "/" : path_, std::string("expected a JSON object, got ") + j_.type_name(),
                        kObjectHint);
}

void StrictReader::fail(const std::string& key, const std::string& what, const std::string& hint) const {
  throw JsonPathError(source_, path_of(key), what, hint);
}

const json* StrictReader::get(const std::string& key) {
  seen_.insert(key);
  if (KeyRecording* recording = active_recording) recording->record(path_of(key));
  auto it = j_.find(key);
  if (it == j_.end() || it->is_null()) return nullptr;
  return &*it;
}

void StrictReader::str(const std::string& key, std::string& out) {
  const json* v = get(key);
  if (!v) return;
  if (!v->is_string()) fail(key, std::string("expected a string, got ") + v->type_name(), kStringHint);
  out = v->get<std::string>();
}

void StrictReader::boolean(const std::string& key, bool& out) {
  const json* v = get(key);
  if (!v) return;
  if (!v->is_boolean()) fail(key, std::string("expected true or false, got ") + v->type_name(), kBooleanHint);
  out = v->get<bool>();
}

void StrictReader::integer(const std::string& key, int64_t& out, int64_t min_value, int64_t max_value) {
  const json* v = get(key);
  if (!v) return;
  if (!v->is_number_integer())
    fail(key, std::string("expected an integer, got ") + v->type_name() + " " + shown(*v), kIntegerHint);
  const bool beyond_int64 =
      v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (beyond_int64 || v->get<int64_t>() > max_value)
    fail(key, "must be at most " + std::to_string(max_value) + " (got " + shown(*v) + ")",
         integer_range_hint(min_value, max_value));
  const int64_t x = v->get<int64_t>();
  if (x < min_value)
    fail(key, "must be at least " + std::to_string(min_value) + " (got " + std::to_string(x) + ")",
         integer_range_hint(min_value, max_value));
  out = x;
}

void StrictReader::number(const std::string& key, double& out) {
  const json* v = get(key);
  if (!v) return;
  if (!v->is_number())
    fail(key, std::string("expected a number, got ") + v->type_name() + " " + shown(*v), kNumberHint);
  out = v->get<double>();
}

void StrictReader::number_in(const std::string& key, double& out, double min_value, double max_value) {
  number(key, out);
  if (!(out >= min_value && out <= max_value) || !std::isfinite(out))
    fail(key, "must be in [" + json(min_value).dump() + ", " + json(max_value).dump() + "] (got " +
                  (std::isnan(out) ? std::string("nan") : std::isinf(out) ? std::string(out > 0 ? "inf" : "-inf")
                                                                          : shown(json(out))) +
                  ")",
         number_range_hint(min_value, max_value));
}

void StrictReader::optional_number_in(const std::string& key, std::optional<double>& out, double min_value,
                                      double max_value) {
  if (!get(key)) return;
  double x = 0;
  number_in(key, x, min_value, max_value);
  out = x;
}

void StrictReader::choice(const std::string& key, std::string& out, const std::vector<std::string>& allowed) {
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + (a.empty() ? "null" : a);
  if (const json* v = get(key); v && !v->is_string())
    fail(key, std::string("expected a string, got ") + v->type_name(), "one of: " + list + ", in double quotes");
  str(key, out);
  for (const auto& a : allowed)
    if (a == out) return;
  fail(key, "invalid value '" + out + "'", "one of: " + list);
}

void StrictReader::strings(const std::string& key, std::vector<std::string>& out) {
  const json* v = get(key);
  if (!v) return;
  if (v->is_string()) {
    out = {v->get<std::string>()};
    return;
  }
  if (!v->is_array()) fail(key, std::string("expected a list of strings, got ") + v->type_name(), kStringsHint);
  out.clear();
  for (std::size_t i = 0; i < v->size(); ++i) {
    if (!(*v)[i].is_string())
      fail(key + "/" + std::to_string(i), std::string("expected a string, got ") + (*v)[i].type_name(),
           "each entry is text in double quotes, e.g. [\"a\", \"b\"]");
    out.push_back((*v)[i].get<std::string>());
  }
}

const json* StrictReader::object(const std::string& key) {
  const json* v = get(key);
  if (v && !v->is_object()) fail(key, std::string("expected an object, got ") + v->type_name(), kObjectHint);
  return v;
}

void StrictReader::reject_unknown(const std::string& hint) const {
  for (auto it = j_.begin(); it != j_.end(); ++it)
    if (!seen_.count(it.key())) fail(it.key(), "unknown key", unknown_key_hint(it.key(), hint));
}

std::string StrictReader::unknown_key_hint(const std::string& key, const std::string& hint) const {
  const std::optional<std::string> near = closest_name(key, seen_);
  if (!near) return hint;
  return "did you mean '" + *near + "'?" + (hint.empty() ? "" : " " + hint);
}

}  // namespace balerbench
