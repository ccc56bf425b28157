// engine_choice.h: which training engine a run asks for, as one enum with one name table.
//   libtorch  LibTorch autograd: the reference, every model, precision and device
//   fused     the hand-written forward, backward and Adam of engine/fused_engine.h
//   auto      fused where it supports the model, precision and device, else libtorch
// Parsed once where names come in (configs, experiment axes, the CLI); stored trials keep the
// resolved name (never "auto"). An engine registered from outside the built-in ones (a test's,
// engine/engine_registry.h's EngineRegistration) adds its name here while it is registered.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace balerbench {

enum class EngineKind { kAuto, kLibtorch, kFused };

const char* engine_name(EngineKind e);
std::optional<EngineKind> find_engine(const std::string& name);
const std::vector<std::string>& engine_names();  // "auto" first
std::string engine_name_list();                  // "auto, libtorch, fused"

// A kind beyond the built-in ones, named `name` (a string that outlives the kind), until
// remove_engine_name; for engine/engine_registry.h's EngineRegistration only.
EngineKind add_engine_name(const char* name);
void remove_engine_name(EngineKind kind);

}  // namespace balerbench
