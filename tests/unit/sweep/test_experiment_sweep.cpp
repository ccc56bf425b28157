// test_experiment_sweep.cpp: an experiment's /sweep section (sweep/experiment_sweep.cpp) and the grid
// it makes: the model and compression-ratio axes beside the others, their conflicts with /model, and
// the keys of experiments without them, pinned, so that a database written by an earlier version
// resumes. No LibTorch headers.
#include <gtest/gtest.h>

#include <functional>
#include <set>
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

void expect_bad(const std::function<void(json&)>& edit, const std::string& fragment) {
  json j = minimal_experiment();
  edit(j);
  expect_input_error([&] { parse(j); }, fragment);
}

// minimal_experiment() with three ratios in /sweep in place of /model's, and one batch size and epochs.
json ratio_scan() {
  json j = minimal_experiment();
  j["model"].erase("compression_ratio");
  j["sweep"]["compression_ratio"] = {1.6, 4, 8};
  j["sweep"]["batch_size"] = {256};
  j["sweep"]["epochs"] = {2};
  return j;
}

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

TEST(SweepAxes, AnExperimentWithoutThemHasOneModelAndRatioFromModel) {
  const Experiment e = parse(minimal_experiment());
  EXPECT_EQ(e.models, (std::vector<std::string>{"AE"}));
  EXPECT_EQ(e.compression_ratios, (std::vector<double>{1.6}));
  EXPECT_EQ(e.models_path, "/model/name");
  EXPECT_EQ(e.compression_ratios_path, "/model/compression_ratio");
  EXPECT_EQ(e.grid_shape(), "3 batch sizes x 2 precisions x 1 engine x 1 power limit x 2 epochs values x 3 repeats");
  EXPECT_EQ(expand_grid(e)[0].label(), "bs=128 fp32 auto pl=- ep=2 #0");  // as before the axes
}

TEST(SweepAxes, CompressionRatioIsTheOuterAxisStoredInEachTrialsRunConfig) {
  const Experiment e = parse(ratio_scan());
  EXPECT_EQ(e.compression_ratios, (std::vector<double>{1.6, 4, 8}));
  EXPECT_EQ(e.compression_ratios_path, "/sweep/compression_ratio");
  EXPECT_EQ(e.grid_size(), 3 * 2 * 3);
  EXPECT_EQ(e.grid_shape(), "3 compression ratios x 1 batch size x 2 precisions x 1 engine x 1 power limit x 1 epochs "
                            "value x 3 repeats");
  const auto grid = expand_grid(e);
  EXPECT_EQ(grid[0].label(), "cr=1.6 bs=256 fp32 auto pl=- ep=2 #0");
  EXPECT_EQ(grid[6].label(), "cr=4 bs=256 fp32 auto pl=- ep=2 #0");  // ratio outside precision and repeats
  EXPECT_EQ(grid[17].label(), "cr=8 bs=256 fp64 auto pl=- ep=2 #2");
  EXPECT_DOUBLE_EQ(grid[6].compression_ratio(), 4);
  EXPECT_EQ(grid[6].spec["run_config"]["compression_ratio"], 4.0);  // stored with the trial
  EXPECT_EQ(grid[6].model(), "AE");
  std::set<std::string> keys;
  for (const auto& t : grid) keys.insert(t.key);
  EXPECT_EQ(keys.size(), grid.size());
  EXPECT_DOUBLE_EQ(e.base.compression_ratio, 1.6);  // the first value
}

// An experiment that moves its one ratio from /model into a scan keeps the trials it ran: the trial of
// that ratio is the same trial, under the same key, so the scan resumes an old database.
TEST(SweepAxes, AScanOverTheOldRatioKeepsItsTrials) {
  const auto before = expand_grid(parse(minimal_experiment()), "f");
  json j = minimal_experiment();
  j["model"].erase("compression_ratio");
  j["sweep"]["compression_ratio"] = {1.6, 4};
  const auto scan = expand_grid(parse(j), "f");
  ASSERT_EQ(scan.size(), 2 * before.size());
  for (std::size_t i = 0; i < before.size(); ++i) {
    EXPECT_EQ(scan[i].key, before[i].key) << i;
    EXPECT_EQ(scan[i].grid_index, before[i].grid_index);
  }
  j["sweep"]["compression_ratio"] = 1.6;  // a single value is a list of one
  EXPECT_EQ(expand_grid(parse(j), "f")[5].key, before[5].key);
  EXPECT_EQ(expand_grid(parse(j), "f")[5].label(), before[5].label());
}

TEST(SweepAxes, ModelIsAnAxisOfTheRegistrysDenseModels) {
  json j = ratio_scan();
  j.erase("model");
  j["sweep"]["model"] = {"AE", "AE_Dropout_BN", "FPGA_prototype_model"};
  const Experiment e = parse(j);
  EXPECT_EQ(e.models.size(), 3u);
  EXPECT_EQ(e.models_path, "/sweep/model");
  EXPECT_EQ(e.grid_size(), 3 * 3 * 2 * 3);
  EXPECT_EQ(e.grid_shape().rfind("3 models x 3 compression ratios x 1 batch size", 0), 0u) << e.grid_shape();
  const auto grid = expand_grid(e);
  EXPECT_EQ(grid[0].label(), "AE cr=1.6 bs=256 fp32 auto pl=- ep=2 #0");
  EXPECT_EQ(grid[18].label(), "AE_Dropout_BN cr=1.6 bs=256 fp32 auto pl=- ep=2 #0");  // model outermost
  EXPECT_EQ(grid[18].spec["run_config"]["model_name"], "AE_Dropout_BN");
  EXPECT_EQ(grid.back().label(), "FPGA_prototype_model cr=8 bs=256 fp64 auto pl=- ep=2 #2");
  // Warm-ups run the first configuration: the first model at the first ratio.
  j["sweep"]["warmup_trials"] = 1;
  EXPECT_EQ(warmup_trial(parse(j), 0, "r", "f").label(), "AE cr=1.6 bs=256 fp32 auto pl=- ep=2 warm-up");
}

TEST(SweepAxes, ASettingGivenInModelAndAsAnAxisIsRefused) {
  expect_bad([](json& j) { j["sweep"]["compression_ratio"] = {1.6, 4}; },
             "exp.json: /sweep/compression_ratio: conflicts with /model/compression_ratio (1.6): the compression ratio "
             "is set in both places (hint: give it in one place: to sweep it, list every value in "
             "/sweep/compression_ratio and remove /model/compression_ratio; for one value, remove "
             "/sweep/compression_ratio)");
  expect_bad([](json& j) { j["sweep"]["model"] = {"AE"}; },
             "/sweep/model: conflicts with /model/name (\"AE\"): the model is set in both places");
  // Given nowhere: /model's keys are required, and say where else they may go.
  expect_bad([](json& j) { j["model"].erase("compression_ratio"); },
             "/model/compression_ratio: is required (hint: a number above 0");
  expect_bad([](json& j) { j["model"].erase("compression_ratio"); }, "or list several in /sweep/compression_ratio");
  expect_bad([](json& j) { j["model"].erase("name"); }, "/model/name: is required (hint: one of: AE, AE_Dropout_BN");
  expect_bad([](json& j) { j.erase("model"); }, "exp.json: /model: is required");
  expect_bad([](json& j) { j.erase("model"); j["sweep"]["model"] = {"AE"}; }, "/model: is required");
  expect_bad([](json& j) { j["training"]["compression_ratio"] = 4; }, "or several under /sweep/compression_ratio");
  // Both axes in /sweep: no /model needed.
  json j = ratio_scan();
  j.erase("model");
  j["sweep"]["model"] = "AE";
  EXPECT_EQ(parse(j).grid_size(), 3 * 2 * 3);
}

TEST(SweepAxes, BadValuesNameTheirPlace) {
  expect_bad([](json& j) { j["model"].erase("name"); j["sweep"]["model"] = {"AE", "BigAE"}; },
             "/sweep/model/1: unknown model_name 'BigAE'");
  expect_bad([](json& j) { j["model"].erase("name"); j["sweep"]["model"] = {"AE", 3}; },
             "/sweep/model/1: expected a model name, got 3");
  expect_bad([](json& j) { j["model"].erase("name"); j["sweep"]["model"] = json::array(); },
             "/sweep/model: must list at least one value");
  expect_bad([](json& j) { j["model"].erase("name"); j["sweep"]["model"] = {"AE", "AE"}; },
             "/sweep/model/1: repeats \"AE\", already listed at model/0");
  expect_bad([](json& j) { j["model"].erase("compression_ratio"); j["sweep"]["compression_ratio"] = {4, 0}; },
             "/sweep/compression_ratio/1: must be a positive number, got 0");
  expect_bad([](json& j) { j["model"].erase("compression_ratio"); j["sweep"]["compression_ratio"] = {4, "8"}; },
             "/sweep/compression_ratio/1: must be a positive number, got \"8\"");
  expect_bad([](json& j) { j["model"].erase("compression_ratio"); j["sweep"]["compression_ratio"] = {4, 4.0}; },
             "/sweep/compression_ratio/1: repeats 4.0, already listed at compression_ratio/0");
  expect_bad([](json& j) { j["sweep"]["compression_ratios"] = {4}; }, "did you mean 'compression_ratio'?");
  // Two ratios the tables print alike would be two rows nobody can tell apart.
  expect_bad([](json& j) { j["model"].erase("compression_ratio"); j["sweep"]["compression_ratio"] = {1.6, 1.6000000001}; },
             "/sweep/compression_ratio/1: 1.6000000001 and 1.6 both print as 1.6 in the tables");
}

TEST(SweepAxes, TheBatchSizeOptimiserRefusesSeveralModelsOrRatios) {
  json j = ratio_scan();
  j["sweep"]["precision"] = {"fp32"};
  j["sweep"]["repeats"] = 1;
  j["target"] = {{"relative_error", 0.1}};
  j["batch_size_optimizer"] = {{"enabled", true}, {"default_batch_size", 256}};
  expect_input_error([&] { parse(j); }, "/batch_size_optimizer: /sweep lists several models or compression ratios");
  j["sweep"]["compression_ratio"] = {4};
  const Experiment e = parse(j);
  RecurrenceAttempt a;
  a.plan.batch_size = 256;
  EXPECT_DOUBLE_EQ(recurrence_trial(e, a, 0).compression_ratio(), 4);
}

}  // namespace
}  // namespace balerbench
