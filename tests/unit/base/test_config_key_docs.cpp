// test_config_key_docs.cpp: the configuration reference's words for the keys whose values name a
// registry's entries (/engine, /energy/meters, /dataset/generator/kind) come from that registry, and
// a key left without them is a programming error rather than a placeholder in docs/configuration.md.
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "datasets/generator_registry.h"
#include "harness/base/config_key_docs.h"

namespace balerbench {
namespace {

const ConfigKeyDoc* find_doc(const std::vector<ConfigKeyDoc>& docs, const std::string& path) {
  const auto it = std::find_if(docs.begin(), docs.end(), [&](const ConfigKeyDoc& d) { return d.path == path; });
  return it == docs.end() ? nullptr : &*it;
}

TEST(ConfigKeyDocs, TheRegistriesWordsTakeTheirKeysPlaces) {
  const std::vector<ConfigKeyDoc> docs =
      run_config_key_docs_with({}, {{"/engine", "engine words", ""}, {"/energy/meters", "meter words", ""}});
  ASSERT_NE(find_doc(docs, "/engine"), nullptr);
  EXPECT_EQ(find_doc(docs, "/engine")->meaning, "engine words");
  ASSERT_NE(find_doc(docs, "/energy/meters"), nullptr);
  EXPECT_EQ(find_doc(docs, "/energy/meters")->meaning, "meter words");
  // Still where they were: /engine after /precision, /energy/meters after /energy/enabled.
  EXPECT_EQ(find_doc(docs, "/engine") - find_doc(docs, "/precision"), 1);
  EXPECT_EQ(find_doc(docs, "/energy/meters") - find_doc(docs, "/energy/enabled"), 1);
}

TEST(ConfigKeyDocs, AKeyLeftWithoutItsRegistrysWordsIsAProgrammingError) {
  EXPECT_THROW(run_config_key_docs_with({}, {{"/engine", "engine words", ""}}), std::logic_error);
  EXPECT_THROW(run_config_key_docs_with({}, {{"/engine", "e", ""}, {"/energy/meters", "m", ""}, {"/seed", "s", ""}}),
               std::logic_error);  // /seed has words of its own
}

TEST(ConfigKeyDocs, TheGeneratorKindNamesEveryGenerator) {
  const ConfigKeyDoc* kind = find_doc(experiment_key_docs(), "/dataset/generator/kind");
  ASSERT_NE(kind, nullptr);
  EXPECT_EQ(kind->meaning, "`cms` (CMS-like jets) or `cfd` (CFD-like frames)");
  EXPECT_EQ(kind->default_, "required");
  for (const DatasetGenerator* g : dataset_generators())
    EXPECT_NE(kind->meaning.find(std::string("`") + g->name + "` (" + g->what + ")"), std::string::npos) << g->name;
}

}  // namespace
}  // namespace balerbench
