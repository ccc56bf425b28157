// test_power_limits_cli.cpp: power limits set, read back and restored through the fake NVML library on
// every exit path (its set log records each call): a lost GPU, no permission, SIGINT, a kill and the
// restart after it, a second run beside a live one, a closed stdout, the simulated GPU, and the
// power-limit optimiser in a real training run.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <thread>

#include "harness/base/processes.h"
#include "harness/store/store.h"
#include "tests/integration/sweep_cli_fixture.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

// The GPU is lost mid-trial while the sweep holds its power limit at 250 W (the original is 300 W):
// the trial fails naming the GPU, the limit cannot be put back while the GPU does not answer, so the
// original stays in the journal with a warning, and the sweep goes on. When the GPU answers again,
// the next run puts 300 W back before anything else.
TEST_F(SweepCli, GpuLostWhileItsPowerLimitIsChangedKeepsTheOriginalUntilItCanBeRestored) {
  json j = long_experiment();
  j["sweep"] = {{"batch_size", {512}}, {"precision", {"fp32"}}, {"power_limit_w", {250, 200}}, {"epochs", {600}}};
  j["energy"] = {{"meters", {"nvml"}}, {"sample_hz", 20}};
  j["allow_power_limit_changes"] = true;
  const std::string exp = write_experiment(j);
  auto r = bb("run " + exp + " --db db.sqlite --progress none --tables none 2>&1",
              fake_nvml_env(", \"energy_counter\": true, \"lost_after_s\": 2"));
  EXPECT_EQ(r.exit_code, 3) << r.out;
  EXPECT_NE(r.out.find("gpu0 (Fake H100, GPU-aaaa) is lost (NVML_ERROR_GPU_IS_LOST)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the original stays in the power-limit journal"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("done: 2 ran (0 ok, 2 failed"), std::string::npos) << r.out;
  EXPECT_EQ(sets(), std::vector<std::string>{"GPU-aaaa 250000 0"});  // nothing could be set after the loss
  EXPECT_DOUBLE_EQ(state_limit_w(), 250);
  ASSERT_TRUE(fs::exists(dir_.path("journal.json")));
  EXPECT_EQ(json::parse(read_text(dir_.path("journal.json")))["gpus"][0]["original_w"], 300.0);
  const auto trials = Store(dir_.path("db.sqlite"), StoreAccess::kReadOnly).trials();
  ASSERT_EQ(trials.size(), 2u);
  EXPECT_EQ(trials[0].status, TrialStatus::kFailed);
  EXPECT_NE(trials[0].error.find("power-limit journal"), std::string::npos) << trials[0].error;
  // The GPU is back (a new process, no loss scripted): the journal is replayed first.
  r = bb("run " + exp + " --db db.sqlite --progress none --tables none", fake_nvml_env());
  EXPECT_NE(r.out.find("from the journal of an earlier run"), std::string::npos) << r.out;
  EXPECT_DOUBLE_EQ(state_limit_w(), 300);
  EXPECT_EQ(sets().at(1), "GPU-aaaa 300000 0");
}

TEST_F(SweepCli, PowerLimitsAreSetReadBackAndRestoredAfterEveryTrial) {
  json j = tiny_experiment();
  j["sweep"] = {
      {"batch_size", {512}}, {"precision", {"fp32"}}, {"power_limit_w", {250, nullptr, 200}}, {"epochs", {2}}};
  j["energy"] = {{"meters", {"nvml"}}, {"sample_hz", 20}};
  j["allow_power_limit_changes"] = true;
  j["cost"] = {{"eta", {0.5}}};  // MaxPower from the GPU's maximum limit
  const std::string exp = write_experiment(j);
  auto r = bb("run " + exp + " --db db.sqlite --progress none --tables power_limit", fake_nvml_env());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(sets(), (std::vector<std::string>{"GPU-aaaa 250000 0", "GPU-aaaa 300000 0", "GPU-aaaa 200000 0",
                                              "GPU-aaaa 300000 0"}));
  EXPECT_DOUBLE_EQ(state_limit_w(), 300);
  EXPECT_FALSE(fs::exists(dir_.path("journal.json")));
  const auto trials = Store(dir_.path("db.sqlite"), StoreAccess::kReadOnly).trials();
  ASSERT_EQ(trials.size(), 3u);
  EXPECT_DOUBLE_EQ(*trials[0].enforced_power_limit_w, 250);
  EXPECT_FALSE(trials[1].enforced_power_limit_w.has_value());  // null: left as it was
  EXPECT_DOUBLE_EQ(*trials[2].enforced_power_limit_w, 200);
  EXPECT_DOUBLE_EQ(*trials[0].max_power_w, 300);
  EXPECT_EQ(trials[0].result["power_limits"][0]["restored_w"], 300.0);
  EXPECT_EQ(trials[0].provenance["gpus"][0]["uuid"], "GPU-aaaa");
  EXPECT_EQ(trials[0].provenance["nvidia_driver"], "550.00");
  EXPECT_EQ(trials[0].energy_kind, "measured");
  // A measured meter: every epoch's cumulative energy is stored with its ±, and each phase's memory.
  for (const auto& e : trials[0].epoch_rows) {
    ASSERT_TRUE(e.energy_pm_j) << "epoch " << e.epoch;
    EXPECT_GT(*e.energy_pm_j, 0.0);
  }
  EXPECT_GT(trials[0].result["memory"]["train"]["host_peak_rss_mib"].get<double>(), 1.0);
  for (const char* phase : {"train", "compress", "decompress"})  // the fake's default 512 MiB in use
    EXPECT_EQ(trials[0].result["memory"][phase]["gpu_memory_used_peak_mib"], 512.0) << phase;
  // T7: the fake driver samples no process, so none of the GPU's energy is the run's, beside its absolute figure.
  const json gpu = trials[0].result["energy"]["total"]["attribution"]["gpu"];
  EXPECT_EQ(gpu["attributable_j"], 0.0) << gpu.dump();
  EXPECT_GT(gpu["energy_j"].get<double>(), 0.0);
  EXPECT_NE(r.out.find("| 250 W |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Fake H100"), std::string::npos) << r.out;  // hardware named
}

TEST_F(SweepCli, WithoutPermissionTrialsAreSkippedWithTheReason) {
  json j = tiny_experiment();
  j["sweep"] = {{"batch_size", {512}}, {"precision", {"fp32"}}, {"power_limit_w", {200}}, {"epochs", {2}}};
  j["energy"] = {{"meters", {"nvml"}}};
  j["allow_power_limit_changes"] = true;
  const std::string exp = write_experiment(j);
  const auto r =
      bb("run " + exp + " --db db.sqlite --progress none --tables none", fake_nvml_env(R"(, "set_error": 4)"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("skipped: GPU GPU-aaaa: no permission"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("root or CAP_SYS_ADMIN"), std::string::npos) << r.out;
  const auto trials = Store(dir_.path("db.sqlite"), StoreAccess::kReadOnly).trials();
  ASSERT_EQ(trials.size(), 1u);
  EXPECT_EQ(trials[0].status, TrialStatus::kSkipped);
  EXPECT_EQ(sets(), (std::vector<std::string>{"GPU-aaaa 200000 4"}));  // refused: the limit never changed
}

TEST_F(SweepCli, SigintRestoresThePowerLimitAtOnce) {
  json j = long_experiment();
  j["sweep"]["epochs"] = {600};
  j["sweep"]["power_limit_w"] = {150};
  j["energy"] = {{"meters", {"nvml"}}};
  j["allow_power_limit_changes"] = true;
  const std::string exp = write_experiment(j);
  const std::string log = dir_.path("run.log");
  const long pid = start_background("run " + exp + " --db db.sqlite --progress lines", fake_nvml_env(), log);
  ASSERT_TRUE(wait_for(log, "Epoch", 60)) << read_text(log);
  EXPECT_DOUBLE_EQ(state_limit_w(), 150);
  ASSERT_EQ(::kill(pid, SIGINT), 0);
  EXPECT_EQ(wait_exit(30), 130) << read_text(log);
  EXPECT_DOUBLE_EQ(state_limit_w(), 300);
  EXPECT_NE(read_text(log).find("restored to 300 W (enforced 300 W) on the signal"), std::string::npos)
      << read_text(log);
  EXPECT_EQ(sets(), (std::vector<std::string>{"GPU-aaaa 150000 0", "GPU-aaaa 300000 0"}));
  EXPECT_FALSE(fs::exists(dir_.path("journal.json")));
}

TEST_F(SweepCli, KillMidTrialThenRestartRecoversTheOriginalLimit) {
  json j = long_experiment();
  j["sweep"]["epochs"] = {600};
  j["sweep"]["power_limit_w"] = {175};
  j["energy"] = {{"meters", {"nvml"}}};
  j["allow_power_limit_changes"] = true;
  const std::string exp = write_experiment(j);
  const std::string log = dir_.path("run.log");
  const std::string env = fake_nvml_env();
  const long pid = start_background("run " + exp + " --db db.sqlite --progress lines", env, log);
  ASSERT_TRUE(wait_for(log, "Epoch", 60)) << read_text(log);
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  EXPECT_EQ(wait_exit(30), 137);
  EXPECT_DOUBLE_EQ(state_limit_w(), 175);  // nobody could restore it
  ASSERT_TRUE(fs::exists(dir_.path("journal.json")));
  // The restart (any experiment) restores the limit from the journal before anything else.
  const std::string quick = write_experiment(tiny_experiment(), "quick.json");
  const auto r = bb("run " + quick + " --db other.sqlite --progress none --tables none", env);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("restored to 300 W (enforced 300 W) from the journal of an earlier run"), std::string::npos)
      << r.out;
  EXPECT_DOUBLE_EQ(state_limit_w(), 300);
  EXPECT_FALSE(fs::exists(dir_.path("journal.json")));
  EXPECT_EQ(sets(), (std::vector<std::string>{"GPU-aaaa 175000 0", "GPU-aaaa 300000 0"}));
}

TEST_F(SweepCli, SimulatedGpuPowerLimitSweepIsMarkedSimulated) {
  json j = tiny_experiment();
  j["sweep"] = {{"batch_size", {512}}, {"precision", {"fp32"}}, {"power_limit_w", {300, 150}}, {"epochs", {2}}};
  j["energy"] = {{"meters", {"simulated_gpu"}}, {"simulated_gpu", {{"load", 1.0}}}};
  j["allow_power_limit_changes"] = true;
  j["cost"] = {{"eta", {0.5}}};
  const std::string exp = write_experiment(j);
  const auto r = bb("run " + exp + " --db db.sqlite --progress none --tables power_limit",
                    "BALERBENCH_NVML_LIB=/nonexistent/libnvidia-ml.so.1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto trials = Store(dir_.path("db.sqlite"), StoreAccess::kReadOnly).trials();
  ASSERT_EQ(trials.size(), 2u);
  EXPECT_EQ(trials[0].energy_kind, "simulated");
  EXPECT_DOUBLE_EQ(*trials[1].enforced_power_limit_w, 150);
  EXPECT_DOUBLE_EQ(*trials[0].max_power_w, 300);  // the simulated GPU's maximum limit
  // At load 1 the simulated GPU draws 300 W uncapped and 150 W at the 150 W cap.
  const double p300 = *trials[0].train_energy_j / *trials[0].train_s;
  const double p150 = *trials[1].train_energy_j / *trials[1].train_s;
  EXPECT_NEAR(p300, 300, 3);
  EXPECT_NEAR(p150, 150, 2);
  EXPECT_NE(r.out.find("| simulated |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(SIMULATED)"), std::string::npos) << r.out;
}

TEST_F(SweepCli, OptimizerProfilesLimitsInsideOneTrainingRun) {
  json j = tiny_experiment();
  j["dataset"]["generator"]["rows"] = 5000;
  j["sweep"] = {{"batch_size", {512}}, {"precision", {"fp32"}}, {"epochs", {4}}};
  j["energy"] = {{"meters", {"nvml"}}};
  j["allow_power_limit_changes"] = true;
  j["power_limit_optimizer"] = {
      {"enabled", true}, {"wait_steps", 1}, {"warmup_steps", 2}, {"profile_steps", 3}, {"pl_step_w", 100}};
  const std::string exp = write_experiment(j);
  const auto r = bb("run " + exp + " --db db.sqlite --progress none --tables none", fake_nvml_env());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto trials = Store(dir_.path("db.sqlite"), StoreAccess::kReadOnly).trials();
  ASSERT_EQ(trials.size(), 1u);
  ASSERT_EQ(trials[0].status, TrialStatus::kOk) << trials[0].error;
  const json& o = trials[0].result["power_limit_optimizer"];
  EXPECT_EQ(o["state"], "done") << o.dump();
  EXPECT_EQ(o["profiles"].size(), 3u);  // 300, 200, 100 W
  EXPECT_TRUE(o["chosen_w"].is_number());
  EXPECT_DOUBLE_EQ(state_limit_w(), 300);  // restored after the trial
  const auto s = sets();
  ASSERT_GE(s.size(), 4u);
  EXPECT_EQ(s.front(), "GPU-aaaa 300000 0");
  EXPECT_EQ(s.back(), "GPU-aaaa 300000 0");
}

// Run A sweeps at 150 W. A second run with the same journal that would set limits is refused (exit code
// 2) naming A, and one that sets none leaves A's limit and journal alone (was: "restored to 300 W ...
// from the journal of an earlier run" mid-trial, and A recorded 150 W for a trial run at 300 W); a
// journal whose writer still runs, lock free or not, is never restored either. A, stopped, restores
// its own.
TEST_F(SweepCli, ASecondRunNeverTouchesTheLimitsOfALiveRun) {
  json j = long_experiment();
  j["sweep"]["epochs"] = {600};
  j["sweep"]["power_limit_w"] = {150};
  j["energy"] = {{"meters", {"nvml"}}};
  j["allow_power_limit_changes"] = true;
  const std::string env = fake_nvml_env();
  const std::string log = dir_.path("a.log");
  const long pid = start_background("run " + write_experiment(j) + " --db a.sqlite --progress lines", env, log);
  ASSERT_TRUE(wait_for(log, "Epoch", 60)) << read_text(log);
  EXPECT_DOUBLE_EQ(state_limit_w(), 150);
  json b = tiny_experiment();
  b["sweep"] = {{"batch_size", {512}}, {"precision", {"fp32"}}, {"power_limit_w", {250}}, {"epochs", {2}}};
  b["energy"] = {{"meters", {"nvml"}}};
  b["allow_power_limit_changes"] = true;
  auto r = bb("run " + write_experiment(b, "b.json") + " --db b.sqlite --progress none --tables none", env);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("balerbench: error: the GPUs' power limits are held by another balerbench run (pid " +
                       std::to_string(pid) + " on "),
            std::string::npos)
      << r.out;
  b.erase("allow_power_limit_changes");
  b["sweep"].erase("power_limit_w");
  r = bb("run " + write_experiment(b, "c.json") + " --db c.sqlite --progress none --tables none", env);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("power limits: held by another balerbench run (pid " + std::to_string(pid)), std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("restored to"), std::string::npos) << r.out;
  EXPECT_DOUBLE_EQ(state_limit_w(), 150);
  EXPECT_EQ(sets(), std::vector<std::string>{"GPU-aaaa 150000 0"});
  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  EXPECT_EQ(wait_exit(30), 143) << read_text(log);
  EXPECT_DOUBLE_EQ(state_limit_w(), 300);
  // A journal whose writer runs (this test's process) with its lock free: not restored either.
  const ProcessIdentity me = this_process();
  write_text(dir_.path("journal.json"),
             json{{"pid", me.pid}, {"host", me.host}, {"boot_id", me.boot_id}, {"start_ticks", me.start_ticks},
                  {"gpus", {{{"uuid", "GPU-aaaa"}, {"original_w", 200}}}}}
                 .dump());
  r = bb("run " + dir_.path("c.json") + " --db c.sqlite --progress none --tables none", env);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("belongs to a run that still runs (pid " + std::to_string(me.pid)), std::string::npos) << r.out;
  EXPECT_DOUBLE_EQ(state_limit_w(), 300);
  EXPECT_TRUE(fs::exists(dir_.path("journal.json")));
}

// `run ... --progress lines | head`: the reader ends mid-trial while the GPU is at the trial's 150 W.
// The sweep stops as on SIGTERM, with the limit restored and the claim given back, and exits 4 (a write
// error), saying why on stderr (was: killed by SIGPIPE, exit 141, the GPU left at 150 W).
TEST_F(SweepCli, AClosedStdoutStopsAPowerLimitSweepWithTheLimitRestored) {
  json j = long_experiment();
  j["sweep"]["epochs"] = {600};
  j["sweep"]["power_limit_w"] = {150};
  j["energy"] = {{"meters", {"nvml"}}};
  j["allow_power_limit_changes"] = true;
  const std::string exp = write_experiment(j);
  // The reader prints up to the first epoch line, then exits (as `head -6` does on the issue's plan).
  const auto r = run_command("cd " + dir_.root() + " && (" + fake_nvml_env() + " " + balerbench_binary() + " run " +
                             exp + " --db db.sqlite --progress lines --tables none 2> err.log; echo $? > rc) | " +
                             "sed '/Epoch/q'");
  EXPECT_NE(r.out.find("Epoch"), std::string::npos) << r.out;
  EXPECT_EQ(read_text(dir_.path("rc")), "4\n") << read_text(dir_.path("err.log"));
  const std::string err = read_text(dir_.path("err.log"));
  EXPECT_NE(err.find("stdout was closed (its reader ended, as `| head` does): stopping after restoring power limits"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("restored to 300 W (enforced 300 W) on the signal"), std::string::npos) << err;
  EXPECT_NE(err.find("balerbench: error: could not write the output to stdout: its reader closed the pipe (Broken "
                     "pipe) (hint: read the whole output, or send it to a file)"),
            std::string::npos)
      << err;
  EXPECT_DOUBLE_EQ(state_limit_w(), 300);
  EXPECT_EQ(sets(), (std::vector<std::string>{"GPU-aaaa 150000 0", "GPU-aaaa 300000 0"}));
  EXPECT_FALSE(fs::exists(dir_.path("journal.json")));
  const Store store(dir_.path("db.sqlite"), StoreAccess::kReadOnly);
  EXPECT_TRUE(store.claims().empty());
  EXPECT_TRUE(store.trials().empty());  // the trial in flight is not stored, as on a signal
}

}  // namespace
}  // namespace balerbench
