// baler_config.h: a Baler project's config/P_config.py as a balerbench RunConfig.
//
// The config is a Python module whose set_config(c) sets attributes on Baler's Config class. It is
// run by Debian's python3 with a stand-in for that class that records what set_config set, in
// order; Baler itself is not imported. Each attribute then meets one fate:
//   - read as balerbench's key of the same name (input_path, model_name, compression_ratio, epochs, ...);
//   - ignored, as Baler itself ignores it (l1, reg_param and RHO reach a loss that never applies
//     them; latent_space_size is recomputed from compression_ratio; hls4ml's keys serve another mode);
//   - named and not done (activation_extraction = True: no activations.npy);
//   - refused, when balerbench would write other files than Baler (separate_model_saving,
//     save_error_bounded_deltas, convert_to_blocks, the SWAE loss);
//   - any other key must be one of balerbench's own (Baler ignores those), else it is refused.
// Nothing is dropped without a word: every key that is not read as the same key is a ConfigNote.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "datasets/baler_project.h"
#include "harness/baler/python_process.h"
#include "harness/run/run_config.h"

namespace balerbench {

struct ConfigNote {
  std::string key;
  std::string fate;  // "ignored" (Baler ignores it too), "not done" (Baler would), "balerbench" (our key)
  std::string why;
  nlohmann::json to_json() const { return {{"key", key}, {"fate", fate}, {"why", why}}; }
};

// What set_config set: {"order": [keys in the order set], "values": {key: value},
// "unsupported": {key: repr}} (a value that is not a number, string, boolean, None, list or dict).
// InputError naming the file, with Python's message, when the module fails or has no set_config.
// `timeout_s` bounds how long the module may run (0: no limit): past it, the interpreter is killed and
// the error says so.
nlohmann::json read_baler_attributes(const BalerProject& project, double timeout_s = kBalerConfigTimeoutS);

struct BalerTranslation {
  nlohmann::json config;  // balerbench's config keys (a run config object)
  std::vector<ConfigNote> notes;
};
// Baler's attributes -> balerbench's config keys and the notes; InputError for a refused key
// (`source` names the file in errors).
BalerTranslation translate_baler_attributes(const nlohmann::json& attributes, const std::string& source);

struct BalerProjectConfig {
  RunConfig run;
  std::vector<ConfigNote> notes;
  nlohmann::json attributes;  // as read_baler_attributes returned them
};
// The project's config, with `sets` ("key=value", as --set) and then `options` (--precision, ...)
// applied after translation, as load_run_config does (an error in such a value names it).
// Relative paths resolve against the project's root (Baler's working directory). The latent code
// is stored in the model's Baler dtype, which Baler's decompress needs (another latent_dtype is
// refused).
BalerProjectConfig load_baler_project_config(const BalerProject& project, const std::vector<std::string>& sets,
                                             const std::vector<ConfigOverride>& options = {},
                                             double timeout_s = kBalerConfigTimeoutS);

// One line per note, for stderr: "balerbench: P_config.py: l1, reg_param, RHO: ignored (...)".
std::string format_config_notes(const BalerProject& project, const std::vector<ConfigNote>& notes);

}  // namespace balerbench
