// test_gpu_protocol_cli.cpp: a published GPU comparison's protocol end to end (issue 39), through the
// fake NVML library: MaxPower read from the GPU on a sweep without a power-limit axis and the cost
// table filled from it; the thermal protocol waiting for a GPU whose temperature falls, recording the
// wait, and flagging trials that throttled, started hot, or had no temperature to wait on; an energy
// counter that steps back; the convergence table and --min-effect from the command line; and doctor's
// check of the power reading against the energy counter.
#include <gtest/gtest.h>

#include <string>

#include "harness/store/store.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

using nlohmann::json;

class GpuProtocolCli : public ::testing::Test {
 protected:
  // A fake H200 (700 W maximum limit) with `extra` device keys; the environment that loads it.
  std::string fake_gpu(const json& extra = json::object()) {
    json gpu = {{"name", "Fake H200"}, {"uuid", "GPU-bbbb"}, {"power_w", 250}, {"update_period_s", 0.1},
                {"power_limit_w", 700}, {"default_limit_w", 700}, {"min_limit_w", 200}, {"max_limit_w", 700},
                {"temperature_c", 40}, {"throttle_reasons", 1}};
    gpu.update(extra);
    write_text(dir_.path("nvml.json"), json{{"driver_version", "580.00"}, {"devices", {gpu}}}.dump());
    return "BALERBENCH_NVML_LIB=" + std::string(FAKE_NVML_LIB) + " FAKE_NVML_CONFIG=" + dir_.path("nvml.json") +
           " FAKE_NVML_SET_LOG=" + dir_.path("sets.log");
  }
  // fp32 and fp64, two repeats, no power-limit axis, no cost.max_power_w; NVML's meter on the fake GPU.
  std::string experiment(const json& energy_extra = json::object()) {
    json e = json::parse(R"({
      "schema_version": 1, "name": "gpu",
      "dataset": {"generator": {"kind": "cms", "rows": 2000, "seed": 1}},
      "model": {"name": "AE", "compression_ratio": 1.6},
      "training": {"test_size": 0.2},
      "sweep": {"batch_size": [256], "precision": ["fp32", "fp64"], "epochs": [3], "repeats": 2},
      "target": {"relative_error": 0.9},
      "energy": {"meters": ["nvml", "cpu_estimate"], "sample_hz": 20, "cpu_tdp_w": 100},
      "cost": {"eta": [0, 0.5, 1]}
    })");
    e["energy"].update(energy_extra);
    write_text(dir_.path("exp.json"), e.dump(2));
    return dir_.path("exp.json");
  }
  CommandResult bb(const std::string& args, const std::string& env = "") {
    return run_command("cd " + dir_.root() + " && " + env + " " + balerbench_binary() + " " + args);
  }
  std::vector<TrialRecord> trials() { return Store(dir_.path("db.sqlite"), StoreAccess::kReadOnly).trials("gpu"); }
  TempDir dir_;
};

// The issue's H200 and H100 sweeps printed "none" for every eta: MaxPower was read only with a
// power-limit axis. Now every trial reads it from the GPU, read only, and the cost table says so.
TEST_F(GpuProtocolCli, MaxPowerComesFromTheGpuWithoutAPowerLimitAxis) {
  const std::string env = fake_gpu();
  const auto r = bb("run " + experiment() + " --db db.sqlite --progress none --tables none", env);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(read_lines(dir_.path("sets.log")).empty());  // nothing was set
  for (const TrialRecord& t : trials()) {
    ASSERT_TRUE(t.max_power_w) << t.key;
    EXPECT_EQ(*t.max_power_w, 700);
    EXPECT_EQ(t.result["max_power"]["source"], "gpu_max_limit");
    EXPECT_EQ(t.result["gpu_limits"][0]["max_limit_w"], 700);
    EXPECT_EQ(t.result["gpu_limits"][0]["enforced_limit_w"], 700);
  }
  const auto cost = bb("report --db db.sqlite --table cost --format csv --experiment gpu");
  ASSERT_EQ(cost.exit_code, 0) << cost.out;
  EXPECT_EQ(cost.out.find("none (no configuration"), std::string::npos) << cost.out;
  EXPECT_NE(cost.out.find("700,the GPU's maximum power limit (NVML)"), std::string::npos) << cost.out;
}

// The GPU cools from 75 C to 45 C over its first 4 s (at 50 C after 3.3 s), then throttles for heat
// from 3.8 s on: the first trial waits until it is at 50 C and records the wait; every trial records
// the GPU at its start, and those that saw hw_thermal_slowdown are disturbed, with the reason.
TEST_F(GpuProtocolCli, TheThermalProtocolWaitsForACoolGpuAndFlagsThrottledTrials) {
  const std::string env = fake_gpu({{"temperature_schedule", {{0, 75}, {4, 45}}},
                                    {"throttle_schedule", {{0, 1}, {3.8, 0x41}}}});
  const auto r = bb("run " +
                        experiment({{"thermal", {{"target_c", 50}, {"max_wait_s", 60}, {"settle_s", 30}, {"poll_s", 0.05}}}}) +
                        " --db db.sqlite --progress none --tables none",
                    env);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::vector<TrialRecord> all = trials();
  ASSERT_EQ(all.size(), 4u);
  const TrialRecord& first = all.front();
  const json& wait = first.result["thermal"]["wait"];
  EXPECT_EQ(wait["ended"], "cool") << wait;
  EXPECT_LE(wait["end_c"].get<double>(), 50);
  EXPECT_GT(wait["start_c"].get<double>(), 50) << wait;  // the sweep holds NVML from its start, 75 C then
  EXPECT_GT(wait["waited_s"].get<double>(), 0);
  EXPECT_EQ(first.spec["thermal"]["target_c"], 50);
  int throttled = 0;
  for (const TrialRecord& t : all) {
    ASSERT_TRUE(t.result["thermal"]["start"].is_array()) << t.result["thermal"];
    EXPECT_TRUE(t.result["thermal"]["start"][0]["temperature_c"].is_number());
    const json& d = t.result["disturbance"]["thermal"];
    const json& train = t.result["thermal"]["windows"]["train"];
    const bool saw = train["throttle_reasons"].dump().find("hw_thermal_slowdown") != std::string::npos;
    EXPECT_EQ(d["disturbed"], saw) << t.result["thermal"];
    if (saw) {
      ++throttled;
      EXPECT_NE(d["reason"].get<std::string>().find("hw_thermal_slowdown"), std::string::npos) << d;
    }
  }
  EXPECT_GT(throttled, 0);  // every trial after the first starts after 3.8 s (each NVML meter probes 0.6 s)
  const auto table = bb("report --db db.sqlite --table trials --wide --experiment gpu");
  ASSERT_EQ(table.exit_code, 0) << table.out;
  EXPECT_NE(table.out.find("started with a hot GPU or throttled for power or temperature"), std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("throttled during train"), std::string::npos) << table.out;
}

// A GPU that stays at 80 C: the wait gives up after its maximum, and the trial starts hot.
TEST_F(GpuProtocolCli, AGpuStillHotAfterTheMaximumWaitStartsItsTrialHot) {
  const std::string env = fake_gpu({{"temperature_c", 80}});
  json thermal = {{"target_c", 50}, {"max_wait_s", 0.2}, {"settle_s", 30}, {"poll_s", 0.05}};
  const auto r = bb("run " + experiment({{"thermal", thermal}}) + " --db db.sqlite --progress none --tables none", env);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  for (const TrialRecord& t : trials()) {
    EXPECT_EQ(t.result["thermal"]["wait"]["ended"], "max_wait");
    const std::string reason = t.result["disturbance"]["thermal"]["reason"].get<std::string>();
    EXPECT_NE(reason.find("started hot: still 80 C after the maximum wait (target 50 C)"), std::string::npos) << reason;
  }
}

// With energy.thermal on, a temperature read that fails (NVML_ERROR_UNKNOWN) is warned about on stderr and
// every trial it could not wait for is flagged, with the reason (was: the wait ended silently and no trial
// was flagged); NVML's 4294967295 sentinel is no temperature either: flagged, never stored as one.
TEST_F(GpuProtocolCli, ATemperatureThatCannotBeReadFlagsTheTrialsItCouldNotWaitFor) {
  const json thermal = {{"target_c", 50}, {"max_wait_s", 5}, {"settle_s", 30}, {"poll_s", 0.05}};
  auto r = bb("run " + experiment({{"thermal", thermal}}) + " --db db.sqlite --progress none --tables none",
              fake_gpu({{"temperature_error", 999}}));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("balerbench: warning: thermal protocol: no GPU temperature to wait on: gpu0's temperature "
                       "cannot be read: Unknown Error (NVML code 999); this trial starts without the wait and is flagged"),
            std::string::npos)
      << r.out;
  for (const TrialRecord& t : trials()) {
    EXPECT_EQ(t.result["thermal"]["wait"]["ended"], "no_temperature") << t.result["thermal"];
    const json& d = t.result["disturbance"]["thermal"];
    EXPECT_EQ(d["disturbed"], true) << d;
    EXPECT_NE(d["reason"].get<std::string>().find("not waited for a cool GPU: no GPU temperature to wait on: gpu0's"),
              std::string::npos)
        << d;
  }
  r = bb("run " + experiment({{"thermal", thermal}}) + " --db sentinel.sqlite --progress none --tables none",
         fake_gpu({{"temperature_c", 4294967295ULL}}));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto sentinel = Store(dir_.path("sentinel.sqlite"), StoreAccess::kReadOnly).trials("gpu");
  ASSERT_EQ(sentinel.size(), 4u);
  for (const TrialRecord& t : sentinel) {
    const json& th = t.result["thermal"];
    EXPECT_TRUE(th["start"][0]["temperature_c"].is_null()) << th;
    EXPECT_TRUE(th["end"][0]["temperature_c"].is_null()) << th;
    EXPECT_EQ(th["windows"].dump().find("4294967295"), std::string::npos) << th;
    EXPECT_NE(t.result["disturbance"]["thermal"]["reason"].get<std::string>().find("NVML gave 4294967295 C, no reading"),
              std::string::npos)
        << t.result["disturbance"];
  }
}

// The GPU's energy counter steps back by 300 J every half second (was: an epoch's cumulative energy fell,
// a trial stored 183 J for about 330 J, and a power sample of -5,568 W was stored, with no flag): every
// fall is a failed read, so the epochs' energy never falls, no power sample is negative, the train
// figure holds what was used less the few sampler intervals that saw a fall, and its window is flagged.
TEST_F(GpuProtocolCli, ACounterThatStepsBackIsFlaggedNeverSummed) {
  json steps = json::array();
  for (int i = 1; i <= 60; ++i) steps.push_back({0.5 * i, -300});
  const std::string env = fake_gpu({{"energy_start_mj", 1000000000}, {"update_period_s", 0}, {"energy_steps", steps}});
  json e = json::parse(read_text(experiment({{"meters", {"nvml"}}})));
  e["dataset"]["generator"]["rows"] = 5000;
  e["sweep"] = {{"batch_size", {512}}, {"precision", {"fp32"}}, {"epochs", {600}}, {"repeats", 1}};
  write_text(dir_.path("exp.json"), e.dump());
  const auto r = bb("run " + dir_.path("exp.json") + " --db db.sqlite --progress none --tables none", env);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("balerbench: warning: nvml: a reading failed"), std::string::npos) << r.out;
  const std::vector<TrialRecord> all = trials();
  ASSERT_EQ(all.size(), 1u);
  const TrialRecord& t = all[0];
  ASSERT_EQ(t.status, TrialStatus::kOk) << t.error;
  ASSERT_GT(*t.train_s, 1.0) << "the training must span a fall of the counter";
  EXPECT_GT(*t.train_energy_j, 0.7 * 250 * *t.train_s);
  EXPECT_LE(*t.train_energy_j, 250 * *t.train_s + 1);
  std::optional<double> last_j;
  for (const EpochRow& row : t.epoch_rows) {
    ASSERT_TRUE(row.energy_j) << row.epoch;
    EXPECT_GE(*row.energy_j, last_j.value_or(0)) << "epoch " << row.epoch;
    last_j = row.energy_j;
  }
  ASSERT_FALSE(t.samples.empty());
  for (const SampleRow& s : t.samples) EXPECT_GE(s.power_w, 0) << s.t_s;
  bool flagged = false;
  for (const auto& p : t.result["energy"]["phases"])
    if (p["phase"] == "train")
      for (const auto& f : p["flags"]) flagged |= f.get<std::string>().find("failed read") != std::string::npos;
  EXPECT_TRUE(flagged) << t.result["energy"]["phases"].dump();
}

// Every energy figure's window counts its meter updates; NVML's 0.1 s counter gives these few-ms
// windows almost none, so the figures are short against the default 60.
TEST_F(GpuProtocolCli, EveryEnergyFigureCountsItsMeterUpdates) {
  const std::string env = fake_gpu();
  ASSERT_EQ(bb("run " + experiment() + " --db db.sqlite --progress none --tables none", env).exit_code, 0);
  for (const TrialRecord& t : trials()) {
    const json& u = t.result["meter_updates"];
    EXPECT_EQ(u["meter"], "nvml") << u;
    EXPECT_EQ(u["min"], 60);
    for (const char* figure : {"train", "compress", "decompress"}) EXPECT_TRUE(u[figure].is_number()) << figure;
    EXPECT_LT(u["train"].get<double>(), 60);
  }
  const auto p = bb("report --db db.sqlite --table precision --experiment gpu");
  EXPECT_NE(p.out.find("energy_window"), std::string::npos) << p.out;  // a short window shows in the terminal
  EXPECT_NE(p.out.find("Short windows: the training energy"), std::string::npos) << p.out;
}

// codec_min_window_s repeats compress and decompress inside their windows; the figures are per pass.
TEST_F(GpuProtocolCli, CodecWindowsAreLengthenedByRepeatingThem) {
  const std::string env = fake_gpu();
  json e = json::parse(read_text(experiment()));
  e["training"]["codec_min_window_s"] = 0.3;
  e["sweep"]["precision"] = {"fp32"};
  e["sweep"]["repeats"] = 1;
  write_text(dir_.path("exp.json"), e.dump());
  ASSERT_EQ(bb("run exp.json --db db.sqlite --progress none --tables none", env).exit_code, 0);
  const TrialRecord t = trials().at(0);
  EXPECT_GT(t.result["codec_passes"]["compress"].get<int64_t>(), 1) << t.result["codec_passes"];
  EXPECT_GT(t.result["codec_passes"]["decompress"].get<int64_t>(), 1);
  EXPECT_GE(t.result["meter_updates"]["compress"].get<double>(), 2) << t.result["meter_updates"];
  ASSERT_TRUE(t.compress_s);
  EXPECT_LT(*t.compress_s, 0.3);  // per pass, not the whole window
}

TEST_F(GpuProtocolCli, ReportMinEffectAndTheConvergenceTableFromTheCommandLine) {
  const std::string env = fake_gpu();
  ASSERT_EQ(bb("run " + experiment() + " --db db.sqlite --progress none --tables none", env).exit_code, 0);
  const auto c = bb("report --db db.sqlite --table convergence --wide --experiment gpu");
  ASSERT_EQ(c.exit_code, 0) << c.out;
  EXPECT_NE(c.out.find("epochs_to_target"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("| baseline |"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("training.seed + r"), std::string::npos) << c.out;
  const auto m = bb("report --db db.sqlite --table precision --min-effect 1000 --experiment gpu");
  EXPECT_EQ(m.exit_code, 2) << m.out;  // out of range: a clear error
  const auto wide = bb("report --db db.sqlite --table precision --min-effect 99 --experiment gpu");
  ASSERT_EQ(wide.exit_code, 0) << wide.out;
  EXPECT_NE(wide.out.find("--min-effect 99%"), std::string::npos) << wide.out;
}

// doctor compares each GPU's power reading with its counter: a reading 1.7x too high (zeus#181) is a
// hazard in the list; a true one is a line under "checked".
TEST_F(GpuProtocolCli, DoctorChecksThePowerReadingAgainstTheCounter) {
  std::string env = fake_gpu({{"power_reading_scale", 1.7}});
  auto r = bb("doctor --json --interval 0.05 --power-check 0.6", env);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("\"gpu_power_reading_mismatch\""), std::string::npos) << r.out;
  env = fake_gpu({{"power_reading", "average_1s"}});
  r = bb("doctor --interval 0.05 --power-check 0.6", env);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.find("disagree"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("gpu0 power reading: 1 s average"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("counter "), std::string::npos) << r.out;
  r = bb("doctor --interval 0.05 --power-check 0", env);  // skipped
  EXPECT_EQ(r.out.find("power reading:"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace balerbench
