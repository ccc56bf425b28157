// test_generator_registry.cpp: the dataset generators by name (datasets/generator_registry.h): the
// registry lists the known generators, an unknown name is the same clear error as before the
// registry (in an experiment and in the registry itself), and each entry makes, names and sizes its
// data as the experiment files and `data generate` expect. No LibTorch headers.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/error.h"
#include "datasets/generator_registry.h"
#include "harness/sweep/experiment.h"
#include "tests/test_util.h"
#include "tests/unit/trial_fixtures.h"

namespace balerbench {
namespace {

using nlohmann::json;

TEST(GeneratorRegistry, ListsTheKnownGenerators) {
  EXPECT_EQ(dataset_generator_names(), (std::vector<std::string>{"cms", "cfd"}));
  EXPECT_EQ(dataset_generator_hint(), "cms (CMS-like jets) or cfd (CFD-like frames)");
  for (const std::string& name : dataset_generator_names()) {
    ASSERT_NE(find_dataset_generator(name), nullptr) << name;
    EXPECT_EQ(dataset_generator(name).name, name);
  }
  EXPECT_STREQ(dataset_generator("cms").count_key, "rows");
  EXPECT_FALSE(dataset_generator("cms").frames);
  EXPECT_STREQ(dataset_generator("cfd").count_key, "frames");
  EXPECT_TRUE(dataset_generator("cfd").frames);
  EXPECT_EQ(dataset_generator("cms").type_list, &cms_type_list);
  EXPECT_EQ(dataset_generator("cfd").type_list, nullptr);
}

TEST(GeneratorRegistry, UnknownNameIsAClearError) {
  EXPECT_EQ(find_dataset_generator("lhc"), nullptr);
  expect_input_error([] { dataset_generator("lhc"); },
                     "unknown dataset generator 'lhc' (hint: one of: cms (CMS-like jets) or cfd (CFD-like frames))");
  // In an experiment, as before: the JSON path, the value, and the names.
  json j = minimal_experiment();
  j["dataset"]["generator"]["kind"] = "lhc";
  expect_input_error([&] { parse_experiment(j, "exp.json", "/tmp"); },
                     "/dataset/generator/kind: invalid value 'lhc' (hint: one of: cms, cfd)");
  j["dataset"]["generator"].erase("kind");
  expect_input_error([&] { parse_experiment(j, "exp.json", "/tmp"); },
                     "/dataset/generator/kind: invalid value '' (hint: one of: cms, cfd)");
  j["dataset"]["generator"] = {{"kind", "cms"}, {"rows", 10}, {"frames", 2}};
  expect_input_error([&] { parse_experiment(j, "exp.json", "/tmp"); },
                     "generator keys: kind, rows (cms) or frames/height/width (cfd), seed");
}

TEST(GeneratorRegistry, EntriesMakeAndNameTheirData) {
  GeneratorParams p;
  p.rows = 3;
  p.height = 4;
  p.width = 5;
  p.seed = 2;
  const SyntheticData cms = dataset_generator("cms").generate(p);
  EXPECT_EQ(cms.shape, (std::vector<int64_t>{3, 24}));
  EXPECT_EQ(cms.values, generate_cms_like(3, 2).values);
  const SyntheticData cfd = dataset_generator("cfd").generate(p);
  EXPECT_EQ(cfd.shape, (std::vector<int64_t>{3, 4, 5}));
  EXPECT_EQ(cfd.values, generate_cfd_like(3, 4, 5, 2).values);
  EXPECT_EQ(dataset_generator("cms").label(p), "CMS-like 3 rows (synthetic, seed 2)");
  EXPECT_EQ(dataset_generator("cfd").label(p), "CFD-like 3x4x5 (synthetic, seed 2)");
  EXPECT_EQ(dataset_generator("cms").values_per_row(4, 5), 24.0L);
  EXPECT_EQ(dataset_generator("cfd").values_per_row(4, 5), 20.0L);
}

TEST(GeneratorRegistry, ExperimentDatasetSpecReadsTheEntry) {
  DatasetSpec cms;
  cms.generator = "cms";
  cms.rows = 7;
  cms.seed = 1;
  EXPECT_EQ(cms.to_json(), json::parse(R"({"generator": {"kind": "cms", "rows": 7, "seed": 1}})"));
  EXPECT_EQ(cms.label(), "CMS-like 7 rows (synthetic, seed 1)");
  DatasetSpec cfd = cms;
  cfd.generator = "cfd";
  cfd.height = 8;
  cfd.width = 9;
  EXPECT_EQ(cfd.to_json(),
            json::parse(R"({"generator": {"kind": "cfd", "frames": 7, "height": 8, "width": 9, "seed": 1}})"));
  EXPECT_EQ(cfd.label(), "CFD-like 7x8x9 (synthetic, seed 1)");
}

TEST(GeneratorRegistry, MemoryCheckNamesTheCount) {
  expect_input_error([] { check_synthetic_memory("t", "cms", int64_t{1} << 50, 1, 1, 2); }, "t: 1125899906842624 rows need");
  expect_input_error([] { check_synthetic_memory("t", "cfd", int64_t{1} << 40, 1024, 1024, 2); },
                     "t: 1099511627776 frames need");
}

}  // namespace
}  // namespace balerbench
