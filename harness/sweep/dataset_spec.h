// dataset_spec.h: an experiment's /dataset, the data every trial trains on: an .npz file, or one of
// datasets/generator_registry.h's generators with its size and seed. Read strictly (the JSON path in
// every error), written back into each trial's spec, and labelled for reports.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <string>

#include "datasets/generator_registry.h"

namespace balerbench {

struct Dataset;

struct DatasetSpec {
  std::string path;                 // an .npz file; empty when generated
  std::string generator;            // a name of dataset_generators(): "cms" | "cfd"
  int64_t rows = 0;                 // cms: rows; cfd: frames
  int64_t height = 50, width = 50;  // cfd
  int64_t seed = 0;
  GeneratorParams params() const;   // the generator's parameters
  nlohmann::json to_json() const;
  std::string label() const;  // "cms-like 20000 rows (seed 0)" or the file name
};

// /dataset of `source`: exactly one of "path" (relative to `base_dir`; made canonical, so that one
// file is one dataset however it was spelled; load_experiment checks that it exists) and "generator"
// ({"kind", the kind's count key, "height" and "width" for frames, "seed"}). InputError naming the
// JSON path otherwise.
DatasetSpec parse_dataset_spec(const nlohmann::json& j, const std::string& source, const std::string& base_dir);

// The dataset of an experiment: the file, or the generator's output.
std::shared_ptr<const Dataset> load_experiment_dataset(const DatasetSpec& spec);

}  // namespace balerbench
