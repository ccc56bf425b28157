// config_key_docs.h: what each configuration key means, by its JSON path, for the configuration
// reference (`balerbench config reference`, docs/configuration.md). The keys themselves come from the
// strict parsers (recorded by KeyRecording while they read a maximal config), and so do the
// defaults; this table adds only the words. A key the parsers read that has no entry here, or an
// entry the parsers no longer read, fails tests/unit/cli/test_config_reference.cpp.
#pragma once

#include <string>
#include <vector>

namespace balerbench {

struct ConfigKeyDoc {
  std::string path;      // JSON path: "/energy/sample_hz"
  std::string meaning;   // one line, Markdown
  std::string default_;  // words for the default when the parsed default would mislead ("required"); "" = parsed
  bool outside_reader = false;  // read by hand, not through StrictReader (checked by its own test)
};

// A heading of the reference: the keys whose parent path is `parent` ("" = the root).
struct ConfigSectionDoc {
  std::string parent;  // "/energy"
  std::string title;   // "The energy section"
  std::string intro;   // a paragraph, Markdown
};

// The keys that a registry's entries own (base/knobs.h), each entry documenting its own: the
// engines' at the run config's root (after /progress), the codecs' in /codecs (after /codecs/uses),
// the meters' at the end of /energy.
struct RegistryKeyDocs {
  std::vector<ConfigKeyDoc> engines, codecs, meters;
};

// A run config (train, compress, decompress, info; an experiment's `training` section): every key,
// its `energy`, `codecs`, `monitoring` and `grad_scaler` sections included, with `registry_keys`
// (run/run_config.h's run_config_key_docs() gathers them from the registries) in their places, and
// `registry_words` as the entries of the keys whose values name a registry's entries (/engine from
// the engines, /energy/meters from the meters). std::logic_error when one of those keys is left
// without words, or `registry_words` names another key.
std::vector<ConfigKeyDoc> run_config_key_docs_with(const RegistryKeyDocs& registry_keys,
                                                   const std::vector<ConfigKeyDoc>& registry_words);
const std::vector<ConfigSectionDoc>& run_config_section_docs();
// An experiment file (`balerbench run`). Its `training` section takes the run config's keys and its
// `energy` section the run config's energy keys; those are documented once, above.
const std::vector<ConfigKeyDoc>& experiment_key_docs();
const std::vector<ConfigSectionDoc>& experiment_section_docs();

}  // namespace balerbench
