// engine_registry.h: the one place an engine is chosen and made, by kind, as tiny-cuda-nn makes a
// network by its "otype". The registry lists the engines in the order `auto` prefers them; each
// entry says what its engine cannot run and makes it for training or for inference.
#pragma once

#include <c10/core/Device.h>

#include <memory>
#include <string>
#include <vector>

#include "harness/engine/engine.h"
#include "harness/engine/engine_choice.h"
#include "harness/engine/engine_knobs.h"
#include "harness/engine/precision.h"
#include "models/autoencoder.h"

namespace balerbench {

// The devices an entry's engine runs on. One engine name may have an entry per device: `fused` is
// the CPU fused engine (fused_entry.cpp) on the CPU and the CUDA one (cuda/fused_cuda_entry.cpp) on
// CUDA; the registry resolves a name by the run's device.
enum class EngineDevices { kAny, kCpu, kCuda };

// What this binary holds of an engine, for `balerbench system` ("fused cuda  built for sm_80 ...").
struct EngineBuildNote {
  const char* key;       // the JSON key: "fused_cuda_engine"
  const char* label;     // the text line's label: "fused cuda"
  std::string (*text)();
};

// What the registry knows of one engine; each engine's file defines its entry.
struct EngineEntry {
  // The name configs, experiments, the CLI and stored trials give it: "fused". A string literal (it
  // outlives every kind made of it); never "auto".
  const char* name;
  // One line of what it is, for the `--engine` help and /engine's words in the configuration
  // reference: "LibTorch autograd: every model, precision and device". No '|' (the reference's
  // table cells).
  const char* summary;
  // Why the engine cannot train `model` at `policy` on `device`; "" when it can.
  std::string (*unsupported)(const AutoEncoder& model, const PrecisionPolicy& policy, c10::Device device);
  // Why `auto` passes the engine by although it could run (it measured slower, say); "" when auto may take it.
  std::string (*auto_skip)(const AutoEncoder& model, const PrecisionPolicy& policy, c10::Device device);
  // Why compress and decompress of a run it trained on `device` go to the reference engine; "" when
  // it runs them there.
  std::string (*inference_unsupported)(const PrecisionPolicy& policy, c10::Device device);
  std::unique_ptr<Engine> (*make_training)(AutoEncoder& model, const TrainingSetup& setup);
  std::unique_ptr<Engine> (*make_inference)(AutoEncoder& model, const InferenceSetup& setup);
  // Its own run-config keys (engine_knobs.h); null when it has none.
  const EngineKnobSection* knobs = nullptr;
  EngineDevices devices = EngineDevices::kAny;
  const EngineBuildNote* build_note = nullptr;  // null: nothing to say
  // The engine as runs and results name it: its name.
  EngineKind kind() const { return EngineKind(name); }
};

// Every entry, in the order auto prefers them; the last is the reference, which runs everything.
const std::vector<const EngineEntry*>& engine_registry();
// The entry of `kind` that runs on `device`'s type. kAuto, or a kind with no entry for the device:
// std::logic_error (resolve kAuto first; every built-in name has an entry for every device).
const EngineEntry& engine_entry(EngineKind kind, c10::Device device);
bool runs_on(const EngineEntry& entry, c10::Device device);

// The build notes of the registry's entries, in its order (for `balerbench system`).
std::vector<const EngineBuildNote*> engine_build_notes();

// The engines a run may name, in the order auto prefers them, each with its summary (the entries of
// one name joined by "; "): "fused (on the CPU: ...; on CUDA: ...) | libtorch (LibTorch
// autograd: ...)", for the `--engine` help.
std::string engine_choices_help();
// /engine's entry in the configuration reference comes from the same summaries: engine_knobs.h's
// engine_key_doc().

// The engine a run trains with, and why. An engine asked for by name that cannot run here is an
// InputError carrying its reason; kAuto takes the first engine of the registry that can run and
// that auto may take, and says which and why.
struct EngineDecision {
  EngineKind engine = EngineKind::kLibtorch;  // never kAuto
  std::string note;                           // "auto: fused (...)" or "auto: libtorch (...)"; empty when asked by name
};
EngineDecision choose_engine(EngineKind requested, const AutoEncoder& model, const PrecisionPolicy& policy,
                             c10::Device device);
// The engine of compress and decompress on `device`: the training's, unless it cannot run the
// policy's inference there, then the reference engine, saying why (the engine that actually runs).
EngineDecision inference_decision(const EngineDecision& training, const PrecisionPolicy& policy, c10::Device device);

// An engine joins the registry while this lives (engines outside this folder: a test's). Its
// name joins the engine names configs accept (engine_choice.h), its knobs the run config's keys
// and the reference; auto tries it after the built-in engines but before the reference.
// std::logic_error when its name is taken.
class EngineRegistration {
 public:
  explicit EngineRegistration(const EngineEntry& entry);  // `entry` must outlive the registration
  ~EngineRegistration();
  EngineRegistration(const EngineRegistration&) = delete;
  EngineRegistration& operator=(const EngineRegistration&) = delete;
  EngineKind kind() const { return entry_->kind(); }

 private:
  const EngineEntry* entry_;
};

std::unique_ptr<Engine> make_training_engine(EngineKind kind, AutoEncoder& model, const TrainingSetup& setup);
std::unique_ptr<Engine> make_inference_engine(EngineKind kind, AutoEncoder& model, const InferenceSetup& setup);

}  // namespace balerbench
