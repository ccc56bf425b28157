// experiment.cpp: see experiment.h. parse_experiment lists the file's sections; each is read beside
// the type it fills (dataset_spec, target_spec, optimizer_spec, batch_size_optimizer_spec), or, when
// it fills Experiment's own fields, in experiment_sections and experiment_sweep; experiment_rules
// checks what the sections must agree on.
#include "harness/sweep/experiment.h"

#include <filesystem>
#include <fstream>
#include <limits>

#include "common/error.h"
#include "common/paths.h"
#include "common/text.h"
#include "harness/base/strict_json.h"
#include "harness/sweep/experiment_rules.h"
#include "harness/sweep/experiment_sections.h"
#include "harness/sweep/experiment_sweep.h"

namespace balerbench {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// A section the file must have: an object, else "is required" with `hint`.
const json& required_section(StrictReader& r, const std::string& key, const std::string& hint) {
  const json* section = r.object(key);
  if (!section) r.fail(key, "is required", hint);
  return *section;
}

}  // namespace

int64_t Experiment::grid_size() const {
  int64_t n = repeats;
  for (const std::size_t axis : {models.size(), compression_ratios.size(), batch_sizes.size(), precisions.size(),
                                 engines.size(), power_limits_w.size(), epochs.size()}) {
    if (axis != 0 && n > std::numeric_limits<int64_t>::max() / static_cast<int64_t>(axis))
      return std::numeric_limits<int64_t>::max();
    n *= static_cast<int64_t>(axis);
  }
  return n;
}

std::string Experiment::grid_shape() const {
  auto part = [](std::size_t n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
  };
  // The model and ratio only when they vary: the shape of every other grid reads as it did.
  std::string fidelity;
  if (models.size() > 1) fidelity += part(models.size(), "model", "models") + " x ";
  if (compression_ratios.size() > 1) fidelity += part(compression_ratios.size(), "compression ratio", "compression ratios") + " x ";
  return fidelity + part(batch_sizes.size(), "batch size", "batch sizes") + " x " + part(precisions.size(), "precision", "precisions") +
         " x " + part(engines.size(), "engine", "engines") + " x " +
         part(power_limits_w.size(), "power limit", "power limits") + " x " +
         part(epochs.size(), "epochs value", "epochs values") + " x " +
         part(static_cast<std::size_t>(repeats), "repeat", "repeats");
}

std::string experiment_name_problem(const std::string& name) {
  if (name.empty()) return "is empty";
  if (name.size() > kMaxExperimentNameBytes)
    return "is longer than " + std::to_string(kMaxExperimentNameBytes) + " bytes";
  if (name.front() == '.') return "starts with '.'";
  for (const char c : name)
    if (c == '/' || c == '\\') return std::string("holds '") + c + "'";
  // Control, C1, bidirectional and invisible characters, and bytes that are not UTF-8: the name is
  // shown in tables, pages and file names, where they would hide or reorder what it says.
  return hidden_character_problem(name);
}

Experiment parse_experiment(const json& j, const std::string& source, const std::string& base_dir) {
  if (!j.is_object())
    throw InputError(source + ": an experiment must be a JSON object", "see experiments/quickstart.json");
  StrictReader r(j, source);
  Experiment e;
  e.source = source;
  e.raw = j;
  // The sections in the file's order; the model axes come before /training (whose run config needs a
  // model), the other axes after it (their defaults are /training's engine and epochs).
  parse_experiment_header(r, e);
  e.dataset = parse_dataset_spec(
      required_section(r, "dataset", "{\"generator\": {\"kind\": \"cms\", \"rows\": 20000}} or {\"path\": ...}"),
      source, base_dir);
  const json* model = r.object("model");
  const json& sweep =
      required_section(r, "sweep", "{\"batch_size\": [512], \"precision\": [\"fp32\"], \"epochs\": [10]}");
  parse_model_axes(model, sweep, j, source, e);
  e.base = parse_training_section(r.object("training"), e, source, base_dir);
  parse_sweep_section(sweep, source, e);
  if (const json* t = r.object("target")) e.target = parse_target_spec(*t, source);
  if (const json* en = r.object("energy")) parse_energy_section(*en, source, base_dir, e);
  if (const json* c = r.object("cost")) parse_cost_section(*c, source, e);
  if (const json* k = r.object("codecs")) e.base.codecs = parse_codecs_keys(*k, source, "/codecs", true);
  r.boolean("allow_power_limit_changes", e.allow_power_limit_changes);
  if (const json* o = r.object("power_limit_optimizer")) e.optimizer = parse_optimizer_spec(*o, source);
  if (const json* b = r.object("batch_size_optimizer"))
    e.batch_size_optimizer = parse_batch_size_optimizer_spec(*b, source);
  check_power_limit_rules(e, source);
  check_batch_size_optimizer_rules(e, source);
  r.reject_unknown(
      "experiment keys: schema_version, name, description, dataset, model, training, sweep, target, energy, cost, "
      "codecs, allow_power_limit_changes, power_limit_optimizer, batch_size_optimizer");
  return e;
}

Experiment load_experiment(const std::string& path) {
  check_input_file(path, "experiment file", "give an experiment FILE.json, e.g. experiments/quickstart.json");
  if (!std::ifstream(path)) throw InputError(path + ": cannot open the experiment file", "check the path");
  const json j = parse_json_file_strict(path);
  Experiment e = parse_experiment(j, path, fs::path(path).parent_path().string());
  // The data file before anything runs or is written (a dry run included): its key names its content.
  if (!e.dataset.path.empty()) {
    std::error_code ec;
    if (!fs::is_regular_file(e.dataset.path, ec))
      throw InputError(path + ": /dataset/path: no such file '" + e.dataset.path + "'",
                       "paths are relative to the experiment file's folder; make one with `balerbench data generate`");
  }
  return e;
}

}  // namespace balerbench
