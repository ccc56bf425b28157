// test_sweep.cpp: experiment files, the grid and its shards, the cost
// arithmetic, the results database, the report tables from a fixture
// database, and power-limit control (guard, journal, optimiser) against the
// fake NVML library and the simulated GPU. No LibTorch headers.
#include <gtest/gtest.h>

#include <algorithm>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

#include "datasets/error.h"
#include "harness/energy/energy_window.h"
#include "harness/energy/simulated_gpu.h"
#include "harness/power/optimizer.h"
#include "harness/power/power_limit.h"
#include "harness/report/tables.h"
#include "harness/store/store.h"
#include "harness/base/analysis.h"
#include "harness/sweep/experiment.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

using nlohmann::json;

json minimal_experiment() {
  return json::parse(R"({
    "schema_version": 1, "name": "t",
    "dataset": {"generator": {"kind": "cms", "rows": 1000, "seed": 3}},
    "model": {"name": "AE", "compression_ratio": 1.6},
    "training": {"lr": 0.001, "test_size": 0.2},
    "sweep": {"batch_size": [128, 256, 512], "precision": ["fp32", "fp64"], "power_limit_w": [null],
              "epochs": [2, 4], "repeats": 3},
    "target": {"val_loss": 0.5},
    "cost": {"eta": [0, 0.5, 1], "max_power_w": 200}
  })");
}

Experiment parse(const json& j) { return parse_experiment(j, "exp.json", "/tmp"); }

void expect_bad(const std::function<void(json&)>& edit, const std::string& fragment) {
  json j = minimal_experiment();
  edit(j);
  expect_input_error([&] { parse(j); }, fragment);
}

TEST(Experiment, ParsesAndFillsDefaults) {
  const Experiment e = parse(minimal_experiment());
  EXPECT_EQ(e.name, "t");
  EXPECT_EQ(e.dataset.generator, "cms");
  EXPECT_EQ(e.dataset.rows, 1000);
  EXPECT_EQ(e.base.model_name, "AE");
  EXPECT_DOUBLE_EQ(e.base.test_size, 0.2);
  EXPECT_EQ(e.base.type_list.size(), 24u);  // the CMS generator's integer columns
  EXPECT_EQ(e.grid_size(), 3 * 2 * 1 * 2 * 3);
  EXPECT_EQ(e.target.metric, "val_loss");
  ASSERT_TRUE(e.max_power_w.has_value());
  EXPECT_DOUBLE_EQ(*e.max_power_w, 200);
  EXPECT_FALSE(e.allow_power_limit_changes);
}

TEST(Experiment, BadFilesNameTheJsonPath) {
  expect_bad([](json& j) { j.erase("schema_version"); }, "/schema_version: is required");
  expect_bad([](json& j) { j["schema_version"] = 2; }, "this balerbench reads version 1");
  expect_bad([](json& j) { j["sweeep"] = 1; }, "/sweeep: unknown key");
  expect_bad([](json& j) { j["sweep"]["batchsize"] = {1}; }, "/sweep/batchsize: unknown key");
  expect_bad([](json& j) { j["sweep"]["precision"] = {"fp32", "fp12"}; }, "/sweep/precision/1: invalid precision");
  expect_bad([](json& j) { j["sweep"]["batch_size"] = {512, 0}; }, "/sweep/batch_size/1: must be a positive integer");
  expect_bad([](json& j) { j["sweep"]["epochs"] = json::array(); }, "/sweep/epochs: must list at least one value");
  expect_bad([](json& j) { j["sweep"]["power_limit_w"] = {300, -5}; }, "/sweep/power_limit_w/1");
  expect_bad([](json& j) { j["sweep"]["power_limit_w"] = {250}; }, "/allow_power_limit_changes");
  expect_bad([](json& j) { j["training"]["epochs"] = 3; }, "/training/epochs: not allowed here");
  expect_bad([](json& j) { j["training"]["lr"] = -1; }, "/training/lr: must be a positive number");
  expect_bad([](json& j) { j["training"]["grad_scaler"] = {{"init_scal", 2}}; }, "/training/grad_scaler/init_scal");
  expect_bad([](json& j) { j["target"] = {{"val_loss", 1}, {"relative_error", 0.1}}; }, "exactly one of");
  expect_bad([](json& j) { j["energy"] = {{"cooldown_s", -1}}; }, "/energy/cooldown_s");
  expect_bad([](json& j) { j["energy"] = {{"sample_hz", "fast"}}; }, "/energy/sample_hz");
  expect_bad([](json& j) { j["cost"]["eta"] = {0, 1.5}; }, "/cost/eta/1: must be a number in [0, 1]");
  expect_bad([](json& j) { j["model"]["name"] = "BigAE"; }, "/model/name");
  expect_bad(
      [](json& j) {
        j["dataset"] = {{"path", "a.npz"}, {"generator", {{"kind", "cms"}, {"rows", 5}}}};
      },
      "exactly one of path and generator");
  expect_bad([](json& j) { j["dataset"]["generator"]["kind"] = "lhc"; }, "/dataset/generator/kind: invalid value");
  expect_bad([](json& j) { j["power_limit_optimizer"] = {{"enabled", true}}; }, "/allow_power_limit_changes");
  expect_bad(
      [](json& j) {
        j["allow_power_limit_changes"] = true;
        j["power_limit_optimizer"] = {{"enabled", true}};
        j["energy"] = {{"enabled", false}};
      },
      "/power_limit_optimizer: the optimiser weighs measured energy against time, but /energy/enabled is false");
}

TEST(Experiment, AKeyGivenTwiceOrANumberBeyondADoubleIsAnInputError) {
  TempDir dir;
  const std::string text = read_text(source_dir() + "/experiments/quickstart.json");
  const auto with = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    const auto at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return t.replace(at, from.size(), to);
  };
  write_text(dir.path("dup.json"), with(R"("lr": 0.001,)", R"("lr": 0.001, "lr": 0.01,)"));
  expect_input_error([&] { load_experiment(dir.path("dup.json")); }, "dup.json: /training/lr: the key is given twice");
  write_text(dir.path("big.json"), with(R"("max_power_w": 100)", R"("max_power_w": 1e400)"));
  expect_input_error([&] { load_experiment(dir.path("big.json")); },
                     "big.json: /cost/max_power_w: the number 1e400 does not fit a double");
}

TEST(Experiment, ShippedExperimentsParse) {
  int experiments = 0;
  for (const auto& entry : std::filesystem::directory_iterator(source_dir() + "/experiments")) {
    if (entry.path().extension() != ".json") continue;
    if (read_text(entry.path().string()).find("\"schema_version\"") == std::string::npos) continue;  // a run config
    const Experiment e = load_experiment(entry.path().string());
    EXPECT_GE(e.grid_size(), 1) << entry.path();
    EXPECT_EQ(e.name, entry.path().stem().string()) << "the name should match the file";
    ++experiments;
  }
  EXPECT_GE(experiments, 8);
  const Experiment q = load_experiment(source_dir() + "/experiments/quickstart.json");
  EXPECT_EQ(q.grid_size(), 12);
  EXPECT_EQ(q.target.metric, "relative_error");
  const Experiment t4 = load_experiment(source_dir() + "/experiments/t4_phases.json");
  EXPECT_EQ(std::filesystem::path(t4.dataset.path),
            std::filesystem::path(source_dir()).parent_path() / "shared/data/CFD_animation.npz");
}

TEST(Grid, ExpandsInOrderWithUniqueStableKeys) {
  const Experiment e = parse(minimal_experiment());
  const auto grid = expand_grid(e);
  ASSERT_EQ(static_cast<int64_t>(grid.size()), e.grid_size());
  std::set<std::string> keys;
  for (std::size_t i = 0; i < grid.size(); ++i) {
    EXPECT_EQ(grid[i].grid_index, static_cast<int64_t>(i));
    keys.insert(grid[i].key);
    EXPECT_EQ(grid[i].config.seed, grid[i].repeat);  // training seed 0 + repeat
    EXPECT_EQ(grid[i].spec["run_config"]["batch_size"].get<int64_t>(), grid[i].batch_size());  // one source: config
  }
  EXPECT_EQ(keys.size(), grid.size());
  // Repeats innermost, then epochs, power limit, engine, precision, batch size.
  EXPECT_EQ(grid[0].label(), "bs=128 fp32 auto pl=- ep=2 #0");
  EXPECT_EQ(grid[1].label(), "bs=128 fp32 auto pl=- ep=2 #1");
  EXPECT_EQ(grid[3].label(), "bs=128 fp32 auto pl=- ep=4 #0");
  EXPECT_EQ(grid[6].label(), "bs=128 fp64 auto pl=- ep=2 #0");
  EXPECT_EQ(grid[12].label(), "bs=256 fp32 auto pl=- ep=2 #0");
  // The same file gives the same keys; a changed setting changes every key.
  const auto again = expand_grid(parse(minimal_experiment()));
  EXPECT_EQ(again[7].key, grid[7].key);
  json j = minimal_experiment();
  j["training"]["lr"] = 0.002;
  EXPECT_NE(expand_grid(parse(j))[7].key, grid[7].key);
  EXPECT_EQ(grid[0].key.size(), 32u);
}

TEST(Grid, KeysNameTheSpecOnASystem) {
  const Experiment e = parse(minimal_experiment());
  const auto plain = expand_grid(e), here = expand_grid(e, "aaaaaaaaaaaa"), there = expand_grid(e, "bbbbbbbbbbbb");
  for (std::size_t i = 0; i < plain.size(); ++i) {
    EXPECT_EQ(plain[i].key, plain[i].spec_key);  // no system: the spec's key alone
    EXPECT_EQ(here[i].spec_key, there[i].spec_key);
    EXPECT_NE(here[i].key, there[i].key);  // the same trial on two systems: two keys
    EXPECT_NE(here[i].key, plain[i].key);
  }
  EXPECT_EQ(expand_grid(e, "aaaaaaaaaaaa")[5].key, here[5].key);  // stable
}

TEST(Grid, AFileDatasetIsNamedByItsContentNotItsPath) {
  TempDir t;
  std::filesystem::create_directories(t.path("a/b"));
  write_text(t.path("a/data.npz"), "not really a zip, but bytes to hash");
  json j = minimal_experiment();
  j["dataset"] = {{"path", "data.npz"}};
  const Experiment from_a = parse_experiment(j, "a/exp.json", t.path("a"));
  j["dataset"] = {{"path", "../data.npz"}};
  const Experiment from_b = parse_experiment(j, "a/b/exp.json", t.path("a/b"));
  j["dataset"] = {{"path", t.path("a/b/../data.npz")}};
  const Experiment absolute = parse_experiment(j, "/abs/exp.json", "/elsewhere");
  EXPECT_EQ(from_a.dataset.path, std::filesystem::canonical(t.path("a/data.npz")).string());  // canonical
  EXPECT_EQ(from_b.dataset.path, from_a.dataset.path);
  EXPECT_EQ(absolute.dataset.path, from_a.dataset.path);
  EXPECT_EQ(expand_grid(from_a, "f")[3].key, expand_grid(from_b, "f")[3].key);
  // The same bytes elsewhere are the same data; other bytes are not.
  write_text(t.path("copy.npz"), "not really a zip, but bytes to hash");
  j["dataset"] = {{"path", t.path("copy.npz")}};
  EXPECT_EQ(expand_grid(parse_experiment(j, "x.json", "/"), "f")[3].key, expand_grid(from_a, "f")[3].key);
  write_text(t.path("copy.npz"), "other bytes");
  EXPECT_NE(expand_grid(parse_experiment(j, "x.json", "/"), "f")[3].key, expand_grid(from_a, "f")[3].key);
  EXPECT_EQ(dataset_identity(from_a.dataset)["bytes"], 35);
  DatasetSpec device;  // not a file: never read (a device would never end), named by its path
  device.path = "/dev/zero";
  EXPECT_EQ(dataset_identity(device), device.to_json());
}

std::vector<std::string> labels_in_order(const Experiment& e) {
  const auto grid = expand_grid(e);
  std::vector<const TrialSpec*> todo;
  for (const auto& t : grid) todo.push_back(&t);
  std::vector<std::string> out;
  for (std::size_t i : run_order(e, todo)) out.push_back(todo[i]->label());
  return out;
}

TEST(Grid, RepeatsAreInterleavedByDefaultAndShuffledReproducibly) {
  json j = minimal_experiment();
  j["sweep"] = {{"batch_size", {128}}, {"precision", {"fp32", "fp64"}}, {"epochs", {2}}, {"repeats", 2}};
  EXPECT_EQ(parse(j).order, "interleaved");
  EXPECT_EQ(labels_in_order(parse(j)), (std::vector<std::string>{"bs=128 fp32 auto pl=- ep=2 #0",
                                                                  "bs=128 fp64 auto pl=- ep=2 #0",
                                                                  "bs=128 fp32 auto pl=- ep=2 #1",
                                                                  "bs=128 fp64 auto pl=- ep=2 #1"}));
  j["sweep"]["order"] = "grid";
  EXPECT_EQ(labels_in_order(parse(j))[1], "bs=128 fp32 auto pl=- ep=2 #1");  // repeats back to back
  j["sweep"] = minimal_experiment()["sweep"];
  j["sweep"]["order"] = "shuffled";
  j["sweep"]["order_seed"] = 7;
  const auto a = labels_in_order(parse(j)), b = labels_in_order(parse(j));
  EXPECT_EQ(a, b);  // the seed is the order
  j["sweep"]["order_seed"] = 8;
  EXPECT_NE(labels_in_order(parse(j)), a);
  // Shuffled within rounds: the first 12 are repeat 0, each configuration once.
  std::set<std::string> round0;
  for (std::size_t i = 0; i < 12; ++i) {
    EXPECT_NE(a[i].find(" #0"), std::string::npos) << a[i];
    round0.insert(a[i]);
  }
  EXPECT_EQ(round0.size(), 12u);
  const auto interleaved = labels_in_order(parse(minimal_experiment()));
  EXPECT_NE(std::vector<std::string>(a.begin(), a.begin() + 12),
            std::vector<std::string>(interleaved.begin(), interleaved.begin() + 12));
  expect_bad([](json& x) { x["sweep"]["order"] = "random"; }, "/sweep/order: invalid value 'random'");
  expect_bad([](json& x) { x["sweep"]["warmup_trials"] = -1; }, "/sweep/warmup_trials");
}

TEST(Grid, AWarmUpTrialIsTheFirstConfigurationFlaggedAndKeyedByItsRun) {
  json j = minimal_experiment();
  j["sweep"]["warmup_trials"] = 1;
  const Experiment e = parse(j);
  EXPECT_EQ(e.warmup_trials, 1);
  const TrialSpec w = warmup_trial(e, 0, "run-1", "f"), w2 = warmup_trial(e, 0, "run-2", "f");
  EXPECT_TRUE(w.warmup);
  EXPECT_EQ(w.label(), "bs=128 fp32 auto pl=- ep=2 warm-up");
  EXPECT_EQ(w.spec["warmup"]["run_id"], "run-1");
  EXPECT_NE(w.key, w2.key);  // every run's warm-up is its own trial
  for (const auto& t : expand_grid(e, "f")) EXPECT_NE(t.key, w.key);
}

TEST(Grid, EngineIsAnAxisParsedOnce) {
  json j = minimal_experiment();
  j["sweep"]["engine"] = {"libtorch", "fused"};
  const Experiment e = parse(j);
  EXPECT_EQ(e.engines, (std::vector<EngineKind>{EngineKind::kLibtorch, EngineKind::kFused}));
  const auto grid = expand_grid(e);
  EXPECT_EQ(e.grid_size(), 2 * parse(minimal_experiment()).grid_size());
  EXPECT_EQ(grid[0].engine(), EngineKind::kLibtorch);
  EXPECT_EQ(grid[0].config.engine, EngineKind::kLibtorch);
  EXPECT_EQ(grid[6].label(), "bs=128 fp32 fused pl=- ep=2 #0");
  EXPECT_EQ(grid[6].spec["run_config"]["engine"], "fused");
  EXPECT_NE(grid[0].key, grid[6].key);
  EXPECT_EQ(parse(minimal_experiment()).engines, (std::vector<EngineKind>{EngineKind::kAuto}));
  expect_bad([](json& x) { x["sweep"]["engine"] = {"fused", "cuda"}; }, "/sweep/engine/1: invalid engine \"cuda\"");
  expect_bad([](json& x) { x["training"]["engine"] = "fused"; }, "engine is a sweep axis: /sweep/engine");
}

TEST(Grid, ShardsCoverEveryTrialExactlyOnce) {
  const auto grid = expand_grid(parse(minimal_experiment()));
  for (int64_t n = 1; n <= 7; ++n) {
    std::map<int64_t, int> seen;
    for (int64_t i = 0; i < n; ++i) {
      const Shard s = parse_shard(std::to_string(i) + "/" + std::to_string(n));
      for (const auto& t : grid)
        if (s.contains(t.grid_index)) ++seen[t.grid_index];
    }
    ASSERT_EQ(seen.size(), grid.size()) << n << " shards";
    for (const auto& [index, count] : seen) EXPECT_EQ(count, 1) << "trial " << index << " with " << n << " shards";
  }
  expect_input_error([] { parse_shard("2/2"); }, "0 <= i < N");
  expect_input_error([] { parse_shard("1"); }, "expected i/N");
  expect_input_error([] { parse_shard("a/3"); }, "expected i/N");
  expect_input_error([] { parse_shard("0/0"); }, "expected i/N");
}

TEST(Grid, SlurmArrayEnvironment) {
  unsetenv("SLURM_ARRAY_TASK_ID");
  EXPECT_FALSE(shard_from_slurm_env().has_value());
  setenv("SLURM_ARRAY_TASK_ID", "3", 1);
  setenv("SLURM_ARRAY_TASK_COUNT", "4", 1);
  setenv("SLURM_ARRAY_TASK_MIN", "1", 1);  // --array=1-4
  const auto s = shard_from_slurm_env();
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->index, 2);
  EXPECT_EQ(s->count, 4);
  setenv("SLURM_ARRAY_TASK_ID", "9", 1);
  expect_input_error([] { shard_from_slurm_env(); }, "outside the array");
  unsetenv("SLURM_ARRAY_TASK_ID");
  unsetenv("SLURM_ARRAY_TASK_COUNT");
  unsetenv("SLURM_ARRAY_TASK_MIN");
}

TEST(Analysis, ZeusCostAgainstHandValues) {
  // eta 0.5, 1000 J, 10 s, 300 W: 0.5 * 1000 + 0.5 * 300 * 10 = 2000 J.
  EXPECT_DOUBLE_EQ(zeus_cost(0.5, 1000, 10, 300), 2000);
  EXPECT_DOUBLE_EQ(zeus_cost(0, 1000, 10, 300), 3000);  // time only, in joules at MaxPower
  EXPECT_DOUBLE_EQ(zeus_cost(1, 1000, 10, 300), 1000);  // energy only
  EXPECT_DOUBLE_EQ(zeus_cost(0.25, 400, 2, 250), 0.25 * 400 + 0.75 * 250 * 2);
  EXPECT_THROW(zeus_cost(1.5, 1, 1, 1), std::invalid_argument);
}

TEST(Analysis, SummaryAndConfidenceInterval) {
  const Summary s = summarize({4, 1, 3, 2});
  EXPECT_EQ(s.n, 4u);
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_NEAR(s.stddev, std::sqrt(5.0 / 3.0), 1e-12);
  EXPECT_NEAR(s.ci95_half_width, 3.182 * std::sqrt(5.0 / 3.0) / 2, 1e-9);
  EXPECT_DOUBLE_EQ(s.relative_spread(), 3 / 2.5);
  const Summary one = summarize({7});
  EXPECT_DOUBLE_EQ(one.median, 7);
  EXPECT_DOUBLE_EQ(one.ci95_half_width, 0);
  EXPECT_DOUBLE_EQ(summarize({1, 2, 10}).median, 2);
  EXPECT_DOUBLE_EQ(student_t95(1), 12.706);
  EXPECT_DOUBLE_EQ(student_t95(1000), 1.96);
}

TEST(Analysis, ParetoFrontier) {
  // (time, energy): A(1,10) B(2,5) C(3,6: dominated by B) D(4,1) E(2,7: dominated by B)
  const auto f = pareto_frontier({{1, 10, 0}, {2, 5, 1}, {3, 6, 2}, {4, 1, 3}, {2, 7, 4}});
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0].id, 0u);
  EXPECT_EQ(f[1].id, 1u);
  EXPECT_EQ(f[2].id, 3u);
}

TrialRecord fixture_trial(const std::string& key, const std::string& precision, int64_t batch, int64_t repeat,
                          double time_s, double energy_j, std::optional<double> tta = std::nullopt,
                          std::optional<double> eta = std::nullopt) {
  TrialRecord t;
  t.key = key;
  t.experiment = "fixture";
  t.batch_size = batch;
  t.precision = precision;
  t.repeat = repeat;
  t.epochs = 10;
  t.train_s = time_s;
  t.train_energy_j = energy_j;
  t.compress_s = 0.5;
  t.compress_energy_j = 5;
  t.decompress_s = 0.25;
  t.decompress_energy_j = 2.5;
  t.total_energy_j = energy_j + 7.5;
  t.co2_g = (energy_j + 7.5) / 3.6e6 * 100;  // 100 g/kWh
  t.target_reached = tta.has_value();
  t.tta_s = tta;
  t.eta_j = eta;
  t.max_power_w = 100;
  t.energy_kind = "estimated";
  t.hardware = "CPU: Test CPU (2 CPUs)";
  t.spec = {{"target", {{"metric", "val_loss"}, {"value", 0.1}, {"stop_when_reached", false}}}};
  t.result = {{"model",
               {{"name", "AE"},
                {"n_features", 24},
                {"latent", 15},
                {"layers", json::array({{{"name", "en1"},
                                         {"part", "encoder"},
                                         {"in", 24},
                                         {"out", 200},
                                         {"parameters", 5000},
                                         {"macs_per_sample", 4800},
                                         {"t1_operations", 2457800}}})}}},
              {"dataset", {{"label", "CMS-like"}, {"shape", {1000, 24}}, {"dtype", "float64"}, {"bytes", 192000}}}};
  t.provenance = {{"host", "test"}};
  t.epoch_rows = {{0, 1.0, 0.9, std::nullopt, 1e-3, 1.0, 1.0, 10.0, false},
                  {1, 0.5, 0.05, std::nullopt, 1e-3, 1.0, 2.0, 20.0, true}};
  t.phases = {{"train", "energy", time_s, energy_j, 0.01, "estimated"}};
  t.samples = {{0.1, "train", 20}, {0.2, "train", 21}};
  return t;
}

// Two repeats each: fp32 (10 s, 1000 J; 12 s, 1200 J), amp_fp16 (8 s, 600 J; 8 s, 600 J),
// fp64 one repeat that missed the target (20 s, 2000 J).
std::vector<TrialRecord> fixture_trials() {
  return {fixture_trial("k1", "fp32", 512, 0, 10, 1000, 5, 500), fixture_trial("k2", "fp32", 512, 1, 12, 1200, 7, 700),
          fixture_trial("k3", "amp_fp16", 512, 0, 8, 600, 4, 300),
          fixture_trial("k4", "amp_fp16", 512, 1, 8, 600, 6, 500), fixture_trial("k5", "fp64", 512, 0, 20, 2000)};
}

class StoreTest : public ::testing::Test {
 protected:
  TempDir dir_;
};

TEST_F(StoreTest, RoundTripsTrialsWithChildrenInWalMode) {
  const std::string db = dir_.path("r/results.sqlite");
  {
    Store s(db);
    s.put_experiment("fixture", "f.json", minimal_experiment());
    for (const auto& t : fixture_trials()) s.insert_trial(t);
    EXPECT_TRUE(std::filesystem::exists(db + "-wal"));  // WAL mode while open
  }
  const Store s(db, StoreAccess::kReadOnly);
  EXPECT_EQ(s.experiments(), std::vector<std::string>{"fixture"});
  EXPECT_EQ(s.experiment_spec("fixture")["name"], "t");
  const auto trials = s.trials("fixture");
  ASSERT_EQ(trials.size(), 5u);
  const TrialRecord& t = trials[0];
  EXPECT_EQ(t.key, "k1");
  EXPECT_DOUBLE_EQ(*t.train_s, 10);
  EXPECT_DOUBLE_EQ(*t.tta_s, 5);
  EXPECT_TRUE(t.target_reached);
  EXPECT_FALSE(trials[4].tta_s.has_value());  // "not reached" is stored as NULL, never a number
  EXPECT_FALSE(trials[4].target_reached);
  ASSERT_EQ(t.epoch_rows.size(), 2u);
  EXPECT_DOUBLE_EQ(*t.epoch_rows[1].energy_j, 20);
  EXPECT_TRUE(t.epoch_rows[1].target_met);
  ASSERT_EQ(t.samples.size(), 2u);
  EXPECT_DOUBLE_EQ(t.samples[1].power_w, 21);
  EXPECT_EQ(t.phases.at(0).energy_kind, "estimated");
  EXPECT_EQ(t.result["model"]["latent"], 15);
  EXPECT_EQ(s.trial_keys().size(), 5u);
}

TEST_F(StoreTest, DuplicateKeysAreRefusedAndLeaveNothingHalfWritten) {
  Store s(dir_.path("d.sqlite"));
  s.insert_trial(fixture_trial("k1", "fp32", 512, 0, 10, 1000));
  EXPECT_ANY_THROW(s.insert_trial(fixture_trial("k1", "fp32", 512, 0, 11, 1100)));
  const auto trials = s.trials();
  ASSERT_EQ(trials.size(), 1u);
  EXPECT_DOUBLE_EQ(*trials[0].train_s, 10);
  EXPECT_EQ(trials[0].epoch_rows.size(), 2u);  // the failed insert's epochs were rolled back
  // replace = true swaps the stored trial (retrying a failed one).
  TrialRecord again = fixture_trial("k1", "fp32", 512, 0, 12, 1200);
  s.insert_trial(again, true);
  ASSERT_EQ(s.trials().size(), 1u);
  EXPECT_DOUBLE_EQ(*s.trials()[0].train_s, 12);
  EXPECT_EQ(s.trials()[0].epoch_rows.size(), 2u);
}

// A stored JSON value that is not JSON (a damaged or hand-edited file) is an error naming the
// column, never a value that reads as something else.
TEST_F(StoreTest, DamagedJsonIsAnErrorNamingTheColumn) {
  const std::string db = dir_.path("j.sqlite");
  {
    Store s(db);
    s.insert_trial(fixture_trial("k1", "fp32", 512, 0, 10, 1000));
  }
  if (!python_has("sqlite3")) GTEST_SKIP() << "python3 sqlite3 missing";
  const auto r = run_command(python_binary() + " -c \"import sqlite3; c=sqlite3.connect('" + db +
                             "'); c.execute(\\\"update trials set result_json='{model: 1,'\\\"); c.commit()\"");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const Store s(db, StoreAccess::kReadOnly);
  expect_input_error([&] { s.trials(); }, "column result_json holds text that is not JSON");
  EXPECT_EQ(s.trial_keys().size(), 1u);  // the rest of the database still reads
}

TEST_F(StoreTest, RefusesOtherFilesAndSchemaVersions) {
  expect_input_error([&] { Store s(dir_.path("missing.sqlite"), StoreAccess::kReadOnly); }, "no such database");
  write_text(dir_.path("text.sqlite"), "this is not a database at all, just some text that is long enough");
  expect_input_error([&] { Store s(dir_.path("text.sqlite")); }, "text.sqlite");
  { Store s(dir_.path("v.sqlite")); }
  // Bump the stored version from outside (Python's sqlite3), then open it again.
  const std::string py = python_binary();
  if (!python_has("sqlite3")) GTEST_SKIP() << "python3 sqlite3 missing";
  const auto r =
      run_command(py + " -c \"import sqlite3; c=sqlite3.connect('" + dir_.path("v.sqlite") +
                  "'); c.execute(\\\"update meta set value='99' where key='schema_version'\\\"); c.commit()\"");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  expect_input_error([&] { Store s(dir_.path("v.sqlite")); }, "schema version 99; this balerbench reads 1 to 5");
}

// A database written by schema 1 (tests/fixtures/store_v1.sqlite: `balerbench run
// tests/fixtures/store_v1_experiment.json` with that version) is migrated forward in one
// transaction after a backup copy, keeps every row, says so once, and ends with exactly the tables
// a new database has.
TEST_F(StoreTest, OlderSchemaIsMigratedAfterABackupAndKeepsEveryRow) {
  if (!python_has("sqlite3")) GTEST_SKIP() << "python3 sqlite3 missing";
  const std::string db = dir_.path("old.sqlite");
  std::filesystem::copy_file(source_dir() + "/tests/fixtures/store_v1.sqlite", db);
  const std::string py = python_binary();
  auto sql = [&](const std::string& path, const std::string& query) {
    const auto r = run_command(py + " -c \"import sqlite3; c=sqlite3.connect('" + path + "'); print(c.execute(\\\"" +
                               query + "\\\").fetchall())\"");
    EXPECT_EQ(r.exit_code, 0) << r.out;
    return r.out;
  };
  const std::string epochs_before = sql(db, "select trial_id, epoch, train_loss, elapsed_s from epochs order by 1, 2");
  {
    Store s(db, StoreAccess::kReadWrite);
    EXPECT_NE(s.migration_note().find("from schema 1 to 5"), std::string::npos) << s.migration_note();
    EXPECT_NE(s.migration_note().find("eval_s"), std::string::npos) << s.migration_note();
    EXPECT_NE(s.migration_note().find("trials.engine"), std::string::npos) << s.migration_note();
    EXPECT_NE(s.migration_note().find("epochs.energy_pm_j"), std::string::npos) << s.migration_note();
    const auto trials = s.trials("fixture_v1");
    ASSERT_EQ(trials.size(), 2u);
    for (const auto& t : trials) {
      EXPECT_EQ(t.status, TrialStatus::kOk);
      ASSERT_EQ(t.epoch_rows.size(), 2u);
      EXPECT_FALSE(t.epoch_rows[0].eval_s.has_value());  // not measured by schema 1
      EXPECT_FALSE(t.epoch_rows[0].energy_pm_j.has_value());
      EXPECT_FALSE(t.samples.empty());
      EXPECT_TRUE(t.target_reached);
      EXPECT_EQ(t.engine, "libtorch");  // what every trial before schema 3 trained with
      EXPECT_EQ(t.system_fingerprint, "");  // not known before schema 5
    }
    EXPECT_NE(s.migration_note().find("trials.system_fingerprint"), std::string::npos) << s.migration_note();
    TrialRecord fresh = fixture_trial("new", "fp32", 512, 0, 10, 1000);
    fresh.epoch_rows[1].eval_s = 0.25;
    fresh.epoch_rows[1].energy_pm_j = 0.125;
    fresh.engine = "fused";
    fresh.system_fingerprint = "0123456789ab";
    s.insert_trial(fresh);
    EXPECT_EQ(s.trials("fixture")[0].system_fingerprint, "0123456789ab");
    EXPECT_DOUBLE_EQ(*s.trials("fixture")[0].epoch_rows[1].eval_s, 0.25);
    EXPECT_DOUBLE_EQ(*s.trials("fixture")[0].epoch_rows[1].energy_pm_j, 0.125);
    EXPECT_EQ(s.trials("fixture")[0].engine, "fused");
  }
  EXPECT_EQ(sql(db, "select value from meta where key='schema_version'"), "[('5',)]\n");
  EXPECT_EQ(sql(db, "select trial_id, epoch, train_loss, elapsed_s from epochs where trial_id <= 2 order by 1, 2"),
            epochs_before);
  // The backup is the file as it was: schema 1, the same rows.
  EXPECT_EQ(sql(db + ".schema1.bak", "select value from meta where key='schema_version'"), "[('1',)]\n");
  EXPECT_EQ(sql(db + ".schema1.bak", "select trial_id, epoch, train_loss, elapsed_s from epochs order by 1, 2"),
            epochs_before);
  EXPECT_TRUE(Store(db, StoreAccess::kReadOnly).migration_note().empty());  // once
  // Migrated and new databases have the same tables, column by column.
  { Store s(dir_.path("new.sqlite")); }
  for (const char* table : {"meta", "experiments", "trials", "epochs", "phases", "power_samples"}) {
    const std::string q = std::string("select * from pragma_table_info('") + table + "')";
    EXPECT_EQ(sql(db, q), sql(dir_.path("new.sqlite"), q)) << table;
  }
}

TEST_F(StoreTest, MergeCopiesNewTrialsOnce) {
  Store a(dir_.path("a.sqlite")), b(dir_.path("b.sqlite")), all(dir_.path("all.sqlite"));
  auto trials = fixture_trials();
  a.insert_trial(trials[0]);
  a.insert_trial(trials[1]);
  b.insert_trial(trials[1]);  // in both
  b.insert_trial(trials[2]);
  EXPECT_EQ(all.merge_from(a), (std::pair<int64_t, int64_t>{2, 0}));
  EXPECT_EQ(all.merge_from(b), (std::pair<int64_t, int64_t>{1, 1}));
  EXPECT_EQ(all.merge_from(b), (std::pair<int64_t, int64_t>{0, 2}));
  const auto merged = all.trials();
  ASSERT_EQ(merged.size(), 3u);
  EXPECT_EQ(merged[2].epoch_rows.size(), 2u);
  EXPECT_EQ(merged[2].samples.size(), 2u);
}

// A damaged foreign database (a table dropped, an experiment that is not JSON) is an InputError naming
// that file, and the database merged into keeps what it had: nothing of the damaged file is copied.
TEST_F(StoreTest, MergeOfADamagedDatabaseNamesItAndCopiesNothing) {
  if (!python_has("sqlite3")) GTEST_SKIP() << "python3 sqlite3 missing";
  const auto damage = [&](const std::string& db, const std::string& sql) {
    const auto r = run_command(python_binary() + " -c \"import sqlite3; c=sqlite3.connect('" + db + "'); c.execute(\\\"" +
                               sql + "\\\"); c.commit()\"");
    ASSERT_EQ(r.exit_code, 0) << r.out;
  };
  const auto trials = fixture_trials();
  Store all(dir_.path("all.sqlite"));
  all.insert_trial(trials[0]);
  {
    Store a(dir_.path("a.sqlite")), b(dir_.path("b.sqlite")), c(dir_.path("c.sqlite"));
    a.put_experiment("fixture", "exp.json", json{{"cost", {{"eta", {0.5}}}}});
    a.insert_trial(trials[1]);
    b.insert_trial(trials[2]);
    c.insert_trial(trials[2]);
    ASSERT_FALSE(trials[2].epoch_rows.empty());
  }
  damage(dir_.path("a.sqlite"), "update experiments set spec_json='{cost: 1,'");
  damage(dir_.path("b.sqlite"), "drop table power_samples");
  damage(dir_.path("c.sqlite"), "update epochs set trial_id=999");  // Python's sqlite3 leaves foreign keys off
  const Store a(dir_.path("a.sqlite"), StoreAccess::kReadOnly), b(dir_.path("b.sqlite"), StoreAccess::kReadOnly),
      c(dir_.path("c.sqlite"), StoreAccess::kReadOnly);
  expect_input_error([&] { all.merge_from(a); }, "a.sqlite: experiment 'fixture' spec_json holds text that is not JSON");
  expect_input_error([&] { all.merge_from(b); }, "b.sqlite: cannot read it: sqlite: no such table: power_samples");
  expect_input_error([&] { all.merge_from(c); }, "c.sqlite: a row of epochs belongs to no trial (trial_id 999)");
  EXPECT_EQ(all.trial_keys(), std::set<std::string>{trials[0].key});
  EXPECT_TRUE(all.experiment_spec("fixture").is_null());
}

// A file whose pages are damaged (found by fuzz_merge: SQLite's "database disk image is malformed"
// escaped as an internal error). Every page after the first gets an invalid b-tree page type.
TEST_F(StoreTest, DamagedPagesAreAnInputErrorThatNamesTheFile) {
  const auto trials = fixture_trials();
  const std::string path = dir_.path("damaged.sqlite");
  {
    Store s(path);
    for (const auto& t : trials) s.insert_trial(t);
  }  // the last connection's close checkpoints the WAL into the file
  const auto size = std::filesystem::file_size(path);
  ASSERT_GT(size, 4096u * 3);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    for (std::uintmax_t at = 4096; at < size; at += 4096) {
      f.seekp(static_cast<std::streamoff>(at));
      f.put('\x7f');
    }
  }
  expect_input_error(
      [&] {
        const Store s(path, StoreAccess::kReadOnly);
        s.trials("", true);
      },
      "damaged.sqlite: the file is damaged (sqlite: database disk image is malformed");
  Store all(dir_.path("all.sqlite"));
  all.insert_trial(trials[0]);
  try {
    const Store s(path, StoreAccess::kReadOnly);
    expect_input_error([&] { all.merge_from(s); }, "damaged.sqlite");
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("damaged.sqlite"), std::string::npos) << e.what();
  }
  EXPECT_EQ(all.trial_keys(), std::set<std::string>{trials[0].key});
}

// The bytes of a file, to show that only reading it changed nothing.
std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Reading never changes a file: a foreign SQLite file keeps its journal mode and bytes, an empty
// file stays empty, and an older schema is migrated in memory (no backup, no change on disk).
TEST_F(StoreTest, ReadingOnlyChangesNoFile) {
  if (!python_has("sqlite3")) GTEST_SKIP() << "python3 sqlite3 missing";
  const std::string foreign = dir_.path("foreign.sqlite");
  ASSERT_EQ(run_command(python_binary() + " -c \"import sqlite3; c=sqlite3.connect('" + foreign +
                        "'); c.execute('create table notes(x)'); c.commit()\"")
                .exit_code,
            0);
  const std::string before = file_bytes(foreign);
  ASSERT_EQ(before[18], 1);  // the rollback journal: WAL would be 2
  expect_input_error([&] { Store s(foreign, StoreAccess::kReadOnly); }, "not a balerbench results database");
  expect_input_error([&] { Store s(foreign, StoreAccess::kCreate); }, "not a balerbench results database");
  EXPECT_EQ(file_bytes(foreign), before);  // not switched to WAL before being refused
  EXPECT_FALSE(std::filesystem::exists(foreign + "-wal"));

  const std::string empty = dir_.path("empty.sqlite");
  write_text(empty, "");
  expect_input_error([&] { Store s(empty, StoreAccess::kReadOnly); }, "empty.sqlite: an empty file, not a results database");
  EXPECT_EQ(std::filesystem::file_size(empty), 0u);
  expect_input_error([&] { Store s(dir_.root(), StoreAccess::kReadOnly); }, "is a folder, not a results database");

  const std::string old = dir_.path("old.sqlite");
  std::filesystem::copy_file(source_dir() + "/tests/fixtures/store_v1.sqlite", old);
  const std::string old_bytes = file_bytes(old);
  {
    const Store s(old, StoreAccess::kReadOnly);
    EXPECT_NE(s.migration_note().find("read through a migration in memory from schema 1 to 5"), std::string::npos)
        << s.migration_note();
    EXPECT_NE(s.migration_note().find("the file is left as it is"), std::string::npos) << s.migration_note();
    const auto trials = s.trials("fixture_v1");
    ASSERT_EQ(trials.size(), 2u);
    EXPECT_EQ(trials[0].engine, "libtorch");  // the migration's default, read in memory
    EXPECT_TRUE(s.claims().empty());
  }
  EXPECT_EQ(file_bytes(old), old_bytes);
  EXPECT_FALSE(std::filesystem::exists(old + ".schema1.bak"));
  EXPECT_FALSE(std::filesystem::exists(old + "-wal"));
}

// Claims: one holder at a time while it lives, taken over when it died, gone with the stored trial.
TEST_F(StoreTest, ClaimsLetOneRunHoldATrialAndGoWithItsResult) {
  Store s(dir_.path("c.sqlite"));
  const ClaimHolder a{"host", "boot", 100, "5"}, b{"host", "boot", 200, "6"};
  bool a_alive = true;
  auto alive = [&](const Claim& c) { return c.holder == a ? a_alive : true; };
  TrialRecord t = fixture_trials()[0];
  EXPECT_EQ(s.claim_trial(t.key, a, std::nullopt, alive).kind, ClaimOutcome::kClaimed);
  EXPECT_EQ(s.claim_trial(t.key, a, std::nullopt, alive).kind, ClaimOutcome::kClaimed);  // its own claim again
  const ClaimOutcome held = s.claim_trial(t.key, b, std::nullopt, alive);
  ASSERT_EQ(held.kind, ClaimOutcome::kHeldByOther);
  EXPECT_EQ(held.other->holder.pid, 100);
  a_alive = false;  // a died: b takes the trial over
  const ClaimOutcome taken = s.claim_trial(t.key, b, std::nullopt, alive);
  ASSERT_EQ(taken.kind, ClaimOutcome::kClaimed);
  ASSERT_TRUE(taken.taken_over.has_value());
  EXPECT_EQ(taken.taken_over->holder.pid, 100);
  ASSERT_EQ(s.claims().size(), 1u);
  EXPECT_EQ(s.claims()[0].holder.pid, 200);
  const double beat = s.claims()[0].heartbeat_unix_s;
  EXPECT_EQ(s.refresh_claims(b), 1);
  EXPECT_GE(s.claims()[0].heartbeat_unix_s, beat);
  EXPECT_EQ(s.refresh_claims(a), 0);
  s.release_claim(t.key, a);  // not a's to release
  EXPECT_EQ(s.claims().size(), 1u);
  s.insert_trial(t);  // stored: the claim goes with it
  EXPECT_TRUE(s.claims().empty());
  const ClaimOutcome stored = s.claim_trial(t.key, a, std::nullopt, alive);
  EXPECT_EQ(stored.kind, ClaimOutcome::kStored);
  EXPECT_EQ(*stored.stored, TrialStatus::kOk);
  EXPECT_EQ(s.claim_trial(t.key, a, unix_time_s() + 10, alive).kind, ClaimOutcome::kStored);  // ok: never run again
  TrialRecord failed = fixture_trials()[1];
  failed.status = TrialStatus::kFailed;
  s.insert_trial(failed);
  EXPECT_EQ(s.claim_trial(failed.key, a, std::nullopt, alive).kind, ClaimOutcome::kStored);
  // --retry-failed: what failed before the retrying run began runs again; what failed after it began
  // (stored by a concurrent run meanwhile) is stored.
  EXPECT_EQ(s.claim_trial(failed.key, a, failed.finished_unix_s - 1, alive).kind, ClaimOutcome::kStored);
  EXPECT_EQ(s.claim_trial(failed.key, a, failed.finished_unix_s + 1, alive).kind, ClaimOutcome::kClaimed);
  s.release_claim(failed.key, a);
  EXPECT_TRUE(s.claims().empty());
}

// A claim's holder is alive while its process runs (this machine, this boot), or while its heartbeat
// is younger than the lease (elsewhere: a database on a shared file system).
TEST(Claims, AliveByProcessHereAndByHeartbeatElsewhere) {
  const ProcessIdentity me = this_process();
  const double now = unix_time_s();
  Claim mine{"k", claim_holder(me), now, now - 10 * kClaimLeaseS};  // an old heartbeat does not matter here
  EXPECT_TRUE(claim_alive(mine, me, now));
  Claim dead = mine;
  dead.holder.pid_start += "9";  // its pid now belongs to another process
  EXPECT_FALSE(claim_alive(dead, me, now));
  Claim remote{"k", {"other-host", "other-boot", me.pid, me.start_ticks}, now - 1000, now - kClaimLeaseS / 2};
  EXPECT_TRUE(claim_alive(remote, me, now));
  remote.heartbeat_unix_s = now - kClaimLeaseS - 1;  // ten beats missed: its holder is gone
  EXPECT_FALSE(claim_alive(remote, me, now));
}

const Table& find_table(const std::vector<Table>& tables, const std::string& title_part) {
  for (const auto& t : tables)
    if (t.title.find(title_part) != std::string::npos) return t;
  ADD_FAILURE() << "no table titled ..." << title_part << "...";
  static Table none;
  return none;
}

json cell(const Table& t, std::size_t row, const std::string& column) {
  const auto it = std::find(t.columns.begin(), t.columns.end(), column);
  if (it == t.columns.end()) {
    ADD_FAILURE() << "no column " << column << " in " << t.title;
    return nullptr;
  }
  return t.rows.at(row).at(static_cast<std::size_t>(it - t.columns.begin()));
}

TEST(ReportTables, PrecisionTableFromFixture) {
  const auto trials = fixture_trials();
  const auto tables = make_tables(trials, "precision", {});
  ASSERT_EQ(tables.size(), 1u);
  const Table& t = tables[0];
  ASSERT_EQ(t.rows.size(), 3u);  // fp32 first, then amp_fp16, then fp64
  EXPECT_EQ(cell(t, 0, "mode"), "normal training (FP32)");
  EXPECT_EQ(cell(t, 1, "mode"), "AMP with loss scaling (FP16 + GradScaler)");
  EXPECT_DOUBLE_EQ(cell(t, 0, "time_s").get<double>(), 11);
  EXPECT_DOUBLE_EQ(cell(t, 0, "time_median_s").get<double>(), 11);
  EXPECT_NEAR(cell(t, 0, "time_sd_s").get<double>(), std::sqrt(2.0), 1e-12);
  EXPECT_NEAR(cell(t, 0, "time_ci95_s").get<double>(), 12.706 * std::sqrt(2.0) / std::sqrt(2.0), 1e-9);
  EXPECT_DOUBLE_EQ(cell(t, 1, "time_vs_fp32").get<double>(), 8.0 / 11.0);
  EXPECT_DOUBLE_EQ(cell(t, 1, "energy_vs_fp32").get<double>(), 600.0 / 1100.0);
  EXPECT_DOUBLE_EQ(cell(t, 0, "energy_kwh").get<double>(), 1100 / 3.6e6);
  EXPECT_TRUE(cell(t, 2, "time_sd_s").is_null());  // one repeat: no spread
  EXPECT_EQ(cell(t, 0, "energy"), "estimated");
  EXPECT_NE(t.title.find("Test CPU"), std::string::npos);  // hardware named
}

// Grid points whose trials all failed have no row in the measured tables; a note counts them, and
// the trials table lists them. With no finished trial at all, the hardware comes from provenance.
TEST(ReportTables, FailedGridPointsAreLeftOutOfMeasuredTables) {
  auto trials = fixture_trials();
  TrialRecord failed = fixture_trial("k6", "amp_bf16", 512, 0, 0, 0);
  failed.status = TrialStatus::kFailed;
  failed.error = "CUDA error";
  trials.push_back(failed);
  for (const char* name : {"precision", "phases", "batch_size"}) {
    const Table t = make_tables(trials, name, {0.5})[0];
    for (std::size_t r = 0; r < t.rows.size(); ++r)
      for (const auto& v : t.rows[r]) EXPECT_NE(v, json("amp_bf16")) << name << " row " << r;
    bool noted = false;
    for (const auto& n : t.notes) noted |= n.find("1 failed and 0 skipped") != std::string::npos &&
                                           n.find("1 configuration(s) with no finished trial") != std::string::npos;
    EXPECT_TRUE(noted) << name;
  }
  EXPECT_EQ(make_tables(trials, "precision", {})[0].rows.size(), 3u);
  const Table listed = make_tables(trials, "trials", {})[0];
  EXPECT_EQ(listed.rows.size(), trials.size());

  TrialRecord only = failed;
  only.hardware.clear();
  only.provenance = {{"cpu_model", "Test CPU"}, {"logical_cpus", 2}, {"gpus", {{{"name", "NVIDIA H100 80GB HBM3"}}}}};
  const Table t = make_tables({only}, "precision", {})[0];
  EXPECT_TRUE(t.rows.empty());
  EXPECT_NE(t.title.find("GPU: NVIDIA H100 80GB HBM3; CPU: Test CPU (2 CPUs)"), std::string::npos) << t.title;
  EXPECT_EQ(t.title.find("unknown hardware"), std::string::npos) << t.title;
}

// A trial whose energy windows were flagged (a meter's failed reads) says so under the trials table.
TEST(ReportTables, TrialsTableNotesEnergyFlags) {
  auto trials = fixture_trials();
  trials[1].id = 2;
  trials[1].result["energy"] = {
      {"phases", {{{"phase", "train"}, {"flags", {"3 failed reads of rapl inside: its energy counts nothing"}}}}},
      {"total", {{"phase", "total"}, {"flags", {"3 failed reads of rapl inside: its energy counts nothing"}}}}};
  const Table t = make_tables(trials, "trials", {})[0];
  int flagged = 0;
  for (const auto& n : t.notes)
    if (n.find("energy flags") != std::string::npos) {
      ++flagged;
      EXPECT_NE(n.find("trial 2 energy flags: train: 3 failed reads of rapl"), std::string::npos) << n;
      EXPECT_NE(n.find("; total: 3 failed reads"), std::string::npos) << n;
    }
  EXPECT_EQ(flagged, 1);
}

// report --table crosscheck: one row per trial window that holds a cross-check (WindowResult::to_json),
// in the table "all" only when some trial has one; asked for by name, it says why it is empty.
TEST(ReportTables, CrosscheckTableFromTheTrialsWindows) {
  auto trials = fixture_trials();
  EXPECT_EQ(make_tables(trials, "crosscheck", {})[0].rows.size(), 0u);
  EXPECT_NE(make_tables(trials, "crosscheck", {})[0].notes[0].find("no trial has both a wall meter"), std::string::npos);
  for (const auto& t : make_tables(trials, "all", {})) EXPECT_NE(t.name, "crosscheck");
  WindowResult w;
  w.name = "train";
  DomainEnergy rapl, wall;
  rapl.meter = "rapl";
  rapl.domain = "package-0";
  rapl.energy_j = 14107.4;
  rapl.edge_uncertainty_j = 5.0;
  wall.meter = "wattmeter";
  wall.domain = "wall";
  wall.category = DomainCategory::kWall;
  wall.in_total = false;
  wall.energy_j = 19181.3;
  wall.edge_uncertainty_j = 2.0;
  w.domains = {rapl, wall};
  WindowResult total = w;
  total.name = "total";
  trials[2].id = 3;
  trials[2].result["energy"] = {{"phases", {w.to_json()}}, {"total", total.to_json()}};
  trials[3].result["energy"] = {{"total", {{"phase", "total"}, {"crosscheck", "damaged"}}}};  // skipped
  const Table t = make_tables(trials, "crosscheck", {})[0];
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(cell(t, 0, "id"), 3);
  EXPECT_EQ(cell(t, 0, "window"), "train");
  EXPECT_EQ(cell(t, 1, "window"), "total");
  EXPECT_EQ(cell(t, 1, "components"), "rapl");
  EXPECT_NEAR(cell(t, 1, "ratio").get<double>(), 14107.4 / 19181.3, 1e-12);
  EXPECT_NEAR(cell(t, 1, "unseen_pct").get<double>(), 100 * 5073.9 / 19181.3, 1e-9);
  EXPECT_NEAR(cell(t, 1, "components_pm_j").get<double>(), 5.0, 1e-12);
  EXPECT_NE(cell(t, 1, "reading").get<std::string>().find("fans, disks"), std::string::npos);
  bool listed = false;
  for (const auto& table : make_tables(trials, "all", {})) listed |= table.name == "crosscheck";
  EXPECT_TRUE(listed);
  EXPECT_NE(render_tables({t}, "md").find("| 3 | amp_fp16 |"), std::string::npos) << render_tables({t}, "md");
}

// report --table attribution (T7): per trial window, each category's absolute energy beside its part
// attributable to the run's processes and their ±; listed under "all" only when a trial has one.
TEST(ReportTables, AttributionTableFromTheTrialsWindows) {
  auto trials = fixture_trials();
  EXPECT_EQ(make_tables(trials, "attribution", {})[0].rows.size(), 0u);
  for (const auto& t : make_tables(trials, "all", {})) EXPECT_NE(t.name, "attribution");
  WindowResult w;
  w.name = "train";
  DomainEnergy cpu, gpu;
  cpu.meter = "rapl";
  cpu.domain = "package-0";
  cpu.energy_j = 100;
  cpu.attributable_j = 40;
  cpu.attributable_uncertainty_j = 2;
  cpu.use_tree = 0.8;
  cpu.use_all = 2.0;
  gpu.meter = "nvml";
  gpu.domain = "gpu0";
  gpu.category = DomainCategory::kGpu;
  gpu.energy_j = 300;
  w.domains = {cpu, gpu};  // the GPU without per-process samples: no share
  trials[1].id = 2;
  trials[1].result["energy"] = {{"phases", {w.to_json()}}};
  const Table t = make_tables(trials, "attribution", {})[0];
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(cell(t, 0, "id"), 2);
  EXPECT_EQ(cell(t, 0, "window"), "train");
  EXPECT_NEAR(cell(t, 0, "cpu_j").get<double>(), 100, 1e-12);
  EXPECT_NEAR(cell(t, 0, "cpu_attributable_j").get<double>(), 40, 1e-12);
  EXPECT_NEAR(cell(t, 0, "cpu_attributable_pm_j").get<double>(), 2, 1e-12);
  EXPECT_NEAR(cell(t, 0, "cpu_share").get<double>(), 0.4, 1e-12);
  EXPECT_EQ(cell(t, 0, "gpu_attributable_j"), "-");
  bool listed = false;
  for (const auto& table : make_tables(trials, "all", {})) listed |= table.name == "attribution";
  EXPECT_TRUE(listed);
}

// Memory per phase (result.memory): the T4-shaped table's peak_rss_mib is the group's mean per phase,
// the trials table's the highest of the trial's phases; CUDA's '-' where no trial had it.
TEST(ReportTables, MemoryPerPhaseInTheT4AndTrialsTables) {
  auto trials = fixture_trials();
  const auto memory = [](double train, double compress, double decompress) {
    const auto m = [](double rss) { return json{{"host_peak_rss_mib", rss}, {"cuda_peak_reserved_mib", nullptr}}; };
    return json{{"train", m(train)}, {"compress", m(compress)}, {"decompress", m(decompress)}};
  };
  trials[0].result["memory"] = memory(400, 300, 350);  // fp32, repeat 0
  trials[1].result["memory"] = memory(500, 310, 330);  // fp32, repeat 1
  trials[1].result["memory"]["train"]["gpu_memory_used_peak_mib"] = 1536;  // NVML, one trial only
  const Table t4 = make_tables(trials, "phases", {})[0];
  bool found = false;
  for (std::size_t i = 0; i < t4.rows.size(); ++i) {
    if (cell(t4, i, "precision") != "fp32") continue;
    const std::string mode = cell(t4, i, "mode");
    const double want = mode == "train" ? 450 : mode == "compress" ? 305 : 340;
    EXPECT_NEAR(cell(t4, i, "peak_rss_mib").get<double>(), want, 1e-9) << mode;
    EXPECT_TRUE(cell(t4, i, "cuda_peak_mib").is_null());
    if (mode == "train") EXPECT_NEAR(cell(t4, i, "gpu_used_peak_mib").get<double>(), 1536, 1e-9);
    else EXPECT_TRUE(cell(t4, i, "gpu_used_peak_mib").is_null());
    found = true;
  }
  EXPECT_TRUE(found);
  const Table all = make_tables(trials, "trials", {})[0];
  EXPECT_NEAR(cell(all, 0, "peak_rss_mib").get<double>(), 400, 1e-9);
  EXPECT_NEAR(cell(all, 1, "peak_rss_mib").get<double>(), 500, 1e-9);
  EXPECT_EQ(cell(all, 2, "peak_rss_mib"), "-");  // no memory recorded
  EXPECT_EQ(cell(all, 0, "gpu_used_peak_mib"), "-");
  EXPECT_NEAR(cell(all, 1, "gpu_used_peak_mib").get<double>(), 1536, 1e-9);
}

// CSV: one table, the header on the first line (pandas and spreadsheets read it as it is).
// Engines are a grid axis: trials of different engines are never averaged together, the engine
// gets a column when it varies (else a note), and each engine's fp32 row is its own baseline.
TEST(ReportTables, EnginesAreAnAxisWithTheirOwnFp32Baseline) {
  std::vector<TrialRecord> trials;
  for (const char* engine : {"libtorch", "fused"})
    for (const char* precision : {"fp32", "fp64"}) {
      const double time_s = std::string(engine) == "fused" ? 6 : 10;
      TrialRecord t = fixture_trial(std::string(engine) + precision, precision, 512, 0,
                                    std::string(precision) == "fp64" ? 2 * time_s : time_s, 100);
      t.engine = engine;
      trials.push_back(t);
    }
  const Table t = make_tables(trials, "precision", {})[0];
  ASSERT_EQ(t.rows.size(), 4u);
  const auto col = [&](const std::string& name) {
    return static_cast<std::size_t>(std::find(t.columns.begin(), t.columns.end(), name) - t.columns.begin());
  };
  ASSERT_LT(col("engine"), t.columns.size());
  for (const auto& row : t.rows) {
    EXPECT_DOUBLE_EQ(row[col("time_vs_fp32")].get<double>(), row[col("precision")] == "fp64" ? 2.0 : 1.0)
        << row[col("engine")];
  }
  // auto runs fp32 on fused and amp_bf16 on libtorch: AMP's ratio is then to the fused fp32 row.
  TrialRecord bf16 = fixture_trial("bf16", "amp_bf16", 512, 0, 3, 50);
  bf16.engine = "libtorch";
  const Table mixed = make_tables({trials[2], bf16}, "precision", {})[0];
  ASSERT_EQ(mixed.rows.size(), 2u);
  const auto mixed_col = static_cast<std::size_t>(
      std::find(mixed.columns.begin(), mixed.columns.end(), "time_vs_fp32") - mixed.columns.begin());
  EXPECT_DOUBLE_EQ(mixed.rows[1][mixed_col].get<double>(), 0.5);  // 3 s against fused fp32's 6 s
  const Table trials_table = make_tables(trials, "trials", {})[0];
  EXPECT_EQ(trials_table.columns[5], "engine");
  EXPECT_EQ(trials_table.rows[2][5], "fused");
  // One engine: no column, a note instead.
  const Table one = make_tables({trials[2], trials[3]}, "precision", {})[0];
  EXPECT_EQ(std::find(one.columns.begin(), one.columns.end(), "engine"), one.columns.end());
  bool noted = false;
  for (const auto& n : one.notes) noted |= n.find("engine fused") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(ReportTables, CsvIsOneTableWithTheHeaderFirst) {
  const std::string csv = render_tables(make_tables(fixture_trials(), "precision", {}), "csv");
  EXPECT_EQ(csv.rfind("mode,precision,n,time_s", 0), 0u) << csv;
  EXPECT_EQ(csv.find('#'), std::string::npos);
  expect_input_error([] { render_tables(make_tables(fixture_trials(), "all", {}), "csv"); }, "one table per file");
}

TEST(ReportTables, CostAndParetoFromFixture) {
  const auto tables = make_tables(fixture_trials(), "cost", {0, 0.5, 1});
  const Table& best = find_table(tables, "Best configuration");
  ASSERT_EQ(best.rows.size(), 3u);
  // fp32: TTA 6 s, ETA 600 J; amp_fp16: TTA 5 s, ETA 400 J; fp64 never reached: not a candidate.
  // eta 0: 100 W x 5 s = 500 (amp); eta 1: 400 J (amp); eta 0.5: 0.5*400 + 0.5*500 = 450.
  EXPECT_DOUBLE_EQ(cell(best, 0, "cost_j").get<double>(), 500);
  EXPECT_DOUBLE_EQ(cell(best, 1, "cost_j").get<double>(), 450);
  EXPECT_DOUBLE_EQ(cell(best, 2, "cost_j").get<double>(), 400);
  EXPECT_NE(cell(best, 1, "best_configuration").get<std::string>().find("amp_fp16"), std::string::npos);
  EXPECT_EQ(cell(best, 1, "candidates"), 2);
  const Table& front = find_table(tables, "Pareto");
  ASSERT_EQ(front.rows.size(), 1u);  // amp_fp16 beats fp32 in both
  const auto bs = make_tables(fixture_trials(), "batch_size", {0.5});
  const Table& b = bs[0];
  ASSERT_EQ(b.rows.size(), 3u);
  EXPECT_EQ(cell(b, 2, "tta_s"), "not reached");
  EXPECT_EQ(cell(b, 2, "reached"), "0/1");
  EXPECT_EQ(cell(b, 2, "cost_eta_0.5"), "target not reached");
  EXPECT_DOUBLE_EQ(cell(b, 0, "cost_eta_0.5").get<double>(), 0.5 * 600 + 0.5 * 100 * 6);
}

TEST(ReportTables, PhasesComplexityDatasetsAndFormats) {
  const auto trials = fixture_trials();
  const auto phases = make_tables(trials, "phases", {});
  const Table& p = phases[0];
  ASSERT_EQ(p.rows.size(), 9u);  // 3 modes x 3 configurations
  EXPECT_EQ(cell(p, 1, "mode"), "compress");
  EXPECT_DOUBLE_EQ(cell(p, 1, "energy_j").get<double>(), 5);
  EXPECT_NEAR(cell(p, 1, "co2_kg").get<double>(), 5 / 3.6e6 * 100 / 1000, 1e-15);
  const Table c = make_tables(trials, "complexity", {})[0];
  EXPECT_EQ(cell(c, 0, "in_to_out"), "24 -> 200");
  EXPECT_EQ(cell(c, 0, "t1_operations_per_batch"), 2457800);
  EXPECT_EQ(cell(c, 0, "flops_per_sample"), 9600);
  const Table d = make_tables(trials, "datasets", {})[0];
  EXPECT_EQ(cell(d, 0, "shape"), "(1000, 24)");
  EXPECT_EQ(cell(d, 0, "trials"), 5);

  const auto all = make_tables(trials, "all", {0.5});
  const std::string md = render_tables(all, "md");
  EXPECT_NE(md.find("| normal training (FP32) |"), std::string::npos);
  EXPECT_NE(md.find("estimated"), std::string::npos);
  const json j = json::parse(render_tables(all, "json"));
  EXPECT_EQ(j["tables"][0]["table"], "precision");
  EXPECT_DOUBLE_EQ(j["tables"][0]["rows"][0]["time_s"].get<double>(), 11);
  const std::string csv = render_tables(make_tables(trials, "precision", {}), "csv");
  EXPECT_NE(csv.find("mode,precision,n,time_s"), std::string::npos);
  EXPECT_NE(csv.find("normal training (FP32),fp32,2,11,11,"), std::string::npos);
  const std::string tex = render_tables(make_tables(trials, "precision", {}), "latex");
  EXPECT_NE(tex.find("\\begin{tabular}"), std::string::npos);
  EXPECT_NE(tex.find("time\\_s"), std::string::npos);
  expect_input_error([&] { make_tables(trials, "speed", {}); }, "no such table");
  expect_input_error([&] { render_tables(all, "xlsx"); }, "unknown");
}

// Power limits against the fake NVML library: one GPU, limits 100-300 W.
class PowerTest : public ::testing::Test {
 protected:
  void SetUp() override { configure(""); }
  void configure(const std::string& extra) {
    write_text(dir_.path("nvml.json"),
               R"({"driver_version": "550.00", "devices": [{"name": "Fake A100", "uuid": "GPU-aaaa",
                   "power_w": 100, "power_limit_w": 300, "min_limit_w": 100, "max_limit_w": 300)" +
                   extra + "}]}");
    setenv("BALERBENCH_NVML_LIB", FAKE_NVML_LIB, 1);
    setenv("FAKE_NVML_CONFIG", dir_.path("nvml.json").c_str(), 1);
    setenv("FAKE_NVML_SET_LOG", dir_.path("sets.log").c_str(), 1);
    unsetenv("FAKE_NVML_STATE");
  }
  void TearDown() override {
    for (const char* v : {"BALERBENCH_NVML_LIB", "FAKE_NVML_CONFIG", "FAKE_NVML_SET_LOG", "FAKE_NVML_STATE"})
      unsetenv(v);
  }
  std::vector<std::string> sets() const { return read_lines(dir_.path("sets.log")); }
  std::unique_ptr<NvmlPowerControl> open() {
    std::string reason;
    auto c = NvmlPowerControl::open(reason);
    EXPECT_TRUE(c) << reason;
    return c;
  }
  TempDir dir_;
};

TEST_F(PowerTest, GuardSetsReadsBackAndRestoresOnDestruction) {
  auto c = open();
  ASSERT_TRUE(c);
  const std::string journal = dir_.path("journal.json");
  {
    PowerLimitGuard g(*c, journal);
    const auto applied = g.apply(250);
    ASSERT_EQ(applied.size(), 1u);
    EXPECT_DOUBLE_EQ(applied[0].original_w, 300);
    EXPECT_DOUBLE_EQ(applied[0].enforced_w, 250);
    EXPECT_TRUE(std::filesystem::exists(journal));
    EXPECT_DOUBLE_EQ(c->limit_w(0), 250);
    g.apply(200);  // the original stays 300
    EXPECT_DOUBLE_EQ(c->limit_w(0), 200);
  }
  EXPECT_DOUBLE_EQ(c->limit_w(0), 300);
  EXPECT_FALSE(std::filesystem::exists(journal));
  EXPECT_EQ(sets(), (std::vector<std::string>{"GPU-aaaa 250000 0", "GPU-aaaa 200000 0", "GPU-aaaa 300000 0"}));
}

TEST_F(PowerTest, GuardRestoresWhenAnExceptionUnwinds) {
  auto c = open();
  ASSERT_TRUE(c);
  try {
    PowerLimitGuard g(*c, dir_.path("j.json"));
    g.apply(150);
    throw std::runtime_error("trial failed");
  } catch (const std::runtime_error&) {
  }
  EXPECT_DOUBLE_EQ(c->limit_w(0), 300);
  EXPECT_EQ(sets().back(), "GPU-aaaa 300000 0");
}

TEST_F(PowerTest, OutOfRangeLimitChangesNothing) {
  auto c = open();
  ASSERT_TRUE(c);
  PowerLimitGuard g(*c, dir_.path("j.json"));
  expect_input_error([&] { g.apply(350); }, "outside GPU GPU-aaaa");
  expect_input_error([&] { g.apply(50); }, "[100 W, 300 W]");
  EXPECT_TRUE(sets().empty());
  EXPECT_FALSE(g.touched());
}

TEST_F(PowerTest, NoPermissionSaysWhatIsNeeded) {
  configure(R"(, "set_error": 4)");
  auto c = open();
  ASSERT_TRUE(c);
  PowerLimitGuard g(*c, dir_.path("j.json"));
  try {
    g.apply(200);
    FAIL() << "expected PowerLimitError";
  } catch (const PowerLimitError& e) {
    EXPECT_TRUE(e.permission);
    EXPECT_NE(std::string(e.what()).find("root or CAP_SYS_ADMIN"), std::string::npos) << e.what();
  }
  EXPECT_DOUBLE_EQ(c->limit_w(0), 300);
}

TEST_F(PowerTest, EnforcedLimitIsReadBackNotAssumed) {
  configure(R"(, "enforce_offset_w": -5)");
  auto c = open();
  ASSERT_TRUE(c);
  PowerLimitGuard g(*c, dir_.path("j.json"));
  EXPECT_DOUBLE_EQ(g.apply(200)[0].enforced_w, 195);
}

TEST_F(PowerTest, JournalOfAKilledRunIsRecovered) {
  setenv("FAKE_NVML_STATE", dir_.path("state.json").c_str(), 1);
  const std::string journal = dir_.path("journal.json");
  {
    auto c = open();
    ASSERT_TRUE(c);
    auto* g = new PowerLimitGuard(*c, journal);  // never destroyed: as if the process died
    g->apply(175);
  }
  // A "new process": NVML state from the state file, as a real GPU keeps its limit.
  auto c = open();
  ASSERT_TRUE(c);
  EXPECT_DOUBLE_EQ(c->limit_w(0), 175);
  ASSERT_TRUE(std::filesystem::exists(journal));
  const auto restored = recover_power_limits(*c, journal);
  ASSERT_EQ(restored.size(), 1u);
  EXPECT_DOUBLE_EQ(restored[0].original_w, 300);
  EXPECT_DOUBLE_EQ(restored[0].restored_w, 300);
  EXPECT_DOUBLE_EQ(c->limit_w(0), 300);
  EXPECT_FALSE(std::filesystem::exists(journal));
  EXPECT_TRUE(recover_power_limits(*c, journal).empty());  // nothing left to do
}

TEST(PowerLimitOptimizer, CandidatesLikeZeus) {
  EXPECT_EQ(power_limit_candidates(100, 300, 25), (std::vector<double>{300, 275, 250, 225, 200, 175, 150, 125, 100}));
  EXPECT_EQ(power_limit_candidates(150, 200, 30), (std::vector<double>{200, 170, 150}));
  expect_input_error([] { power_limit_candidates(300, 100, 25); }, "empty");
}

// The optimiser on the simulated GPU model: each step's time and energy
// follow the model at the limit in force (load 1: demand 300 W, idle 60 W),
// and the limit is set through the fake NVML (guard included).
struct SimulatedRun {
  SimulatedGpuModel gpu;
  double time_s = 0, energy_j = 0;
  int64_t steps = 0;
  void step() {
    gpu.spec.power_limit_w = current_limit();
    const double dt = 0.01 / gpu.throughput(1.0);
    time_s += dt;
    energy_j += gpu.power_w(1.0) * dt;
    ++steps;
  }
  std::function<double()> current_limit;
};

TEST_F(PowerTest, OptimizerProfilesEveryLimitAndChoosesTheCheapest) {
  auto c = open();
  ASSERT_TRUE(c);
  PowerLimitGuard guard(*c, dir_.path("j.json"));
  SimulatedRun run;
  run.gpu.spec.idle_power_w = 60;
  run.gpu.spec.max_power_w = 300;
  run.gpu.spec.min_limit_w = 100;
  run.gpu.spec.max_limit_w = 300;
  run.current_limit = [&] { return c->enforced_limit_w(0); };
  OptimizerOptions o;  // Zeus defaults: wait 1, warm up 10, profile 40, 25 W
  o.eta = 0.5;
  PowerLimitOptimizer opt(
      o, power_limit_candidates(100, 300, o.pl_step_w), [&](double w) { guard.apply(w); },
      [&] {
        return PowerLimitOptimizer::Reading{run.time_s, run.energy_j};
      });
  const int64_t steps_per_epoch = 100;
  for (int epoch = 0; epoch < 12 && opt.state() != PowerLimitOptimizer::State::kDone; ++epoch) {
    for (int64_t s = 0; s < steps_per_epoch; ++s) {
      opt.on_step_begin();
      run.step();
      opt.on_step_end();
    }
    opt.on_epoch_end();
  }
  ASSERT_EQ(opt.state(), PowerLimitOptimizer::State::kDone);
  ASSERT_EQ(opt.profiles().size(), 9u);
  // Expected: the cost of 40 steps at each limit from the model, by hand.
  double best_cost = INFINITY, best_w = 0;
  for (double w : power_limit_candidates(100, 300, 25)) {
    SimulatedGpuModel m = run.gpu;
    m.spec.power_limit_w = w;
    const double t = 40 * 0.01 / m.throughput(1.0);
    const double e = m.power_w(1.0) * t;
    const double cost = 0.5 * e + 0.5 * 300 * t;
    if (cost < best_cost) {
      best_cost = cost;
      best_w = w;
    }
  }
  for (const auto& p : opt.profiles()) EXPECT_EQ(p.steps, 40);
  ASSERT_TRUE(opt.chosen_w().has_value());
  EXPECT_DOUBLE_EQ(*opt.chosen_w(), best_w);
  EXPECT_DOUBLE_EQ(c->limit_w(0), best_w);  // training continues at the chosen limit
  // 100 steps per epoch hold one limit's 50 steps plus part of the next: cut measurements were retried.
  EXPECT_GT(opt.to_json()["cancelled_measurements"].get<int64_t>(), 0);
  for (const auto& p : opt.profiles()) {
    SimulatedGpuModel m = run.gpu;
    m.spec.power_limit_w = p.limit_w;
    EXPECT_NEAR(p.time_s, 40 * 0.01 / m.throughput(1.0), 1e-9) << p.limit_w;
  }
  guard.restore();
  EXPECT_DOUBLE_EQ(c->limit_w(0), 300);
}

}  // namespace
}  // namespace balerbench
