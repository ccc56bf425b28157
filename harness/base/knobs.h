// knobs.h: the settings an engine, a meter or a codec owns ("knobs"), each in a section of its own
// that its registry entry carries, so that a new one with settings is its own files and one
// registration line.
//
// A section gives each of its keys a default, a strict reader (errors name the JSON path, as every
// config error does) and its words in the configuration reference. The config's parser reads every
// registered entry's section into one Knobs value (the engines' at the run config's root, the
// meters' in `energy`, the codecs' in `codecs`); that value travels whole to the entries, which read
// their own keys back by name. Keys keep the names configs and stored trials spell them with
// ("fused_products", "codecs.zstd_level"), since each section writes them where they always were.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "harness/base/config_key_docs.h"
#include "harness/base/strict_json.h"

namespace balerbench {

// Key -> value, spelled as the config spells them ("fused_shards": 0).
class Knobs {
 public:
  // The value of `key`; std::logic_error when no registered section set it (an entry registered
  // after the config was read, or a misspelled key in the entry's own code).
  const nlohmann::json& at(const std::string& key) const;
  template <typename T>
  T get(const std::string& key) const {
    return at(key).get<T>();
  }
  // A key whose value may be absent (null): e.g. energy.cpu_tdp_w, where absent means "estimate it".
  std::optional<double> optional_number(const std::string& key) const {
    const nlohmann::json& v = at(key);
    return v.is_null() ? std::nullopt : std::optional<double>(v.get<double>());
  }
  void set(const std::string& key, nlohmann::json value) { values_[key] = std::move(value); }
  // Every key and value, as the config's to_json writes them beside the section's other keys.
  const nlohmann::json& to_json() const { return values_; }
  // "key=value key=value", in key order: e.g. for a cache key.
  std::string describe() const;

 private:
  nlohmann::json values_ = nlohmann::json::object();
};

// One entry's section: its keys sit in the config section its registry reads (the run config's
// root for engines, `energy` for meters, `codecs` for codecs), under names of its own.
struct KnobSection {
  void (*set_defaults)(Knobs& knobs);
  // Reads its keys from the section's reader (a key left out keeps its value in `knobs`).
  void (*read)(StrictReader& r, Knobs& knobs);
  // Its entries in the configuration reference (base/config_key_docs.h), in reference order, each
  // with its whole JSON path ("/codecs/zstd_level").
  std::vector<ConfigKeyDoc> (*docs)();
};

// A section's reader of an optional number in [min_value, max_value]: absent or null keeps the value
// in `knobs` (null at its default); the value is stored as a number or null.
void read_optional_number_in(StrictReader& r, Knobs& knobs, const std::string& key, double min_value,
                             double max_value);

// The same three over a registry's entries (each with a `knobs` member, null when it has none), in
// the registry's order: what each registry's own functions are made of.
template <typename Entries>
Knobs default_knobs_of(const Entries& entries) {
  Knobs knobs;
  for (const auto* e : entries)
    if (e->knobs) e->knobs->set_defaults(knobs);
  return knobs;
}

template <typename Entries>
void read_knobs_of(const Entries& entries, StrictReader& r, Knobs& knobs) {
  for (const auto* e : entries)
    if (e->knobs) e->knobs->read(r, knobs);
}

template <typename Entries>
std::vector<ConfigKeyDoc> knob_docs_of(const Entries& entries) {
  std::vector<ConfigKeyDoc> docs;
  for (const auto* e : entries)
    if (e->knobs)
      for (ConfigKeyDoc& d : e->knobs->docs()) docs.push_back(std::move(d));
  return docs;
}

}  // namespace balerbench
