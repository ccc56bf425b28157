// strict_json.cpp: see strict_json.h.
#include "harness/base/strict_json.h"

#include <cmath>

#include "datasets/error.h"

namespace balerbench {

std::string shown(const nlohmann::json& v) { return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }


using nlohmann::json;

StrictReader::StrictReader(const json& j, std::string source, std::string path)
    : j_(j), source_(std::move(source)), path_(std::move(path)) {
  if (!j_.is_object())
    throw InputError(source_ + ": " + (path_.empty() ? "/" : path_) + ": expected a JSON object, got " +
                     j_.type_name());
}

void StrictReader::fail(const std::string& key, const std::string& what, const std::string& hint) const {
  throw InputError(source_ + ": " + path_of(key) + ": " + what, hint);
}

const json* StrictReader::get(const std::string& key) {
  seen_.insert(key);
  auto it = j_.find(key);
  if (it == j_.end() || it->is_null()) return nullptr;
  return &*it;
}

void StrictReader::str(const std::string& key, std::string& out) {
  const json* v = get(key);
  if (!v) return;
  if (!v->is_string()) fail(key, std::string("expected a string, got ") + v->type_name());
  out = v->get<std::string>();
}

void StrictReader::boolean(const std::string& key, bool& out) {
  const json* v = get(key);
  if (!v) return;
  if (!v->is_boolean()) fail(key, std::string("expected true or false, got ") + v->type_name());
  out = v->get<bool>();
}

void StrictReader::integer(const std::string& key, int64_t& out, int64_t min_value) {
  const json* v = get(key);
  if (!v) return;
  if (!v->is_number_integer()) fail(key, std::string("expected an integer, got ") + v->type_name() + " " + shown(*v));
  const int64_t x = v->get<int64_t>();
  if (x < min_value) fail(key, "must be at least " + std::to_string(min_value) + " (got " + std::to_string(x) + ")");
  out = x;
}

void StrictReader::number(const std::string& key, double& out) {
  const json* v = get(key);
  if (!v) return;
  if (!v->is_number()) fail(key, std::string("expected a number, got ") + v->type_name() + " " + shown(*v));
  out = v->get<double>();
}

void StrictReader::number_in(const std::string& key, double& out, double min_value, double max_value) {
  number(key, out);
  if (!(out >= min_value && out <= max_value) || !std::isfinite(out))
    fail(key, "must be in [" + json(min_value).dump() + ", " + json(max_value).dump() + "] (got " + shown(json(out)) +
                  ")");
}

void StrictReader::optional_number_in(const std::string& key, std::optional<double>& out, double min_value,
                                      double max_value) {
  if (!get(key)) return;
  double x = 0;
  number_in(key, x, min_value, max_value);
  out = x;
}

void StrictReader::choice(const std::string& key, std::string& out, const std::vector<std::string>& allowed) {
  str(key, out);
  for (const auto& a : allowed)
    if (a == out) return;
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + (a.empty() ? "null" : a);
  fail(key, "invalid value '" + out + "'", "one of: " + list);
}

void StrictReader::strings(const std::string& key, std::vector<std::string>& out) {
  const json* v = get(key);
  if (!v) return;
  if (v->is_string()) {
    out = {v->get<std::string>()};
    return;
  }
  if (!v->is_array()) fail(key, std::string("expected a list of strings, got ") + v->type_name());
  out.clear();
  for (std::size_t i = 0; i < v->size(); ++i) {
    if (!(*v)[i].is_string())
      fail(key + "/" + std::to_string(i), std::string("expected a string, got ") + (*v)[i].type_name());
    out.push_back((*v)[i].get<std::string>());
  }
}

const json* StrictReader::object(const std::string& key) {
  const json* v = get(key);
  if (v && !v->is_object()) fail(key, std::string("expected an object, got ") + v->type_name());
  return v;
}

void StrictReader::reject_unknown(const std::string& hint) const {
  for (auto it = j_.begin(); it != j_.end(); ++it)
    if (!seen_.count(it.key())) fail(it.key(), "unknown key", hint);
}

}  // namespace balerbench
