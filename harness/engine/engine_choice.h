// engine_choice.h: which training engine a run asks for: an engine of the registry by its name
// (engine_registry.h), or auto.
//   libtorch  LibTorch autograd: the reference, every model, precision and device
//   fused     the hand-written forward, backward and Adam: on the CPU engine/fused_engine.h, on CUDA
//             engine/cuda/fused_cuda_engine.h (one name, an entry per device)
//   auto      the first engine of the registry that runs the model, precision and device and that
//             auto may take (fused, where it can), else the reference (libtorch)
// Parsed once where names come in (configs, experiment axes, the CLI); stored trials keep the
// resolved name (never "auto"). The names are the registry's: an engine's name is its entry's, so a
// new engine, built in or registered from a test (EngineRegistration), needs nothing here. No
// LibTorch headers: the run config's parser and the LibTorch-free tests read this.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace balerbench {

struct EngineEntry;  // engine_registry.h

// An engine by its registry name, or auto. Made by find_engine (from a config's name), by an
// entry's kind(), or as one of the constants below, which name the engines code refers to when it
// compiles (the fused engine's kind(), the defaults of TrainOptions and EngineDecision, tests);
// a new engine needs none.
class EngineKind {
 public:
  static const EngineKind kAuto, kLibtorch, kFused;
  const char* name() const { return name_; }
  bool operator==(const EngineKind& o) const { return std::string_view(name_) == o.name_; }
  bool operator!=(const EngineKind& o) const { return !(*this == o); }
  bool operator<(const EngineKind& o) const { return std::string_view(name_) < o.name_; }  // sets, maps

 private:
  friend struct EngineEntry;
  constexpr explicit EngineKind(const char* name) : name_(name) {}
  const char* name_;  // "auto" or a registry entry's name: a string that outlives the kind
};
inline constexpr EngineKind EngineKind::kAuto{"auto"};
inline constexpr EngineKind EngineKind::kLibtorch{"libtorch"};
inline constexpr EngineKind EngineKind::kFused{"fused"};

inline const char* engine_name(EngineKind e) { return e.name(); }

// The registry's names (engine_registry.cpp): "auto" or a registered engine's name; nullopt for
// any other.
std::optional<EngineKind> find_engine(const std::string& name);
// "auto", the reference engine, then the others in the order auto tries them: "auto, libtorch,
// fused", then any registered engine.
std::vector<std::string> engine_names();
std::string engine_name_list();

}  // namespace balerbench
