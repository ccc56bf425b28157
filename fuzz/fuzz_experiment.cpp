// fuzz_experiment.cpp: an experiment file (strict JSON, schema-versioned). Bad input must be an
// InputError naming the JSON path.
#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

#include "datasets/error.h"
#include "harness/sweep/experiment.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json j =
      nlohmann::json::parse(std::string(reinterpret_cast<const char*>(data), size), nullptr, false);
  if (j.is_discarded()) return 0;  // the JSON library's own parser: not ours to fuzz
  try {
    const balerbench::Experiment e = balerbench::parse_experiment(j, "fuzz.json", "/nonexistent");
    (void)balerbench::expand_grid(e);
  } catch (const balerbench::InputError&) {
  }
  return 0;
}
