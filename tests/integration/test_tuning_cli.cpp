// test_tuning_cli.cpp: choosing batch size and power limit end to end. `balerbench replay` on Zeus's
// published traces (../shared/data/zeus_nsdi23, read where they lie; the tests skip without them) and
// on bad traces written here (exit 2 with the file, the line and a hint); and `balerbench run` with
// the batch-size optimiser: on the CPU with no power limit to choose, and on the fake NVML with the
// power-limit optimiser choosing each batch size's limit just in time.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>

#include "harness/store/store.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

std::string zeus_traces() { return shared_data_dir() + "/zeus_nsdi23"; }

class TuningCli : public ::testing::Test {
 protected:
  CommandResult bb(const std::string& args, const std::string& env = "") {
    return run_command("cd " + dir_.root() + " && " + env + " " + balerbench_binary() + " " + args + " 2>&1");
  }
  // stdout only (the JSON document), stderr dropped.
  json bb_json(const std::string& args) {
    const auto r = run_command("cd " + dir_.root() + " && " + balerbench_binary() + " " + args + " 2>/dev/null");
    EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.out;
    return json::parse(r.out);
  }
  void need_traces() {
    if (!fs::exists(zeus_traces() + "/summary_train.csv")) GTEST_SKIP() << "no Zeus traces at " << zeus_traces();
  }
  TempDir dir_;
};

TEST_F(TuningCli, ReplayHasHelp) {
  const auto r = bb("replay --help");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  for (const char* option : {"--traces", "--workload", "--reproduce", "--interpolate", "--eta", "--beta", "--seed"})
    EXPECT_NE(r.out.find(option), std::string::npos) << option;
  EXPECT_NE(bb("replay").out.find("--workload is required"), std::string::npos);
  EXPECT_EQ(bb("replay").exit_code, 2);
}

// One job of the real traces: what the optimisers chose, what it cost, the default and the best in
// hindsight; the same seed gives the same replay.
TEST_F(TuningCli, ReplayOfZeusTracesSaysWhatWasChosenAndWhatItCost) {
  need_traces();
  const std::string args = "replay --traces " + zeus_traces() + " --gpu v100 --workload cifar100 --format json";
  // By default the summary: the attempts, one row per training run, only named in a note.
  const json brief = bb_json(args);
  ASSERT_EQ(brief["tables"].size(), 2u);
  EXPECT_NE(brief["tables"][0]["notes"].dump().find("--table replay_attempts"), std::string::npos);
  const json doc = bb_json(args + " --table all");
  ASSERT_EQ(doc["tables"].size(), 3u);
  const json& summary = doc["tables"][0];
  EXPECT_EQ(summary["table"], "replay");
  const json& rows = summary["rows"];
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0]["batch_size"], 1024);      // Zeus's default for cifar100
  EXPECT_EQ(rows[0]["power_limit_w"], 250.0);  // the V100's highest limit in the trace
  EXPECT_EQ(rows[0]["figures"], "trace, mean of 10 runs");
  EXPECT_EQ(rows[3]["configuration"], "best in hindsight");
  // The optimisers saved energy against the default over all recurrences, and ended near the best.
  EXPECT_GT(rows[1]["energy_saving_pct"].get<double>(), 30);
  EXPECT_LE(rows[2]["cost_j"].get<double>(), 1.2 * rows[3]["cost_j"].get<double>());
  // 2 x 10 batch sizes x 7 limits recurrences, each with at least one attempt.
  EXPECT_NE(summary["title"].get<std::string>().find("140 recurrences"), std::string::npos);
  EXPECT_GE(doc["tables"][1]["rows"].size(), 140u);
  // The same seed, the same replay; the seed is in the title.
  EXPECT_EQ(bb_json(args + " --table all"), doc);
  EXPECT_NE(bb_json(args + " --seed 2")["tables"][0]["title"], summary["title"]);
  // A GPU the traces do not hold: the ones they do are listed.
  const auto h100 = bb("replay --traces " + zeus_traces() + " --gpu h100 --workload cifar100");
  EXPECT_EQ(h100.exit_code, 2) << h100.out;
  EXPECT_NE(h100.out.find("the traces hold: a40, p100, rtx6000, v100"), std::string::npos) << h100.out;
}

// The power-limit optimiser, fed the rows, picks each batch size's cheapest row on every GPU and
// workload of the traces.
TEST_F(TuningCli, TheJustInTimeLimitIsTheCheapestRowOnEveryRealTrace) {
  need_traces();
  int checked = 0;
  for (const char* gpu : {"v100", "a40", "rtx6000", "p100"})
    for (const char* workload : {"cifar100", "imagenet", "squad", "librispeech", "movielens-1m", "sentiment140"}) {
      const json doc = bb_json("replay --traces " + zeus_traces() + " --gpu " + gpu + " --workload " + workload +
                               " --table replay_power_limits --format json");
      for (const json& row : doc["tables"][0]["rows"]) {
        EXPECT_EQ(row["chosen"], row["cheapest_row"]) << gpu << " " << workload << " " << row.dump();
        ++checked;
      }
    }
  EXPECT_GT(checked, 300);
}

// The reproduction: every workload on every GPU, beside the paper's range.
TEST_F(TuningCli, TheReproductionCoversEveryWorkloadAndGpu) {
  need_traces();
  const json doc = bb_json("replay --traces " + zeus_traces() + " --reproduce --format json");
  ASSERT_EQ(doc["tables"].size(), 2u);
  EXPECT_EQ(doc["tables"][0]["rows"].size(), 24u);  // 6 workloads x 4 GPUs
  const json& ranges = doc["tables"][1]["rows"];
  ASSERT_EQ(ranges.size(), 4u);
  for (const json& r : ranges) EXPECT_EQ(r["paper_energy_saving_pct"], "15.3%-75.8%");
  bool made_by = false;
  for (const json& n : doc["tables"][0]["notes"])
    made_by = made_by || n.get<std::string>().find("made by: balerbench replay --traces") != std::string::npos;
  EXPECT_TRUE(made_by);
  const auto csv = bb("replay --traces " + zeus_traces() + " --reproduce --format csv --table reproduction_ranges");
  EXPECT_EQ(csv.exit_code, 0) << csv.out;
  EXPECT_EQ(csv.out.rfind("gpu,workloads,", 0), 0u) << csv.out;
  const auto all_csv = bb("replay --traces " + zeus_traces() + " --reproduce --format csv");
  EXPECT_EQ(all_csv.exit_code, 0) << all_csv.out;
  EXPECT_EQ(all_csv.out.rfind("# table reproduction: ", 0), 0u) << all_csv.out;
  EXPECT_NE(all_csv.out.find("\n# table reproduction_ranges: "), std::string::npos) << all_csv.out;
}

// Bad traces: refused with the file, the line and a hint (exit 2).
TEST_F(TuningCli, BadTracesAreRefusedWithTheFileTheLineAndAHint) {
  write_text(dir_.path("train.csv"),
             "dataset,network,batch_size,optimizer,learning_rate,run,target_metric,target_epoch\n"
             "toy,net,16,sgd,0.1,1,0.9,4\ntoy,net,32,sgd,0.1,1,0.9,3\n");
  const std::string header = "dataset,network,batch_size,optimizer,power_limit,time_per_epoch,average_power\n";
  auto refused = [&](const std::string& power, const std::string& extra, const std::string& fragment) {
    write_text(dir_.path("power.csv"), power);
    const auto r =
        bb("replay --train train.csv --power power.csv --workload toy --target 0.9 --max-epochs 10 "
           "--default-batch-size 16 " +
           extra);
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_NE(r.out.find(fragment), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("(hint: "), std::string::npos) << r.out;
  };
  refused("dataset,network,batch_size,optimizer,power_limit,time_per_epoch\ntoy,net,16,sgd,300,10\n", "",
          "power.csv:1: no column 'average_power'");
  refused(header + "toy,net,16,sgd,300,10,250\ntoy,net,32,sgd,300,nan,250\n", "", "power.csv:3: time_per_epoch: NaN");
  refused(header + "toy,net,16,sgd,300,10,250\n", "--batch-sizes 16,32",
          "train.csv:3: batch size 32 (listed) of toy/net/sgd has no power rows in power.csv");
  refused(header + "toy,net,32,sgd,300,10,250\n", "",
          "train.csv:2: batch size 16 (the default) of toy/net/sgd has no power rows");
  refused(header + "toy,net,16,sgd,300,10,250\ntoy,net,32,sgd,300,5,250\n", "--power-limits 300,250",
          "no row at 250 W");
  // Issue 50: hexadecimal is no 16 W, 1e300 W is no measurement.
  refused(header + "toy,net,16,sgd,0x10,10,250\n", "", "power.csv:2: power_limit: '0x10' is not a number");
  refused(header + "toy,net,16,sgd,300,10,1e300\n", "", "power.csv:2: average_power: '1e300' is more than a trace");
  // A good pair replays.
  write_text(dir_.path("power.csv"), header + "toy,net,16,sgd,300,10,250\ntoy,net,32,sgd,300,5,250\n");
  const auto ok =
      bb("replay --train train.csv --power power.csv --workload toy --target 0.9 --max-epochs 10 "
         "--default-batch-size 16 --table replay");
  EXPECT_EQ(ok.exit_code, 0) << ok.out;
  EXPECT_NE(ok.out.find("### Replay of toy/net/sgd on power"), std::string::npos) << ok.out;
  const auto missing = bb("replay --train nothere.csv --power power.csv --workload toy");
  EXPECT_EQ(missing.exit_code, 2) << missing.out;
  // A byte-order mark, as a spreadsheet's "CSV UTF-8" writes it, is read past (was: no column 'dataset').
  write_text(dir_.path("power.csv"), "\xEF\xBB\xBF" + header + "toy,net,16,sgd,300,10,250\ntoy,net,32,sgd,300,5,250\n");
  const auto bom = bb("replay --train train.csv --power power.csv --workload toy --target 0.9 --max-epochs 10 "
                      "--default-batch-size 16 --table replay");
  EXPECT_EQ(bom.exit_code, 0) << bom.out;
}

// --gpu names a file in --traces: a name that leaves the folder is refused before anything is read
// (was: `--gpu x/../../secret` read TRACES/../secret.csv).
TEST_F(TuningCli, AGpuNameNeverReadsOutsideTheTracesFolder) {
  fs::create_directories(dir_.path("traces/x"));
  write_text(dir_.path("traces/summary_train.csv"), "dataset\n");
  write_text(dir_.path("secret.csv"), "dataset,network,batch_size,optimizer,power_limit,time_per_epoch,average_power\n");
  for (const char* gpu : {"x/../../secret", "..", "a\\b"}) {
    const auto r = bb(std::string("replay --traces traces --workload toy --gpu '") + gpu + "'");
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_NE(r.out.find("the name holds '/', '\\' or '..'"), std::string::npos) << r.out;
  }
  const auto gpus = bb("replay --traces traces --reproduce --gpus v100,../secret");
  EXPECT_EQ(gpus.exit_code, 2) << gpus.out;
  EXPECT_NE(gpus.out.find("--gpus '../secret'"), std::string::npos) << gpus.out;
}

json cpu_experiment() {
  return json::parse(R"({
    "schema_version": 1, "name": "bso",
    "dataset": {"generator": {"kind": "cms", "rows": 2000, "seed": 1}},
    "model": {"name": "AE", "compression_ratio": 1.6},
    "training": {"test_size": 0.2, "lr_scaling": "sqrt", "lr_reference_batch_size": 256},
    "sweep": {"batch_size": [128, 256, 512], "precision": ["fp32"], "epochs": [3]},
    "target": {"relative_error": 0.9},
    "energy": {"meters": ["cpu_estimate", "ram_estimate"], "sample_hz": 20, "cpu_tdp_w": 100},
    "cost": {"eta": [0.5], "max_power_w": 100},
    "batch_size_optimizer": {"enabled": true, "default_batch_size": 256, "recurrences": 4, "seed": 3}
  })");
}

// On the CPU: no power limit to choose, the recurrences run, each attempt records its choice, its
// seed and its cost, a second run resumes them all, and the report lists them.
TEST_F(TuningCli, RecurrencesRunOnTheCpuWithNoPowerLimitAndResume) {
  write_text(dir_.path("bso.json"), cpu_experiment().dump(2));
  const std::string env = "BALERBENCH_NVML_LIB=/nonexistent/libnvidia-ml.so.1";
  const auto r = bb("run bso.json --db db.sqlite --progress none --tables recurrences", env);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("power limit: none"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("recurrences: 4 of 4 done"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("### The recurrences under the batch-size optimiser"), std::string::npos) << r.out;
  const auto trials = Store(dir_.path("db.sqlite"), StoreAccess::kReadOnly).trials("bso");
  ASSERT_GE(trials.size(), 4u);
  std::map<int64_t, int> per_recurrence;
  for (const TrialRecord& t : trials) {
    ASSERT_EQ(t.status, TrialStatus::kOk) << t.error;
    const json& plan = t.spec["recurrence"];
    EXPECT_EQ(plan["batch_size"], t.batch_size);
    EXPECT_EQ(t.spec["batch_size_optimizer"]["seed"], 3);
    EXPECT_TRUE(t.spec["power_limit_w"].is_null());
    EXPECT_FALSE(plan["profile_power_limit"].get<bool>());  // no power limit to choose
    EXPECT_TRUE(t.result["recurrence"]["cost_j"].is_number());
    // The learning rate scaled by the batch size, recorded in the spec.
    const double lr = t.spec["run_config"]["lr"].get<double>();
    EXPECT_NEAR(t.spec["run_config"]["effective_lr"].get<double>(), lr * std::sqrt(t.batch_size / 256.0), 1e-12);
    ++per_recurrence[plan["recurrence"].get<int64_t>()];
  }
  EXPECT_EQ(per_recurrence.size(), 4u);
  // The first recurrence is the default batch size.
  for (const TrialRecord& t : trials)
    if (t.grid_index == 0) EXPECT_EQ(t.batch_size, 256);
  const auto again = bb("run bso.json --db db.sqlite --progress none --tables none", env);
  ASSERT_EQ(again.exit_code, 0) << again.out;
  EXPECT_NE(again.out.find("done: 0 ran"), std::string::npos) << again.out;
  EXPECT_EQ(Store(dir_.path("db.sqlite"), StoreAccess::kReadOnly).trials("bso").size(), trials.size());
  const json report = bb_json("report --db db.sqlite --table recurrences --format json");
  EXPECT_EQ(report["tables"][0]["rows"].size(), trials.size());
  // --shard is refused: each attempt depends on the ones before it.
  const auto shard = bb("run bso.json --db db.sqlite --shard 0/2 --progress none", env);
  EXPECT_EQ(shard.exit_code, 2) << shard.out;
  EXPECT_NE(shard.out.find("run one after another"), std::string::npos) << shard.out;
}

// On the fake NVML: the first attempt at each batch size profiles the limits with the power-limit
// optimiser, and later attempts at it run at the limit it chose; every limit is restored.
TEST_F(TuningCli, RecurrencesChooseEachBatchSizesPowerLimitJustInTimeOnTheFakeNvml) {
  write_text(dir_.path("nvml.json"),
             R"({"driver_version": "550.00", "devices": [{"name": "Fake H100", "uuid": "GPU-aaaa",
                 "power_w": 200, "power_limit_w": 300, "default_limit_w": 300, "min_limit_w": 100,
                 "max_limit_w": 300}]})");
  const std::string env =
      "BALERBENCH_NVML_LIB=" + std::string(FAKE_NVML_LIB) + " FAKE_NVML_CONFIG=" + dir_.path("nvml.json") +
      " FAKE_NVML_SET_LOG=" + dir_.path("sets.log") + " FAKE_NVML_STATE=" + dir_.path("state.json") +
      " BALERBENCH_POWER_JOURNAL=" + dir_.path("journal.json");
  json j = cpu_experiment();
  j["dataset"]["generator"]["rows"] = 4000;
  j["training"].erase("lr_scaling");
  j["training"].erase("lr_reference_batch_size");
  j["sweep"]["batch_size"] = {128, 256};
  j["batch_size_optimizer"]["default_batch_size"] = 128;
  j["batch_size_optimizer"]["recurrences"] = 5;
  j["energy"] = {{"meters", {"nvml"}}};
  j.erase("cost");
  j["allow_power_limit_changes"] = true;
  j["power_limit_optimizer"] = {
      {"enabled", true}, {"wait_steps", 0}, {"warmup_steps", 0}, {"profile_steps", 1}, {"pl_step_w", 100}};
  write_text(dir_.path("bso.json"), j.dump(2));
  const auto r = bb("run bso.json --db db.sqlite --progress none --tables recurrences", env);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("profiling 3 limits (100 to 300 W)"), std::string::npos) << r.out;
  const auto trials = Store(dir_.path("db.sqlite"), StoreAccess::kReadOnly).trials("bso");
  std::map<int64_t, double> chosen;  // batch size -> the limit its profiling attempt chose
  std::vector<const TrialRecord*> ordered;
  for (const TrialRecord& t : trials) ordered.push_back(&t);
  std::sort(ordered.begin(), ordered.end(), [](auto* a, auto* b) { return a->grid_index < b->grid_index; });
  int kept = 0;
  for (const TrialRecord* t : ordered) {
    ASSERT_EQ(t->status, TrialStatus::kOk) << t->error;
    const json& plan = t->spec["recurrence"];
    if (!chosen.count(t->batch_size)) {
      EXPECT_TRUE(plan["profile_power_limit"].get<bool>()) << t->grid_index;
      EXPECT_EQ(t->result["power_limit_optimizer"]["state"], "done") << t->result.dump();
      ASSERT_TRUE(t->result["recurrence"]["power_limit_chosen_w"].is_number());
      chosen[t->batch_size] = t->result["recurrence"]["power_limit_chosen_w"].get<double>();
    } else {
      EXPECT_FALSE(plan["profile_power_limit"].get<bool>());
      EXPECT_EQ(t->spec["power_limit_w"], chosen.at(t->batch_size));
      EXPECT_FALSE(t->result.contains("power_limit_optimizer"));
      EXPECT_DOUBLE_EQ(*t->enforced_power_limit_w, chosen.at(t->batch_size));
      ++kept;
    }
    EXPECT_DOUBLE_EQ(*t->max_power_w, 300);
    EXPECT_EQ(t->result["recurrence"]["max_power_w"], 300.0);
  }
  EXPECT_EQ(chosen.size(), 2u);
  EXPECT_GE(kept, 1);
  EXPECT_DOUBLE_EQ(json::parse(read_text(dir_.path("state.json")))["GPU-aaaa"].get<double>(), 300);  // restored
  EXPECT_FALSE(fs::exists(dir_.path("journal.json")));
}

// A GPU that NVML sees, with no power-limit optimiser: no limit to choose (the one in force stays, and
// nothing is set), and the cost's MaxPower is the GPU's largest limit, read from NVML.
TEST_F(TuningCli, RecurrencesOnAGpuWithoutThePowerLimitOptimiserLeaveTheLimitAlone) {
  write_text(dir_.path("nvml.json"),
             R"({"driver_version": "550.00", "devices": [{"name": "Fake H100", "uuid": "GPU-aaaa",
                 "power_w": 200, "power_limit_w": 300, "default_limit_w": 300, "min_limit_w": 100,
                 "max_limit_w": 700}]})");
  const std::string env =
      "BALERBENCH_NVML_LIB=" + std::string(FAKE_NVML_LIB) + " FAKE_NVML_CONFIG=" + dir_.path("nvml.json") +
      " FAKE_NVML_SET_LOG=" + dir_.path("sets.log") + " FAKE_NVML_STATE=" + dir_.path("state.json") +
      " BALERBENCH_POWER_JOURNAL=" + dir_.path("journal.json");
  json j = cpu_experiment();
  j["energy"] = {{"meters", {"nvml"}}};
  j.erase("cost");  // MaxPower from NVML
  j["batch_size_optimizer"]["recurrences"] = 2;
  write_text(dir_.path("bso.json"), j.dump(2));
  const auto r = bb("run bso.json --db db.sqlite --progress none --tables none", env);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("MaxPower 700 W; power limit: none: /power_limit_optimizer is off"), std::string::npos) << r.out;
  for (const TrialRecord& t : Store(dir_.path("db.sqlite"), StoreAccess::kReadOnly).trials("bso")) {
    ASSERT_EQ(t.status, TrialStatus::kOk) << t.error;
    EXPECT_EQ(t.result["recurrence"]["max_power_w"], 700.0);
    EXPECT_FALSE(t.spec["recurrence"]["profile_power_limit"].get<bool>());
  }
  EXPECT_TRUE(read_lines(dir_.path("sets.log")).empty());  // no limit was set
}

TEST_F(TuningCli, ThePowerLimitOptimiserWithoutAGpuIsRefusedBeforeAnythingRuns) {
  json j = cpu_experiment();
  j["allow_power_limit_changes"] = true;
  j["power_limit_optimizer"] = {{"enabled", true}};
  write_text(dir_.path("bso.json"), j.dump(2));
  const auto r =
      bb("run bso.json --db db.sqlite --progress none", "BALERBENCH_NVML_LIB=/nonexistent/libnvidia-ml.so.1");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("NVML can set no GPU's power limit here"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no-power-limit arm"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace balerbench
