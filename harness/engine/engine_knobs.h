// engine_knobs.h: the engines' own run-config keys ("knobs"), each engine owning its section
// (base/knobs.h, as meters and codecs own theirs).
//
// An engine with knobs gives its EngineEntry (engine_registry.h) a KnobSection: each key's default,
// its strict reader, and its entries in the configuration reference. parse_run_config reads every
// registered engine's section into one EngineKnobs value (RunConfig::engine_knobs); TrainOptions
// and InferenceSetup carry that value, whole, to the engine, which reads its own keys back by name.
// Nothing between the config and the engine names an engine's key, so an engine with knobs is its
// own files and one registry line. No LibTorch headers: the run config's parser reads this.
#pragma once

#include <vector>

#include "harness/base/config_key_docs.h"
#include "harness/base/knobs.h"

namespace balerbench {

// An engine's knobs are Knobs; its section's keys sit at the config's root, named for the engine
// ("fused_products"), so that configs read the same as before engines owned their keys.
using EngineKnobs = Knobs;
using EngineKnobSection = KnobSection;

// Every registered engine's knobs (engine_registry.cpp): at their defaults; read from a run
// config's root reader; their entries in the configuration reference, in registry order.
EngineKnobs default_engine_knobs();
void read_engine_knobs(StrictReader& r, EngineKnobs& knobs);
std::vector<ConfigKeyDoc> engine_knob_docs();
// /engine's entry in the configuration reference: each registered engine's name and summary
// (engine_registry.h's EngineEntry), in the order auto prefers them, then `auto`.
ConfigKeyDoc engine_key_doc();

}  // namespace balerbench
