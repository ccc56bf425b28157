// experiment_sections.h: the parts of parse_experiment (experiment.h) that fill Experiment's own
// fields rather than a spec type of their own: the header (schema_version, name, description),
// /training, /energy and /cost. Internal to sweep/, as experiment_sweep.h is: experiment.cpp calls
// them in the file's order.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "harness/sweep/experiment.h"

namespace balerbench {

class StrictReader;

// schema_version (required, kExperimentSchemaVersion), name (the file's stem when absent; it must
// name report files: experiment_name_problem) and description, read from the file's root `r`.
void parse_experiment_header(StrictReader& r, Experiment& e);

// /training (`t`, null when absent): the run config every trial starts from, with e's dataset and
// the first model and compression ratio filled in. Its keys that the experiment sets elsewhere
// (the data, the sweep's axes, energy, codecs, ...) are refused, each with where it goes.
RunConfig parse_training_section(const nlohmann::json* t, const Experiment& e, const std::string& source,
                                 const std::string& base_dir);

// /energy: e.base.energy (the run config's energy section), and the sweep's own cooldown_s and thermal.
void parse_energy_section(const nlohmann::json& j, const std::string& source, const std::string& base_dir,
                          Experiment& e);

// /cost: e.etas (the Zeus cost's weights of energy, one value or a list) and e.max_power_w.
void parse_cost_section(const nlohmann::json& j, const std::string& source, Experiment& e);

}  // namespace balerbench
