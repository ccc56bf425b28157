// fuzz_experiment.cpp: an experiment file (strict JSON, schema-versioned), read as load_experiment
// reads it. Bad input must be an InputError naming the JSON path: a key given twice, a number beyond
// a double, a wrong type or range. What parses must plan: any trial of its grid can be made.
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
    // The grid as a run plans it, lazily: its first and last trials and a few between (a grid may hold
    // billions), each numbered where it was asked for.
    const balerbench::Grid grid(e);
    if (grid.size() < 1) __builtin_trap();
    for (const int64_t i : {int64_t{0}, grid.size() / 3, grid.size() / 2, grid.size() - 1})
      if (grid.at(i).grid_index != i) __builtin_trap();
  } catch (const balerbench::InputError&) {
  }
  return 0;
}
