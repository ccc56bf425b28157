// experiment_sections.cpp: see experiment_sections.h.
#include "harness/sweep/experiment_sections.h"

#include <filesystem>
#include <utility>
#include <vector>

#include "common/error.h"
#include "datasets/generator_registry.h"
#include "harness/base/strict_json.h"
#include "harness/energy/energy_settings.h"
#include "harness/energy/thermal_wait.h"
#include "harness/run/run_config.h"

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

}  // namespace

void parse_experiment_header(StrictReader& r, Experiment& e) {
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
  if (!named) e.name = fs::path(r.source()).stem().string();
  if (const std::string problem = experiment_name_problem(e.name); !problem.empty())
    r.fail("name", shown(e.name) + (named ? "" : " (the file's name, as there is no \"name\")") + " " + problem +
                       ": the name is part of the report's file names",
           "a name with no / or \\, no control, bidirectional or invisible character, not starting with '.', at "
           "most 120 bytes; letters, digits and - _ . + keep report file names as the name is (others become _), "
           "e.g. \"name\": \"cpu_sweep\"");
  r.str("description", e.description);
}

RunConfig parse_training_section(const json* t, const Experiment& e, const std::string& source,
                                 const std::string& base_dir) {
  json training = json::object();
  if (t) training = *t;
  for (const auto& [key, hint] : kTrainingKeysElsewhere)
    if (training.contains(key)) throw InputError(source + ": /training/" + key + ": not allowed here", hint);
  training["input_path"] = e.dataset.path.empty() ? "synthetic:" + e.dataset.generator : e.dataset.path;
  training["model_name"] = e.models.front();
  training["compression_ratio"] = e.compression_ratios.front();
  const DatasetGenerator* generator = find_dataset_generator(e.dataset.generator);
  if (generator && generator->type_list && !training.contains("type_list"))
    training["type_list"] = generator->type_list();  // the generator's integer columns, as Baler's CMS config
  RunConfig base = parse_run_config(training, source, base_dir, "/training");
  if (!e.dataset.path.empty()) base.input_path = e.dataset.path;
  return base;
}

void parse_energy_section(const json& j, const std::string& source, const std::string& base_dir, Experiment& e) {
  json energy = j;
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

void parse_cost_section(const json& j, const std::string& source, Experiment& e) {
  StrictReader cr(j, source, "/cost");
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

}  // namespace balerbench
