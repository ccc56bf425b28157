// test_experiment_sweep.cpp: an experiment's /sweep section and the grid it makes: the keys of its
// trials, pinned, so that a database written by an earlier version resumes. No LibTorch headers.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "common/error.h"
#include "harness/sweep/experiment.h"
#include "tests/test_util.h"
#include "tests/unit/trial_fixtures.h"

namespace balerbench {
namespace {

using nlohmann::json;

Experiment parse(const json& j) { return parse_experiment(j, "exp.json", "/tmp"); }

// Keys as balerbench wrote them when these were pinned: a change that alters them makes every stored
// trial new, and a database of an earlier version would run its experiment again from the start.
TEST(SweepAxes, KeysOfAnExperimentWithoutTheNewAxesAreThoseOfEarlierVersions) {
  const auto grid = expand_grid(parse(minimal_experiment()));
  EXPECT_EQ(grid[0].spec_key, "014ae89bb7b1ebe29dc9c653e97f530f");
  EXPECT_EQ(grid[7].spec_key, "525b78a0d21e78a74b6567e4fb35b592");
  EXPECT_EQ(grid[35].spec_key, "8c53e3337b2e861bba47c5165a6d3205");
  EXPECT_EQ(expand_grid(parse(minimal_experiment()), "aaaaaaaaaaaa")[11].key, "649c3c8e098d6c61fcecccf99ff524ed");
  json j = minimal_experiment();
  j["model"] = {{"name", "AE_Dropout_BN"}, {"compression_ratio", 4}};
  j["sweep"]["engine"] = {"libtorch", "fused"};
  EXPECT_EQ(expand_grid(parse(j))[13].spec_key, "243bad8e5014daa6a2b56208c77ea97c");
}

}  // namespace
}  // namespace balerbench
