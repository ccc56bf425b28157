// test_energy_cli.cpp: the energy commands end to end: `meters`, `measure`
// (exit codes, signals, the fake NVML and powercap through their environment
// overrides), `wattmeter-energy`, and the phase energies that train,
// compress and decompress store.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "datasets/synthetic.h"
#include "harness/base/clock.h"
#include "tests/fakes/fake_powercap.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class EnergyCli : public ::testing::Test {
 protected:
  CommandResult bb(const std::string& args, const std::string& env = "") {
    return run_command(env + " " + balerbench_binary() + " " + args + " 2>&1");
  }
  // Environment pointing NVML at the fake (one GPU at `power_w`) and powercap at a fake tree.
  std::string fake_env(double power_w) {
    const json nvml = {{"devices", {{{"name", "Fake A100"}, {"uuid", "GPU-1234"}, {"power_w", power_w},
                                     {"energy_counter", true}}}}};
    write_text(dir.path("nvml.json"), nvml.dump());
    FakePowercap pc(dir.path("powercap"));
    pc.add_zone("intel-rapl:0", "package-0", 5000000, 262143328850ULL);
    pc.add_zone("intel-rapl:0:2", "dram", 100, 65712999613ULL);
    return "BALERBENCH_NVML_LIB=" + std::string(FAKE_NVML_LIB) + " FAKE_NVML_CONFIG=" + dir.path("nvml.json") +
           " BALERBENCH_POWERCAP_ROOT=" + dir.path("powercap");
  }
  TempDir dir;
};

TEST_F(EnergyCli, MetersListsEveryMeterWithReasons) {
  const auto r = bb("meters --json --interval 0.05", "BALERBENCH_NVML_LIB=/nonexistent.so BALERBENCH_POWERCAP_ROOT=/nonexistent");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const json j = json::parse(r.out);
  ASSERT_EQ(j["meters"].size(), 6u);
  for (const auto& m : j["meters"]) {
    if (m["available"]) EXPECT_TRUE(m.contains("domains")) << m.dump();
    else EXPECT_FALSE(m["reason"].get<std::string>().empty()) << m.dump();
  }
  EXPECT_EQ(j["meters"][0]["name"], "nvml");
  EXPECT_FALSE(j["meters"][0]["available"]);
  EXPECT_EQ(j["auto"], json({"cpu_estimate", "ram_estimate"}));
}

TEST_F(EnergyCli, MetersWithFakeHardware) {
  const std::string env = fake_env(120);
  const auto r = bb("meters --interval 0.05", env);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("dram-0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("auto uses: nvml, rapl\n"), std::string::npos) << r.out;  // rapl has dram: no ram_estimate
  const json j = json::parse(bb("meters --json --interval 0.05", env).out);
  EXPECT_NEAR(j["meters"][0]["domains"][0]["power_w"].get<double>(), 120.0, 1.2);
  EXPECT_EQ(j["meters"][0]["details"]["gpus"][0]["name"], "Fake A100");
  // Each GPU domain names its GPU, as nvidia-smi does: index and name in the table, UUID in the JSON.
  EXPECT_NE(r.out.find("nvml           measured   available    gpu0 (Fake A100) "), std::string::npos) << r.out;
  EXPECT_EQ(j["meters"][0]["domains"][0]["gpu"], json({{"index", 0}, {"name", "Fake A100"}, {"uuid", "GPU-1234"}}));
}

TEST_F(EnergyCli, MeasurePassesTheExitCodeAndReportsFakeGpuEnergy) {
  const std::string js = dir.path("m.json");
  const auto r = bb("measure --hz 20 --json " + js + " -- sh -c 'sleep 1; exit 7'", fake_env(200));
  EXPECT_EQ(r.exit_code, 7) << r.out;
  EXPECT_NE(r.out.find("exit code 7"), std::string::npos) << r.out;
  const json j = json::parse(read_text(js));
  EXPECT_EQ(j["exit_code"], 7);
  const json& t = j["total"];
  EXPECT_GE(t["samples"].get<int>(), 10);
  bool found = false;
  for (const auto& d : t["domains"]) {
    if (d["meter"] != "nvml") continue;
    found = true;
    const double expected = 200.0 * t["duration_s"].get<double>();
    EXPECT_NEAR(d["energy_j"].get<double>(), expected, 0.005 * expected);
    EXPECT_NEAR(d["avg_power_w"].get<double>(), 200.0, 1.0);
  }
  EXPECT_TRUE(found) << j.dump();
  EXPECT_GT(t["co2_g"].get<double>(), 0.0);
}

// The powercap counter becomes unreadable mid-run (here the measured command itself puts a folder
// where the counter was): balerbench warns at once, keeps going, and flags the window, exit code of
// the command unchanged; the energy is what was counted before the failure, never a silent 0 J.
TEST_F(EnergyCli, PowercapUnreadableMidRunIsWarnedAndFlagged) {
  FakePowercap pc(dir.path("powercap"));
  pc.add_zone("intel-rapl:0", "package-0", 1000000, 262143328850ULL);
  const std::string counter = pc.energy_file("intel-rapl:0");
  const std::string script = "echo 4000000 > " + counter + "; sleep 0.5; rm " + counter + "; mkdir " + counter +
                             "; sleep 0.4";
  const auto r = bb("measure --meters rapl --hz 20 --json " + dir.path("m.json") + " -- sh -c '" + script + "'",
                    "BALERBENCH_POWERCAP_ROOT=" + dir.path("powercap"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("balerbench: warning: rapl: a reading failed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("failed reads of rapl inside"), std::string::npos) << r.out;
  const json j = json::parse(read_text(dir.path("m.json")));
  EXPECT_GE(j["meters"][0]["details"]["read_errors"].get<int>(), 2) << j["meters"].dump();
  const json& phase = j["phases"][0];
  EXPECT_NEAR(phase["domains"][0]["energy_j"].get<double>(), 3.0, 1e-9) << phase.dump();  // counted before
  bool flagged = false;
  for (const auto& f : phase["flags"]) flagged |= f.get<std::string>().find("failed read") != std::string::npos;
  EXPECT_TRUE(flagged) << phase.dump();
}

// The GPU's energy counter steps back by 300 J 1.2 s after NVML's init, while `sleep 2` runs (was: 452 J
// "measured" for about 752 J used, with a ± as if nothing happened): the read that sees it is a failed
// read, said at once, the window is flagged and has no ±, and the total is what was used less the one
// sampler interval that saw the fall.
TEST_F(EnergyCli, ACounterThatStepsBackIsWarnedAndFlaggedNeverSummed) {
  const json nvml = {{"devices", {{{"name", "Fake A100"}, {"uuid", "GPU-1234"}, {"power_w", 250},
                                   {"energy_counter", true}, {"energy_steps", {{1.2, -300}}}}}}};
  write_text(dir.path("nvml.json"), nvml.dump());
  const std::string js = dir.path("m.json");
  const auto r = bb("measure --meters nvml --hz 20 --json " + js + " -- sleep 2",
                    "BALERBENCH_NVML_LIB=" + std::string(FAKE_NVML_LIB) + " FAKE_NVML_CONFIG=" + dir.path("nvml.json"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("balerbench: warning: nvml: a reading failed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("! 1 failed read of nvml inside"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("not quantified: nvml/gpu0 (failed reads inside"), std::string::npos) << r.out;
  const json j = json::parse(read_text(js));
  const json& t = j["total"];
  const double used_j = 250 * t["duration_s"].get<double>();
  EXPECT_LE(t["total_energy_j"].get<double>(), used_j + 1) << t.dump();
  EXPECT_GT(t["total_energy_j"].get<double>(), used_j - 0.5 * 250) << t.dump();
  EXPECT_TRUE(t["total_uncertainty_j"].is_null()) << t.dump();
  EXPECT_EQ(j["meters"][0]["details"]["gpus"][0]["counter_steps_back"], 1) << j["meters"].dump();
}

// A command killed by a signal: the summary names the signal beside the shell's 128+N. A command's
// own exit 2 follows the summary, which balerbench's own errors (also 2) never print; --help says so.
TEST_F(EnergyCli, MeasureNamesTheSignalAndTellsTheCommandsExitCodeFromItsOwn) {
  const std::string js = dir.path("m.json");
  auto r = bb("measure --meters ram_estimate --json " + js + " -- sh -c 'kill -9 $$'");
  EXPECT_EQ(r.exit_code, 137) << r.out;
  EXPECT_NE(r.out.find(", killed by signal 9 (SIGKILL), exit code 137, "), std::string::npos) << r.out;
  EXPECT_EQ(json::parse(read_text(js))["signal"], 9);
  r = bb("measure --meters ram_estimate --json " + js + " -- sh -c 'exit 2'");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find(" balerbench measure: sh -c exit 2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(", exit code 2, "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("balerbench: error:"), std::string::npos) << r.out;
  EXPECT_TRUE(json::parse(read_text(js))["signal"].is_null());
  r = bb("measure --meters no_such_meter -- true");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(r.out.rfind("balerbench: error: ", 0), 0u) << r.out;
  EXPECT_EQ(r.out.find(" balerbench measure:"), std::string::npos) << r.out;
  r = bb("measure --help");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("Exit status: the command's own, passed through"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("'balerbench: error:'"), std::string::npos) << r.out;
}

TEST_F(EnergyCli, MeasureForwardsSigintAndSigterm) {
  for (const auto& [sig, code] : {std::pair<std::string, int>{"INT", 130}, {"TERM", 143}}) {
    // The signal goes to balerbench once its child exists (before that, balerbench has nothing to forward to).
    const std::string line = balerbench_binary() + " measure --meters ram_estimate -- sleep 30 2>&1 & p=$!; " +
                             "while [ -z \"$(cat /proc/$p/task/*/children 2>/dev/null)\" ]; do sleep 0.05; done; " +
                             "kill -" + sig + " $p; wait $p; echo \"status=$?\"";
    const auto r = run_command("sh -c '" + line + "'");
    EXPECT_NE(r.out.find("status=" + std::to_string(code)), std::string::npos) << sig << ": " << r.out;
    EXPECT_NE(r.out.find("exit code " + std::to_string(code)), std::string::npos) << r.out;  // reported, then passed on
  }
}

TEST_F(EnergyCli, MeasureBadInputsExitTwo) {
  auto r = bb("measure -- /nonexistent/program");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("cannot run '/nonexistent/program'"), std::string::npos) << r.out;
  r = bb("measure");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("no command to measure"), std::string::npos) << r.out;
  r = bb("measure --meters nvml -- true", "BALERBENCH_NVML_LIB=/nonexistent.so");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("meter 'nvml' is not available: cannot load"), std::string::npos) << r.out;
  r = bb("measure --country XX -- true");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  // An option's value is named by the option, not by the config key it stands for (/sample_hz).
  r = bb("measure --hz -1 -- true");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("balerbench: error: --hz: must be in [0.0, 1000.0]"), std::string::npos) << r.out;
  r = bb("measure --meters cpu_estimate --pue 0.5 -- true");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("balerbench: error: --pue: "), std::string::npos) << r.out;
  r = bb("measure --prometheus-port 70000 -- true");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("balerbench: error: --prometheus-port: "), std::string::npos) << r.out;
}

TEST_F(EnergyCli, WattmeterEnergyPrintsJoules) {
  std::string log = "#timestamp,#frame_is_ok,#U1,#U2,#U3,#current1,#activepow1\n";
  for (int i = 0; i <= 500; ++i) {
    char line[128];
    std::snprintf(line, sizeof line, "%.6f,%s,230,0,0,0.5,%.1f\n", 1700000000.0 + 0.01 * i,
                  i % 50 == 7 ? "false" : "true", 150.0);
    log += line;
  }
  write_text(dir.path("ow.csv"), log);
  auto r = bb("wattmeter-energy --log " + dir.path("ow.csv") + " --start 1700000001 --end 1700000004");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NEAR(std::stod(r.out.substr(0, r.out.find(' '))), 450.0, 1e-3) << r.out;
  EXPECT_NE(r.out.find("10 bad frames skipped"), std::string::npos) << r.out;
  r = bb("wattmeter-energy --log " + dir.path("ow.csv") + " --start 1600000000 --end 1700000004");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("not inside the logged span"), std::string::npos) << r.out;
}

// T6 with known totals: an OmegaWatt log at 150 W on socket 1 (and 50 W on socket 2), the fake
// powercap's package moved by exactly 100 J by the measured command. The wall is 200 W x the window,
// the components 100 J; measure prints both, their ratio and what the difference stands for.
TEST_F(EnergyCli, MeasureCrossChecksTheWallAgainstComponentMeters) {
  FakePowercap pc(dir.path("powercap"));
  pc.add_zone("intel-rapl:0", "package-0", 1000000, 262143328850ULL);
  std::string log = "#timestamp,#frame_is_ok,#U1,#U2,#U3,#current1,#activepow1,#current2,#activepow2\n";
  const double start = std::floor(unix_now_s()) - 2;
  for (int i = 0; i <= 6000; ++i) {  // 10 ms lines from 2 s ago to 58 s ahead
    char line[160];
    std::snprintf(line, sizeof line, "%.6f,true,230,0,0,0.65,150.0,0.2,50.0\n", start + 0.01 * i);
    log += line;
  }
  write_text(dir.path("ow.csv"), log);
  const std::string script = "echo 101000000 > " + pc.energy_file("intel-rapl:0") + "; sleep 1";
  const auto r = bb("measure --meters rapl,wattmeter --wattmeter-log " + dir.path("ow.csv") +
                        " --wattmeter-accuracy 1 --hz 20 --json " + dir.path("m.json") + " -- sh -c '" + script + "'",
                    "BALERBENCH_POWERCAP_ROOT=" + dir.path("powercap"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const json j = json::parse(read_text(dir.path("m.json")));
  const json& total = j["total"];
  const json& x = total["crosscheck"];
  ASSERT_TRUE(x.is_object()) << total.dump();
  const double wall_j = 200.0 * total["duration_s"].get<double>();
  EXPECT_NEAR(x["components_j"].get<double>(), 100.0, 1e-9) << x.dump();
  EXPECT_EQ(x["components"], "rapl");
  EXPECT_NEAR(x["wall_j"].get<double>(), wall_j, 200.0 * 0.03) << x.dump();  // a log line at each edge, and more
  EXPECT_NEAR(x["wall_j"].get<double>(), total["wall_energy_j"].get<double>(), 1e-9);
  EXPECT_NEAR(x["ratio"].get<double>(), 100.0 / x["wall_j"].get<double>(), 1e-12);
  EXPECT_NEAR(x["unseen_j"].get<double>(), x["wall_j"].get<double>() - 100.0, 1e-9);
  EXPECT_GE(x["wall_uncertainty_j"].get<double>(), 0.01 * x["wall_j"].get<double>());  // the stated 1 %
  EXPECT_EQ(x["resolved"], true);
  EXPECT_NE(r.out.find("cross-check: wall "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("components (rapl) 100"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("that the component meters do not: fans, disks"), std::string::npos) << r.out;
  EXPECT_TRUE(j["phases"][0]["crosscheck"].is_object());
}

// T7 through `measure`: the command burns CPU time in a child of balerbench, so the tree's CPU time is
// the child's and balerbench's, at most the host's busy time; the fake GPU's driver samples balerbench
// (the process that loaded NVML) at 30% SM use and a stranger at 10%, so a quarter of the board's energy
// is not the run's. Both columns are in the report and the printed line, beside the absolute figures.
TEST_F(EnergyCli, MeasureAttributesCpuTimeAndGpuUseToTheProcessTree) {
  const json nvml = {{"devices", {{{"name", "Fake H100"}, {"uuid", "GPU-5678"}, {"power_w", 300.0},
                                   {"energy_counter", true},
                                   {"process_utilization",
                                    {{"sample_period_s", 0.05},
                                     {"processes", {{{"pid", "self"}, {"sm_util", 30}}, {{"pid", 4000000}, {"sm_util", 10}}}}}}}}}};
  write_text(dir.path("nvml.json"), nvml.dump());
  const std::string env = "BALERBENCH_NVML_LIB=" + std::string(FAKE_NVML_LIB) + " FAKE_NVML_CONFIG=" + dir.path("nvml.json");
  const auto r = bb("measure --meters nvml,cpu_estimate --hz 20 --json " + dir.path("m.json") +
                        " -- sh -c 'i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done'",
                    env);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const json report = json::parse(read_text(dir.path("m.json")));
  EXPECT_NE(report["process_tree"]["method"].get<std::string>().find("children lists"), std::string::npos)
      << report["process_tree"].dump();
  EXPECT_GE(report["process_tree"]["pids_seen"].get<int>(), 2);  // balerbench and the shell, at least
  const json& total = report["total"];
  const json& at = total["attribution"];
  ASSERT_TRUE(at.is_object()) << total.dump();
  const json &cpu = at["cpu"], &gpu = at["gpu"];
  EXPECT_GT(cpu["tree_cpu_s"].get<double>(), 0.05) << cpu.dump();  // the shell's loop
  EXPECT_LE(cpu["tree_cpu_s"].get<double>(), cpu["busy_cpu_s"].get<double>() + 0.05) << cpu.dump();
  EXPECT_GT(cpu["share"].get<double>(), 0.0);
  EXPECT_LE(cpu["share"].get<double>(), 1.0);
  EXPECT_NEAR(cpu["attributable_j"].get<double>(), cpu["share"].get<double>() * cpu["energy_j"].get<double>(), 1e-9);
  EXPECT_NEAR(gpu["share"].get<double>(), 0.75, 1e-12) << gpu.dump();
  EXPECT_NEAR(gpu["attributable_j"].get<double>(), 0.75 * gpu["energy_j"].get<double>(), 1e-9);
  EXPECT_GT(gpu["energy_j"].get<double>(), 0.0);
  // The absolute figures stay absolute.
  double domains_j = 0;
  for (const auto& d : total["domains"])
    if (d["in_total"].get<bool>()) domains_j += d["energy_j"].get<double>();
  EXPECT_NEAR(total["total_energy_j"].get<double>(), domains_j, 1e-9);
  EXPECT_NE(r.out.find("attributable to balerbench and the command: cpu "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(75% of the SM use sampled per process)"), std::string::npos) << r.out;
}

TEST_F(EnergyCli, CycleStoresPhaseEnergies) {
  ASSERT_EQ(bb("data generate --kind cms --rows 2000 --seed 1 --out " + dir.path("cms.npz")).exit_code, 0);
  const json cfg = {{"input_path", dir.path("cms.npz")}, {"model_name", "AE"}, {"compression_ratio", 1.6},
                    {"epochs", 2}, {"test_size", 0.2}, {"progress", "none"},
                    {"energy", {{"meters", {"simulated_gpu", "ram_estimate"}}, {"country_iso_code", "DEU"}}}};
  write_text(dir.path("c.json"), cfg.dump());
  const std::string out = dir.path("out");
  const std::string base = "--config " + dir.path("c.json") + " --out " + out;
  const auto train = bb("train " + base);
  ASSERT_EQ(train.exit_code, 0) << train.out;
  EXPECT_NE(train.out.find("SIMULATED: simulated_gpu"), std::string::npos) << train.out;
  ASSERT_EQ(bb("compress " + base).exit_code, 0);
  ASSERT_EQ(bb("decompress " + base).exit_code, 0);
  const std::vector<std::pair<std::string, std::vector<std::string>>> expected = {
      {"training", {"train", "evaluation", "total"}},
      {"compressed_output", {"compress", "total"}},
      {"decompressed_output", {"decompress", "total"}}};
  for (const auto& [folder, phases] : expected) {
    const json e = json::parse(read_text(out + "/" + folder + "/energy_report.json"));
    std::vector<std::string> got;
    for (const auto& p : e["phases"]) {
      got.push_back(p["phase"]);
      EXPECT_GT(p["total_energy_j"].get<double>(), 0.0) << folder;
      EXPECT_EQ(p["energy_kind"], "estimated+simulated");
    }
    got.push_back("total");
    EXPECT_EQ(got, phases) << folder;
    EXPECT_EQ(e["carbon"]["carbon_intensity_g_per_kwh"], 381.0);
    const std::string csv = read_text(out + "/" + folder + "/emissions.csv");
    EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), static_cast<long>(phases.size()) + 1) << csv;
    EXPECT_NE(csv.find("Germany"), std::string::npos);
  }
  const json report = json::parse(read_text(out + "/training/training_report.json"));
  EXPECT_EQ(report["energy"]["phases"][0]["windows"], 2);  // one train window per epoch
  // Memory per phase: the host's peak resident set (at least the model and the data: > 1 MiB), no CUDA.
  for (const auto& [folder, file] : {std::pair<std::string, std::string>{"training", "training_report.json"},
                                     {"compressed_output", "compress_report.json"},
                                     {"decompressed_output", "decompress_report.json"}}) {
    const json m = json::parse(read_text(out + "/" + folder + "/" + file))["memory"];
    EXPECT_GT(m["host_peak_rss_mib"].get<double>(), 1.0) << folder << ": " << m.dump();
    EXPECT_TRUE(m["cuda_peak_reserved_mib"].is_null()) << folder;
  }
  EXPECT_NE(train.out.find("peak memory: "), std::string::npos) << train.out;
}

// Item 5's NVML figure through `train`: the fake GPU holds 1.5 GiB, so the training phase's memory
// reads 1536 MiB in use at its peak, beside the host's resident set, in the report and the summary.
TEST_F(EnergyCli, TrainRecordsTheGpusMemoryInUseAtThePhasesPeak) {
  ASSERT_EQ(bb("data generate --kind cms --rows 2000 --seed 1 --out " + dir.path("cms.npz")).exit_code, 0);
  const json nvml = {{"devices", {{{"name", "Fake H100"}, {"uuid", "GPU-9"}, {"power_w", 150.0},
                                   {"memory_used_bytes", 1536ULL << 20}}}}};
  write_text(dir.path("nvml.json"), nvml.dump());
  const json cfg = {{"input_path", dir.path("cms.npz")}, {"model_name", "AE"}, {"compression_ratio", 1.6},
                    {"epochs", 2}, {"progress", "none"}, {"energy", {{"meters", {"nvml"}}}}};
  write_text(dir.path("c.json"), cfg.dump());
  const auto train = bb("train --config " + dir.path("c.json") + " --out " + dir.path("out"),
                        "BALERBENCH_NVML_LIB=" + std::string(FAKE_NVML_LIB) + " FAKE_NVML_CONFIG=" + dir.path("nvml.json"));
  ASSERT_EQ(train.exit_code, 0) << train.out;
  const json report = json::parse(read_text(dir.path("out/training/training_report.json")));
  EXPECT_EQ(report["memory"]["gpu_memory_used_peak_mib"], 1536.0) << report["memory"].dump();
  EXPECT_NE(report["memory"]["gpu_memory_basis"].get<std::string>().find("NVML device memory used"), std::string::npos);
  EXPECT_EQ(report["energy"]["phases"][0]["gpu_memory_peak_mib"], 1536.0);
  EXPECT_NE(train.out.find(", GPU 1536.0 MiB in use (NVML, every process)"), std::string::npos) << train.out;
}

TEST_F(EnergyCli, EnergyOffAndBadEnergyConfig) {
  ASSERT_EQ(bb("data generate --kind cms --rows 1000 --seed 1 --out " + dir.path("cms.npz")).exit_code, 0);
  const json cfg = {{"input_path", dir.path("cms.npz")}, {"model_name", "AE"}, {"compression_ratio", 1.6},
                    {"epochs", 1}, {"progress", "none"}};
  write_text(dir.path("c.json"), cfg.dump());
  const std::string out = dir.path("out");
  auto r = bb("train --config " + dir.path("c.json") + " --out " + out + " --set energy.enabled=false");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_FALSE(fs::exists(out + "/training/energy_report.json"));
  EXPECT_EQ(r.out.find("energy ("), std::string::npos) << r.out;
  const std::string out2 = dir.path("out2");
  r = bb("train --config " + dir.path("c.json") + " --out " + out2 + " --set energy.country_iso_code=XYZ");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("not in the carbon-intensity table"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(out2 + "/training/model.pt"));  // nothing half-done
  r = bb("train --config " + dir.path("c.json") + " --out " + out2 + " --set energy.sample_hz=fast");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("--set energy.sample_hz=fast: expected a number"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace balerbench
