// experiment.cpp: see experiment.h. parse_experiment lists the file's sections; the spec types read
// theirs beside their definitions (dataset_spec, target_spec, optimizer_spec,
// batch_size_optimizer_spec), the axes are experiment_sweep's.
#include "harness/sweep/experiment.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "common/error.h"
#include "common/paths.h"
#include "common/text.h"
#include "datasets/generator_registry.h"
#include "harness/base/strict_json.h"
#include "harness/sweep/experiment_sweep.h"

namespace balerbench {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// Keys of "training" that the experiment sets elsewhere.
const std::vector<std::pair<std::string, std::string>> kTrainingKeysElsewhere = {
    {"input_path", "set the data under /dataset"},
    {"model_name", "set the model under /model/name, or several under /sweep/model"},
    {"compression_ratio", "set it under /model/compression_ratio, or several under /sweep/compression_ratio"},
    {"epochs", "epochs is a sweep axis: /sweep/epochs"},
    {"batch_size", "batch_size is a sweep axis: /sweep/batch_size"},
    {"precision", "precision is a sweep axis: /sweep/precision"},
    {"engine", "engine is a sweep axis: /sweep/engine"},
    {"energy", "energy settings go in the top-level /energy section"},
    {"codecs", "the codec comparison goes in the top-level /codecs section"},
    {"monitoring", "live monitoring is set on the command line (balerbench run --prometheus-port ...)"},
    {"profile_trace", "a profiler trace per trial is not supported; use balerbench train --profile-trace"},
    {"intermittent_model_saving", "trials keep no model files"},
};

std::string format_number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// ---- parse_experiment's sections, in the file's order ----

// schema_version, name (the file's stem when absent) and description.
void parse_header(StrictReader& r, const std::string& source, Experiment& e) {
  int64_t version = 0;
  if (!r.get("schema_version"))
    r.fail("schema_version", "is required", "add \"schema_version\": " + std::to_string(kExperimentSchemaVersion));
  r.integer("schema_version", version, 1);
  if (version != kExperimentSchemaVersion)
    r.fail("schema_version", "is " + std::to_string(version) + " but this balerbench reads version " +
                                 std::to_string(kExperimentSchemaVersion));
  e.schema_version = static_cast<int>(version);
  const bool named = r.get("name") != nullptr;
  r.str("name", e.name);
  if (!named) e.name = fs::path(source).stem().string();
  if (const std::string problem = experiment_name_problem(e.name); !problem.empty())
    r.fail("name", shown(e.name) + (named ? "" : " (the file's name, as there is no \"name\")") + " " + problem +
                       ": the name is part of the report's file names",
           "a name with no / or \\, no control, bidirectional or invisible character, not starting with '.', at "
           "most 120 bytes; letters, digits and - _ . + keep report file names as the name is (others become _), "
           "e.g. \"name\": \"cpu_sweep\"");
  r.str("description", e.description);
}

// /training: the run config every trial starts from, with the dataset and model filled in.
RunConfig parse_training_section(const json* t, const Experiment& e, const std::string& model_name, double ratio,
                                 const std::string& source, const std::string& base_dir) {
  json training = json::object();
  if (t) training = *t;
  for (const auto& [key, hint] : kTrainingKeysElsewhere)
    if (training.contains(key)) throw InputError(source + ": /training/" + key + ": not allowed here", hint);
  training["input_path"] = e.dataset.path.empty() ? "synthetic:" + e.dataset.generator : e.dataset.path;
  training["model_name"] = model_name;
  training["compression_ratio"] = ratio;
  const DatasetGenerator* generator = find_dataset_generator(e.dataset.generator);
  if (generator && generator->type_list && !training.contains("type_list"))
    training["type_list"] = generator->type_list();  // the generator's integer columns, as Baler's CMS config
  RunConfig base = parse_run_config(training, source, base_dir, "/training");
  if (!e.dataset.path.empty()) base.input_path = e.dataset.path;
  return base;
}

// /energy: the run config's energy section, with the sweep's own cooldown_s and thermal taken out.
void parse_energy_section(const json& en, const std::string& source, const std::string& base_dir, Experiment& e) {
  json energy = en;
  if (energy.is_object()) {
    StrictReader er(energy, source, "/energy");  // only for /energy/thermal; the rest is the run config's
    if (const json* th = er.object("thermal")) e.thermal = parse_thermal_settings(*th, source, "/energy/thermal");
    energy.erase("thermal");
  }
  if (energy.contains("cooldown_s")) {
    const json& c = energy["cooldown_s"];
    if (!c.is_number() || c.get<double>() < 0 || c.get<double>() > 86400)
      throw InputError(source + ": /energy/cooldown_s: must be a number of seconds in [0, 86400], got " + shown(c));
    e.cooldown_s = c.get<double>();
    energy.erase("cooldown_s");
  }
  e.base.energy = parse_energy_settings(energy, source, "/energy", base_dir);
}

// /cost: the etas of the Zeus cost and MaxPower.
void parse_cost_section(const json& c, const std::string& source, Experiment& e) {
  StrictReader cr(c, source, "/cost");
  if (const json* v = cr.get("eta")) {
    const json list = v->is_array() ? *v : json::array({*v});
    if (list.empty()) cr.fail("eta", "must list at least one value in [0, 1]");
    e.etas.clear();
    for (std::size_t i = 0; i < list.size(); ++i) {
      if (!list[i].is_number() || list[i].get<double>() < 0 || list[i].get<double>() > 1)
        cr.fail("eta/" + std::to_string(i), "must be a number in [0, 1], got " + shown(list[i]),
                "0 weighs only time, 1 only energy, e.g. [0, 0.5, 1]");
      e.etas.push_back(list[i].get<double>());
    }
  }
  cr.optional_number_in("max_power_w", e.max_power_w, 1e-3, 1e6);
  cr.reject_unknown("cost keys: eta, max_power_w");
}

// The batch-size optimiser runs recurrences, not a grid: one value on every axis but batch size, at
// most /sweep/epochs a recurrence's attempt, to the target.
void check_batch_size_optimizer_rules(Experiment& e, const std::string& source) {
  const BatchSizeOptimizerSpec& s = e.batch_size_optimizer;
  if (!s.enabled) return;
  const std::string at = source + ": /batch_size_optimizer: ";
  auto refuse = [&](const std::string& what, const std::string& hint) { throw InputError(at + what, hint); };
  if (s.default_batch_size == 0)
    refuse("needs the job's default batch size",
           "add \"default_batch_size\": one of /sweep/batch_size, the batch size the job runs without the optimiser");
  if (std::find(e.batch_sizes.begin(), e.batch_sizes.end(), s.default_batch_size) == e.batch_sizes.end())
    refuse("default_batch_size " + std::to_string(s.default_batch_size) + " is not in /sweep/batch_size",
           "the batch sizes the optimiser chooses from include the default");
  if (!e.target.enabled())
    refuse("the recurrences need a target: each attempt trains until it reaches it",
           "add a /target, e.g. {\"relative_error\": 0.05}");
  if (e.raw.contains("target") && e.raw["target"].contains("stop_when_reached") && !e.target.stop_when_reached)
    refuse("each attempt stops at the target, but /target/stop_when_reached is false", "remove it, or set it to true");
  e.target.stop_when_reached = true;
  if (!e.base.energy.enabled)
    refuse("the optimiser weighs measured energy against time, but /energy/enabled is false",
           "remove \"enabled\": false from /energy");
  if (e.precisions.size() != 1 || e.engines.size() != 1 || e.epochs.size() != 1)
    refuse("/sweep lists several precisions, engines or epoch counts",
           "the recurrences vary the batch size only: one precision, one engine, and one epochs value (the most a "
           "recurrence's attempt trains)");
  if (e.models.size() != 1 || e.compression_ratios.size() != 1)
    refuse("/sweep lists several models or compression ratios",
           "the recurrences vary the batch size only: run one experiment per model and compression ratio");
  if (e.repeats != 1) refuse("/sweep/repeats is " + std::to_string(e.repeats), "the recurrences are the repeats: remove it");
  if (e.power_limits_w.size() != 1 || e.power_limits_w.front())
    refuse("/sweep/power_limit_w lists limits",
           "the power limit is chosen just in time by /power_limit_optimizer (enable it on GPUs), or left as it is: "
           "use [null]");
  if (e.order == "shuffled")
    refuse("/sweep/order is shuffled", "the recurrences run in their own order, one after another: remove it");
  if (e.warmup_trials != 0)
    refuse("/sweep/warmup_trials is not run with the batch-size optimiser",
           "run a warm-up experiment first, or remove it (the first recurrence starts at the default batch size)");
}

// Power limits change only when the experiment allows it, the optimiser needs measured energy, and
// the optimiser and a list of limits exclude each other.
void check_power_limit_rules(const Experiment& e, const std::string& source) {
  const bool sets_limits =
      std::any_of(e.power_limits_w.begin(), e.power_limits_w.end(), [](const auto& w) { return w.has_value(); });
  if ((sets_limits || e.optimizer.enabled) && !e.allow_power_limit_changes)
    throw InputError(source + ": /allow_power_limit_changes: the experiment " +
                         (sets_limits ? std::string("lists power limits in /sweep/power_limit_w")
                                      : std::string("enables /power_limit_optimizer")) +
                         " but does not allow changing them",
                     "add \"allow_power_limit_changes\": true (the original limits are restored after every trial), "
                     "or use [null] to run at the limit in force");
  if (e.optimizer.enabled && !e.base.energy.enabled)
    throw InputError(source + ": /power_limit_optimizer: the optimiser weighs measured energy against time, "
                              "but /energy/enabled is false",
                     "remove \"enabled\": false from /energy, or disable the optimiser");
  if (e.optimizer.enabled && sets_limits)
    throw InputError(source + ": /power_limit_optimizer: the optimiser chooses the limit itself",
                     "set /sweep/power_limit_w to [null] when the optimiser is enabled");
}

// A section the file must have: an object, else "is required" with `hint`.
const json& required_section(StrictReader& r, const std::string& key, const std::string& hint) {
  const json* section = r.object(key);
  if (!section) r.fail(key, "is required", hint);
  return *section;
}

}  // namespace

json RecurrenceAttempt::to_json() const {
  json j = plan.to_json();
  j["eta"] = eta;
  j["max_power_w"] = max_power_w;
  return j;
}

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

std::string TrialSpec::label() const {
  const std::string fidelity = (labels_model ? model() + " " : std::string()) +
                               (labels_ratio ? "cr=" + format_number(compression_ratio()) + " " : std::string());
  return fidelity + "bs=" + std::to_string(batch_size()) + " " + precision_name(precision()) + " " + engine_name(engine()) +
         " pl=" + (power_limit_w ? format_number(*power_limit_w) + "W" : std::string("-")) +
         " ep=" + std::to_string(epochs()) +
         (warmup       ? " warm-up"
          : recurrence ? " recurrence " + std::to_string(recurrence->plan.recurrence + 1) + " attempt " +
                             std::to_string(recurrence->plan.attempt) + " (" + recurrence->plan.stage +
                             (recurrence->plan.profile_power_limit ? ", profiling limits" : "") + ")"
                       : " #" + std::to_string(repeat));
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
  parse_header(r, source, e);
  e.dataset = parse_dataset_spec(
      required_section(r, "dataset", "{\"generator\": {\"kind\": \"cms\", \"rows\": 20000}} or {\"path\": ...}"),
      source, base_dir);
  const json* model = r.object("model");
  const json& sweep =
      required_section(r, "sweep", "{\"batch_size\": [512], \"precision\": [\"fp32\"], \"epochs\": [10]}");
  parse_model_axes(model, sweep, j, source, e);
  e.base = parse_training_section(r.object("training"), e, e.models.front(), e.compression_ratios.front(), source,
                                  base_dir);
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
