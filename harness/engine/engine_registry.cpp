// engine_registry.cpp: see engine_registry.h. To add an engine: its file defines an EngineEntry
// (see fused_entry.cpp's fused_engine_entry), declared and listed below; its name,
// its knobs and its words in the help and the reference come from the entry. An entry serves the
// devices its `devices` names; one name may have an entry per device (fused: CPU and CUDA).
#include "harness/engine/engine_registry.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "common/error.h"
#include "common/text.h"

namespace balerbench {

const EngineEntry& fused_engine_entry();       // fused_entry.cpp: the CPU fused engine
const EngineEntry& fused_cuda_engine_entry();  // cuda/fused_cuda_entry.cpp: the CUDA one, also named fused
const EngineEntry& libtorch_engine_entry();    // libtorch_engine.cpp

namespace {

// The built-in engines in the order auto prefers them, the reference last; a registration goes
// before the reference.
std::vector<const EngineEntry*>& entries() {
  static std::vector<const EngineEntry*> all = {
      &fused_engine_entry(),
      &fused_cuda_engine_entry(),
      &libtorch_engine_entry(),  // the reference: every model, precision and device
  };
  return all;
}

}  // namespace

const std::vector<const EngineEntry*>& engine_registry() { return entries(); }

std::optional<EngineKind> find_engine(const std::string& name) {
  if (name == EngineKind::kAuto.name()) return EngineKind::kAuto;
  for (const EngineEntry* e : engine_registry())
    if (name == e->name) return e->kind();
  return std::nullopt;
}

std::vector<std::string> engine_names() {
  // The reference first, as the names were listed before the registry named them ("auto, libtorch,
  // fused"), so that messages listing them read the same.
  std::vector<std::string> names = {EngineKind::kAuto.name(), engine_registry().back()->name};
  for (const EngineEntry* e : engine_registry())  // one name may have an entry per device
    if (std::find(names.begin(), names.end(), e->name) == names.end()) names.emplace_back(e->name);
  return names;
}

std::string engine_name_list() { return joined(engine_names()); }

EngineKnobs default_engine_knobs() { return default_knobs_of(engine_registry()); }

void read_engine_knobs(StrictReader& r, EngineKnobs& knobs) { read_knobs_of(engine_registry(), r, knobs); }

std::vector<ConfigKeyDoc> engine_knob_docs() { return knob_docs_of(engine_registry()); }

namespace {

// Each engine name with its entries' summaries joined by "; ", in the registry's order.
std::vector<std::pair<EngineKind, std::string>> summaries_by_name() {
  std::vector<std::pair<EngineKind, std::string>> named;
  for (const EngineEntry* e : engine_registry()) {
    auto it = std::find_if(named.begin(), named.end(), [&](const auto& n) { return n.first == e->kind(); });
    if (it == named.end()) named.emplace_back(e->kind(), e->summary);
    else it->second += std::string("; ") + e->summary;
  }
  return named;
}

}  // namespace

std::string engine_choices_help() {
  std::string help;
  for (const auto& [kind, summary] : summaries_by_name())
    help += (help.empty() ? "" : " | ") + std::string(engine_name(kind)) + " (" + summary + ")";
  return help;
}

ConfigKeyDoc engine_key_doc() {
  std::string words;
  for (const auto& [kind, summary] : summaries_by_name())
    words += "`" + std::string(engine_name(kind)) + "` (" + summary + "), ";
  return {"/engine",
          words + "or `auto` = the first of these that can run the model, precision and device and that auto may "
                  "pick (each says when); the run says which and why (see [Precision and engines](precision.md))",
          ""};
}

EngineRegistration::EngineRegistration(const EngineEntry& entry) : entry_(&entry) {
  if (find_engine(entry.name)) throw std::logic_error(std::string("engine name '") + entry.name + "' is taken");
  entries().insert(entries().end() - 1, entry_);  // the reference stays last
}

EngineRegistration::~EngineRegistration() {
  auto& all = entries();
  all.erase(std::find(all.begin(), all.end(), entry_));
}

bool runs_on(const EngineEntry& entry, c10::Device device) {
  switch (entry.devices) {
    case EngineDevices::kCpu: return device.is_cpu();
    case EngineDevices::kCuda: return device.is_cuda();
    case EngineDevices::kAny: break;
  }
  return true;
}

const EngineEntry& engine_entry(EngineKind kind, c10::Device device) {
  for (const EngineEntry* e : engine_registry())
    if (e->kind() == kind && runs_on(*e, device)) return *e;
  throw std::logic_error(std::string("no engine registered for '") + engine_name(kind) + "' on " + device.str() +
                         " (resolve auto with choose_engine first)");
}

std::vector<const EngineBuildNote*> engine_build_notes() {
  std::vector<const EngineBuildNote*> notes;
  for (const EngineEntry* e : engine_registry())
    if (e->build_note) notes.push_back(e->build_note);
  return notes;
}

EngineDecision choose_engine(EngineKind requested, const AutoEncoder& model, const PrecisionPolicy& policy,
                             c10::Device device) {
  EngineDecision d;
  if (requested != EngineKind::kAuto) {
    const std::string why = engine_entry(requested, device).unsupported(model, policy, device);
    if (!why.empty())
      throw InputError(std::string("engine '") + engine_name(requested) + "' cannot train this run: " + why,
                       "use engine libtorch, or auto");
    d.engine = requested;
    return d;
  }
  std::string passed_by;  // why auto passed the engines before the one it takes
  for (const EngineEntry* e : engine_registry()) {
    if (!runs_on(*e, device)) continue;
    std::string why = e->unsupported(model, policy, device);
    if (why.empty()) why = e->auto_skip(model, policy, device);
    if (why.empty()) {
      d.engine = e->kind();
      d.note = std::string("auto: ") + e->name + " (" +
               (passed_by.empty() ? model.architecture().model_name + ", " + policy.name() + ", " + device.str()
                                  : passed_by) +
               ")";
      return d;
    }
    passed_by += (passed_by.empty() ? "" : "; ") + why;
  }
  throw std::logic_error("choose_engine: no engine runs this (the reference engine must run everything)");
}

EngineDecision inference_decision(const EngineDecision& training, const PrecisionPolicy& policy, c10::Device device) {
  const std::string why = engine_entry(training.engine, device).inference_unsupported(policy, device);
  if (why.empty()) return training;
  return {engine_registry().back()->kind(), why};
}

std::unique_ptr<Engine> make_training_engine(EngineKind kind, AutoEncoder& model, const TrainingSetup& setup) {
  return engine_entry(kind, setup.device).make_training(model, setup);
}

std::unique_ptr<Engine> make_inference_engine(EngineKind kind, AutoEncoder& model, const InferenceSetup& setup) {
  // An inference engine runs where the model's parameters are.
  return engine_entry(kind, model.parameters().front().device()).make_inference(model, setup);
}

}  // namespace balerbench
