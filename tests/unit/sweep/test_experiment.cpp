// test_experiment.cpp: experiment files (sweep/experiment.h): parsing with defaults and errors
// that name the JSON path, the shipped experiments, the grid (order, keys, repeats, warm-up,
// engines) and its shards, from --shard and from Slurm's array environment. No LibTorch headers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
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
  EXPECT_EQ(q.grid_size(), 18);  // 2 batch sizes x 3 precisions x 3 repeats
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
  // Whitespace either side is refused alike (was: " 0/2" accepted, "0/2 " refused), and an empty value
  // (an unset shell variable) is an error, not the whole grid.
  for (const char* text : {" 0/2", "0/2 ", "0 /2", "+0/2", "-0/2", "0/+2", "0/1000000000000000000"})
    expect_input_error([&] { parse_shard(text); }, "each at most 18 digits, nothing else");
  expect_input_error([] { parse_shard(""); }, "an unset shell variable?");
  expect_input_error([] { parse_shard("0/2\n"); }, "--shard \"0/2\\n\"");  // a control character shown escaped
}

// The grid is held as its axes: trial i made on demand is the trial expand_grid lists at i, and the
// size of a grid far too large to hold is its exact product (saturating, never wrapping).
TEST(Grid, TrialsAreMadeOnDemandInGridOrder) {
  json j = minimal_experiment();
  j["sweep"]["engine"] = {"libtorch", "fused"};
  j["sweep"]["power_limit_w"] = {nullptr, 250};
  j["allow_power_limit_changes"] = true;
  const Experiment e = parse(j);
  const auto all = expand_grid(e, "f");
  const Grid grid(e, "f");
  ASSERT_EQ(grid.size(), static_cast<int64_t>(all.size()));
  for (int64_t i = 0; i < grid.size(); ++i) {
    const TrialSpec t = grid.at(i);
    EXPECT_EQ(t.key, all[static_cast<std::size_t>(i)].key) << i;
    EXPECT_EQ(t.grid_index, i);
    EXPECT_EQ(grid.repeat_at(i), t.repeat);
  }
  std::vector<int64_t> indices;
  for (int64_t i = 0; i < grid.size(); ++i) indices.push_back(i);
  std::vector<std::string> lazy;
  for (const int64_t i : run_order(e, indices)) lazy.push_back(grid.at(i).label());
  EXPECT_EQ(lazy, labels_in_order(e));

  json big = minimal_experiment();
  std::vector<int64_t> sizes;
  for (int64_t b = 1; b <= 1000; ++b) sizes.push_back(b);
  big["sweep"] = {{"batch_size", sizes}, {"precision", {"fp32"}}, {"epochs", sizes}, {"repeats", 1000000}};
  const Experiment huge = parse(big);
  EXPECT_EQ(huge.grid_size(), int64_t{1000} * 1000 * 1000000);
  EXPECT_EQ(huge.grid_shape(), "1000 batch sizes x 1 precision x 1 engine x 1 power limit x 1000 epochs values x 1000000 repeats");
  EXPECT_EQ(Grid(huge).at(huge.grid_size() - 1).label(), "bs=1000 fp32 auto pl=- ep=1000 #999999");
}

// A value listed twice on an axis is refused, naming both places (was: the second trial read as
// "already stored by another run, skipped").
TEST(Grid, DuplicateAxisValuesAreRefused) {
  expect_bad([](json& x) { x["sweep"]["batch_size"] = {256, 512, 256}; },
             "/sweep/batch_size/2: repeats 256, already listed at batch_size/0");
  expect_bad([](json& x) { x["sweep"]["precision"] = {"fp32", "fp32"}; }, "/sweep/precision/1: repeats \"fp32\"");
  expect_bad([](json& x) { x["sweep"]["engine"] = {"fused", "fused"}; }, "/sweep/engine/1: repeats");
  expect_bad([](json& x) { x["sweep"]["epochs"] = {3, 3}; }, "/sweep/epochs/1: repeats 3");
  expect_bad([](json& x) { x["sweep"]["power_limit_w"] = {nullptr, 250, nullptr}; x["allow_power_limit_changes"] = true; },
             "/sweep/power_limit_w/2: repeats null, already listed at power_limit_w/0");
  expect_bad([](json& x) { x["sweep"]["power_limit_w"] = {250, 250.0}; x["allow_power_limit_changes"] = true; },
             "/sweep/power_limit_w/1: repeats");
  // Numbers beyond int64 are "too large", never wrapped into a negative number.
  expect_bad([](json& x) { x["sweep"]["repeats"] = json::parse("9223372036854775808"); }, "/sweep/repeats: must be at most");
  expect_bad([](json& x) { x["sweep"]["repeats"] = 1000001; }, "/sweep/repeats: must be at most 1000000");
  expect_bad([](json& x) { x["sweep"]["batch_size"] = {int64_t{1} << 40}; }, "/sweep/batch_size/0: must be at most 2147483647");
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
  // Half a job array, or a value that is not digits, is an error, never the whole grid or a guess.
  for (const char* id : {"", "1x", " 1", "-1"}) {
    setenv("SLURM_ARRAY_TASK_ID", id, 1);
    expect_input_error([] { shard_from_slurm_env(); }, "not a job array's task");
  }
  unsetenv("SLURM_ARRAY_TASK_ID");
  unsetenv("SLURM_ARRAY_TASK_COUNT");
  unsetenv("SLURM_ARRAY_TASK_MIN");
}

// ---- the batch-size optimiser's section ----

json bso_experiment() {
  json j = minimal_experiment();
  j["sweep"] = {{"batch_size", {128, 256, 512}}, {"precision", {"fp32"}}, {"epochs", {20}}};
  j["batch_size_optimizer"] = {{"enabled", true}, {"default_batch_size", 256}};
  return j;
}

TEST(Experiment, TheBatchSizeOptimiserRunsRecurrencesToTheTarget) {
  const Experiment e = parse(bso_experiment());
  const BatchSizeOptimizerSpec& b = e.batch_size_optimizer;
  EXPECT_TRUE(b.enabled);
  EXPECT_EQ(b.default_batch_size, 256);
  EXPECT_FALSE(b.recurrences);  // 2 x batch sizes x power limits, at run time
  EXPECT_DOUBLE_EQ(b.eta, 0.5);
  EXPECT_DOUBLE_EQ(b.beta, 2);
  EXPECT_EQ(b.seed, 1);
  EXPECT_EQ(b.max_attempts, 20);
  EXPECT_EQ(b.pruning_rounds, 2);
  EXPECT_TRUE(e.target.stop_when_reached);  // every attempt stops at the target
  json inf = bso_experiment();
  inf["batch_size_optimizer"]["beta"] = "inf";
  EXPECT_TRUE(std::isinf(parse(inf).batch_size_optimizer.beta));
  // Off by default, and then nothing changes: the grid's keys stay as they were.
  const Experiment plain = parse(minimal_experiment());
  EXPECT_FALSE(plain.batch_size_optimizer.enabled);
  EXPECT_FALSE(expand_grid(plain).front().spec.contains("recurrence"));
  EXPECT_FALSE(expand_grid(plain).front().spec.contains("batch_size_optimizer"));
}

TEST(Experiment, ARecurrenceTrialIsKeyedByItsChoice) {
  const Experiment e = parse(bso_experiment());
  RecurrenceAttempt a;
  a.plan.recurrence = 2;
  a.plan.attempt = 1;
  a.plan.batch_size = 128;
  a.plan.stage = "thompson";
  a.plan.cost_bound_j = 1000;
  a.eta = 0.5;
  a.max_power_w = 100;
  const TrialSpec t = recurrence_trial(e, a, 7, "fp");
  EXPECT_EQ(t.batch_size(), 128);
  EXPECT_EQ(t.grid_index, 7);
  EXPECT_EQ(t.epochs(), 20);
  EXPECT_EQ(t.config.seed, e.base.seed + 7);  // each attempt a training run of its own
  EXPECT_EQ(t.spec["recurrence"]["recurrence"], 2);
  EXPECT_EQ(t.spec["recurrence"]["cost_bound_j"], 1000.0);
  EXPECT_EQ(t.spec["batch_size_optimizer"]["batch_sizes"], json({128, 256, 512}));
  EXPECT_FALSE(t.spec["batch_size_optimizer"].contains("recurrences"));  // more recurrences resume these
  EXPECT_NE(t.label().find("recurrence 3 attempt 1 (thompson)"), std::string::npos) << t.label();
  // Another choice, another trial; the same choice, the same key.
  RecurrenceAttempt b = a;
  b.plan.cost_bound_j = 999;
  EXPECT_NE(recurrence_trial(e, b, 7, "fp").key, t.key);
  EXPECT_EQ(recurrence_trial(e, a, 7, "fp").key, t.key);
  json more = bso_experiment();
  more["batch_size_optimizer"]["recurrences"] = 50;
  EXPECT_EQ(recurrence_trial(parse(more), a, 7, "fp").key, t.key);
  // A kept just-in-time limit is the trial's power limit.
  a.plan.power_limit_w = 200;
  EXPECT_EQ(*recurrence_trial(e, a, 7, "fp").power_limit_w, 200);
}

TEST(Experiment, TheBatchSizeOptimiserRefusesAGridItCannotRun) {
  auto bad = [](const std::function<void(json&)>& edit, const std::string& fragment) {
    json j = bso_experiment();
    edit(j);
    expect_input_error([&] { parse(j); }, fragment);
  };
  bad([](json& j) { j["batch_size_optimizer"].erase("default_batch_size"); }, "needs the job's default batch size");
  bad([](json& j) { j["batch_size_optimizer"]["default_batch_size"] = 64; }, "default_batch_size 64 is not in /sweep/batch_size");
  bad([](json& j) { j.erase("target"); }, "the recurrences need a target");
  bad([](json& j) { j["target"]["stop_when_reached"] = false; }, "/target/stop_when_reached is false");
  bad([](json& j) { j["sweep"]["precision"] = {"fp32", "fp64"}; }, "lists several precisions");
  bad([](json& j) { j["sweep"]["epochs"] = {10, 20}; }, "lists several precisions, engines or epoch counts");
  bad([](json& j) { j["sweep"]["repeats"] = 2; }, "/sweep/repeats is 2");
  bad([](json& j) { j["sweep"]["batch_size"] = {128, 256, 256}; }, "already listed");  // each batch size one arm
  bad([](json& j) { j["sweep"]["warmup_trials"] = 1; }, "warmup_trials");
  bad([](json& j) { j["sweep"]["order"] = "shuffled"; }, "/sweep/order is shuffled");
  bad([](json& j) { j["energy"] = {{"enabled", false}}; }, "/energy/enabled is false");
  bad([](json& j) { j["batch_size_optimizer"]["beta"] = 1; }, "/batch_size_optimizer/beta");
  bad([](json& j) { j["batch_size_optimizer"]["beta"] = "never"; }, "must be a number above 1 or \"inf\"");
  bad([](json& j) { j["batch_size_optimizer"]["eta"] = 2; }, "/batch_size_optimizer/eta");
  bad([](json& j) { j["batch_size_optimizer"]["seeds"] = 2; }, "/batch_size_optimizer/seeds: unknown key");
  bad([](json& j) {
        j["allow_power_limit_changes"] = true;
        j["sweep"]["power_limit_w"] = {200};
      },
      "/sweep/power_limit_w lists limits");
}

json experiment_named(const json& name) {
  json j = json::parse(R"({"schema_version": 1,
    "dataset": {"generator": {"kind": "cms", "rows": 1000}}, "model": {"name": "AE", "compression_ratio": 1.6},
    "sweep": {"batch_size": [256], "precision": ["fp32"], "epochs": [2], "repeats": 1}})");
  if (!name.is_null()) j["name"] = name;
  return j;
}

// The name becomes part of report's file names: one that is not a file name is refused with a hint.
TEST(ExperimentName, NamesThatAreNotFileNamesAreRefused) {
  const auto bad = [](const json& name, const std::string& fragment) {
    expect_input_error([&] { parse_experiment(experiment_named(name), "exp.json", "/tmp"); }, "/name: ");
    expect_input_error([&] { parse_experiment(experiment_named(name), "exp.json", "/tmp"); }, fragment);
  };
  bad("", "is empty");
  bad("../../escaped", "starts with '.'");
  bad(".hidden", "starts with '.'");
  bad("a/b", "holds '/'");
  bad("a\\b", "holds '\\'");
  bad(std::string("a\0b", 3), "holds a control character");
  bad("tab\there", "holds a control character");
  bad(std::string(121, 'x'), "is longer than 120 bytes");
  // Characters that hide or reorder the name where it is shown (tables, pages, file names): a
  // bidirectional override, a C1 control, a line separator.
  bad("report\xE2\x80\xAE" "fdp.exe", "holds a bidirectional control (U+202E) at byte 6");
  bad("a\xC2\x85" "b", "holds a control character (U+0085) at byte 1");
  bad("a\xE2\x80\xA8" "b", "holds a line separator (U+2028) at byte 1");
  expect_input_error([&] { parse_experiment(experiment_named(""), "exp.json", "/tmp"); }, "hint: ");
  // Accepted: a name of 120 bytes, spaces, UTF-8 (report reduces them to safe file names).
  EXPECT_EQ(parse_experiment(experiment_named(std::string(120, 'x')), "exp.json", "/tmp").name, std::string(120, 'x'));
  EXPECT_EQ(parse_experiment(experiment_named("my sweep \xc3\xa9"), "exp.json", "/tmp").name, "my sweep \xc3\xa9");
  // Without "name", the file's name, checked the same way.
  EXPECT_EQ(parse_experiment(experiment_named(nullptr), "dir/cpu_sweep.json", "/tmp").name, "cpu_sweep");
  expect_input_error([&] { parse_experiment(experiment_named(nullptr), "dir/.x.json", "/tmp"); },
                     "(the file's name, as there is no \"name\") starts with '.'");
}

}  // namespace
}  // namespace balerbench
