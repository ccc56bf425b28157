// generator_registry.cpp: see generator_registry.h. To add a generator: its file defines a
// DatasetGenerator, and one line below lists it.
#include "datasets/generator_registry.h"

#include "common/error.h"

namespace balerbench {

const DatasetGenerator& cms_generator();  // synthetic.cpp
const DatasetGenerator& cfd_generator();  // synthetic.cpp

const std::vector<const DatasetGenerator*>& dataset_generators() {
  static const std::vector<const DatasetGenerator*> entries = {
      &cms_generator(),
      &cfd_generator(),
  };
  return entries;
}

std::vector<std::string> dataset_generator_names() {
  std::vector<std::string> names;
  for (const DatasetGenerator* g : dataset_generators()) names.emplace_back(g->name);
  return names;
}

std::string dataset_generator_hint() {
  std::string hint;
  for (const DatasetGenerator* g : dataset_generators())
    hint += (hint.empty() ? "" : " or ") + std::string(g->name) + " (" + g->what + ")";
  return hint;
}

const DatasetGenerator* find_dataset_generator(const std::string& name) {
  for (const DatasetGenerator* g : dataset_generators())
    if (name == g->name) return g;
  return nullptr;
}

const DatasetGenerator& dataset_generator(const std::string& name) {
  if (const DatasetGenerator* g = find_dataset_generator(name)) return *g;
  throw InputError("unknown dataset generator '" + name + "'", "one of: " + dataset_generator_hint());
}

}  // namespace balerbench
