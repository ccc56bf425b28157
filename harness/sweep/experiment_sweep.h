// experiment_sweep.h: the parts of parse_experiment (experiment.h) that make the grid's axes: /model
// and /sweep. Internal to sweep/: experiment.cpp calls them in the file's order, the model and
// compression-ratio axes before /training (whose run config needs a model), the other axes after it
// (their defaults are /training's engine and epochs).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "harness/sweep/experiment.h"

namespace balerbench {

// e.models and e.compression_ratios (and where they were given): /sweep/model and
// /sweep/compression_ratio, or /model's one value each. `model` is /model (null when absent), `root`
// the whole file. A setting given in both places, or in neither, is an InputError naming the paths.
void parse_model_axes(const nlohmann::json* model, const nlohmann::json& sweep, const nlohmann::json& root,
                      const std::string& source, Experiment& e);

// The rest of /sweep: batch_size, precision, engine, power_limit_w, epochs, repeats, order,
// order_seed, warmup_trials (model and compression_ratio are parse_model_axes's).
void parse_sweep_section(const nlohmann::json& sweep, const std::string& source, Experiment& e);

}  // namespace balerbench
