// generator_registry.h: the synthetic data generators by name, as engines and tables are chosen. An
// experiment's /dataset/generator/kind and `balerbench data generate --kind` name one; each entry says
// what its count is called, whether it takes a frame size, how its data is labelled and made.
// To add a generator: its file defines a DatasetGenerator (synthetic.cpp's cms_generator is the
// example), and one line of generator_registry.cpp lists it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "datasets/synthetic.h"

namespace balerbench {

// The parameters of one generated dataset.
struct GeneratorParams {
  int64_t rows = 0;                  // rows (jets) or frames: the count named by count_key
  int64_t height = 50, width = 50;   // frames only
  uint64_t seed = 0;
};

struct DatasetGenerator {
  const char* name;        // "cms"
  const char* what;        // "CMS-like jets", for the hint that lists the kinds
  const char* shape_help;  // "jets, 24 columns", for `data generate --kind`'s help
  const char* count_key;   // "rows" or "frames": the experiment's key for the count, and its noun
  bool frames;             // takes height and width
  // Baler's type_list for the generated columns ("float64" or "int" each); null when it has none.
  const std::vector<std::string>& (*type_list)();
  // float64 values per row (or frame) of a `height` x `width` frame size.
  long double (*values_per_row)(int64_t height, int64_t width);
  // "CMS-like 20000 rows (synthetic, seed 0)": the dataset's name in reports.
  std::string (*label)(const GeneratorParams& params);
  SyntheticData (*generate)(const GeneratorParams& params);
};

// Every generator, in the order their names are listed.
const std::vector<const DatasetGenerator*>& dataset_generators();
std::vector<std::string> dataset_generator_names();  // "cms", "cfd"
// "cms (CMS-like jets) or cfd (CFD-like frames)"
std::string dataset_generator_hint();
// nullptr when `name` names no generator.
const DatasetGenerator* find_dataset_generator(const std::string& name);
// InputError naming the generators when `name` names none.
const DatasetGenerator& dataset_generator(const std::string& name);

}  // namespace balerbench
