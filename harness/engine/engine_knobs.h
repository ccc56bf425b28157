// engine_knobs.h: the engines' own run-config keys ("knobs"), each engine owning its section.
//
// An engine with knobs gives its EngineEntry (engine_registry.h) an EngineKnobSection: each key's
// default, its strict reader, and its entries in the configuration reference. parse_run_config
// reads every registered engine's section into one EngineKnobs value (RunConfig::engine_knobs);
// TrainOptions and InferenceSetup carry that value, whole, to the engine, which reads its own keys
// back by name. Nothing between the config and the engine names an engine's key, so an engine with
// knobs is its own files and one registry line.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "harness/base/config_key_docs.h"
#include "harness/base/strict_json.h"

namespace balerbench {

// Key -> value, spelled as the run config spells them ("fused_shards": 0).
class EngineKnobs {
 public:
  // The value of `key`; std::logic_error when no registered engine set it.
  const nlohmann::json& at(const std::string& key) const;
  template <typename T>
  T get(const std::string& key) const {
    return at(key).get<T>();
  }
  void set(const std::string& key, nlohmann::json value) { values_[key] = std::move(value); }
  // Every key and value, as RunConfig::to_json writes them beside the other keys.
  const nlohmann::json& to_json() const { return values_; }
  // "key=value key=value", in key order: e.g. for a cache key.
  std::string describe() const;

 private:
  nlohmann::json values_ = nlohmann::json::object();
};

// One engine's section of the run config: keys at the config's root, named for the engine
// ("fused_products"), so that configs read the same as before engines owned their keys.
struct EngineKnobSection {
  void (*set_defaults)(EngineKnobs& knobs);
  // Reads its keys from the run config's root reader (a key left out keeps its value in `knobs`).
  void (*read)(StrictReader& r, EngineKnobs& knobs);
  // Its entries in the configuration reference (base/config_key_docs.h), in reference order.
  std::vector<ConfigKeyDoc> (*docs)();
};

// Every registered engine's knobs (engine_registry.cpp): at their defaults; read from a run
// config's root reader; their entries in the configuration reference, in registry order.
EngineKnobs default_engine_knobs();
void read_engine_knobs(StrictReader& r, EngineKnobs& knobs);
std::vector<ConfigKeyDoc> engine_knob_docs();
// /engine's entry in the configuration reference: each registered engine's name and summary
// (engine_registry.h's EngineEntry), in the order auto prefers them, then `auto`.
ConfigKeyDoc engine_key_doc();

}  // namespace balerbench
