// fuzz_experiment.cpp: an experiment file (strict JSON, schema-versioned), read as load_experiment
// reads it. Bad input must be an InputError naming the JSON path: a key given twice, a number beyond
// a double, a wrong type or range.
#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/error.h"
#include "harness/base/strict_json.h"
#include "harness/sweep/experiment.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const nlohmann::json j =
        balerbench::parse_json_text_strict(std::string(reinterpret_cast<const char*>(data), size), "fuzz.json");
    const balerbench::Experiment e = balerbench::parse_experiment(j, "fuzz.json", "/nonexistent");
    (void)balerbench::expand_grid(e);
  } catch (const balerbench::InputError&) {
  }
  return 0;
}
