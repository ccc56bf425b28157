// fuzz_run_config.cpp: a run config (strict JSON) with `--set` overrides. The input's lines before
// the first one starting with '{' are overrides ("key=value"), the rest is the config file. Bad input
// must be an InputError: a JSON syntax error, a key given twice, a number beyond a double, an unknown
// key, a wrong type or range.
#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/error.h"
#include "harness/base/strict_json.h"
#include "harness/run/run_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> overrides;
  size_t pos = 0;
  while (pos < text.size() && text[pos] != '{') {
    const size_t end = text.find('\n', pos);
    overrides.push_back(text.substr(pos, end == std::string::npos ? std::string::npos : end - pos));
    if (end == std::string::npos) return 0;
    pos = end + 1;
  }
  try {
    nlohmann::json k = balerbench::parse_json_text_strict(text.substr(pos), "fuzz.json");
    for (const auto& o : overrides) balerbench::apply_override(k, o);
    const balerbench::RunConfig c = balerbench::parse_run_config(k, "fuzz.json", "/nonexistent");
    // What parsed must write back to JSON that parses to the same config.
    const balerbench::RunConfig again = balerbench::parse_run_config(c.to_json(), "again.json", "/nonexistent");
    if (again.to_json() != c.to_json()) __builtin_trap();
    (void)c.to_json().dump();  // written as run_config.json: must be UTF-8 (a type_error here is a finding)
  } catch (const balerbench::InputError&) {
  }
  return 0;
}
