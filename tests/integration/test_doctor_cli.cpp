// test_doctor_cli.cpp: `balerbench doctor` end to end, and the hazards block `run` and `train` print
// before they start. The hazards come from the fake NVML (throttling, persistence off, another
// process) and a fake cpufreq tree (BALERBENCH_SYS_CPU_ROOT, powersave), so they are there whatever
// the host is doing; the host's own (a busy CPU) may come on top and are not asserted either way.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "datasets/synthetic.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class DoctorCli : public ::testing::Test {
 protected:
  // stdout only (stderr to a file), so --json output parses whatever is said on stderr.
  CommandResult bb_stdout(const std::string& args, const std::string& env) {
    return run_command("{ cd " + dir.root() + " && " + env + " " + balerbench_binary() + " " + args + " 2>" +
                       dir.path("stderr.txt") + "; }");
  }
  CommandResult bb(const std::string& args, const std::string& env) {
    return run_command("cd " + dir.root() + " && " + env + " " + balerbench_binary() + " " + args);
  }
  // A fake machine: one GPU with `device` merged into its settings; cpu0 with `governor`.
  std::string fake_env(const json& device, const std::string& governor) {
    json gpu = {{"name", "Fake H100"}, {"uuid", "GPU-aaaa"}, {"power_w", 100}, {"power_limit_w", 300},
                {"temperature_c", 88}, {"sm_clock_mhz", 1100}};
    gpu.update(device);
    write_text(dir.path("nvml.json"), json{{"devices", {gpu}}}.dump());
    fs::create_directories(dir.path("sys/cpu0/cpufreq"));
    write_text(dir.path("sys/cpu0/cpufreq/scaling_governor"), governor + "\n");
    return "BALERBENCH_NVML_LIB=" + std::string(FAKE_NVML_LIB) + " FAKE_NVML_CONFIG=" + dir.path("nvml.json") +
           " BALERBENCH_SYS_CPU_ROOT=" + dir.path("sys");
  }
  std::string hazardous_env() {
    return fake_env({{"throttle_reasons", 0x40 | 0x8 | 0x4}, {"persistence_mode", false},
                     {"compute_processes", {{{"pid", 4000001}, {"used_memory_mib", 2048}}, {{"pid", "self"}}}}},
                    "powersave");
  }
  static std::vector<std::string> ids(const json& hazards) {
    std::vector<std::string> out;
    for (const auto& h : hazards) out.push_back(h.at("id").get<std::string>());
    return out;
  }
  static bool contains(const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
  }
  TempDir dir;
};

TEST_F(DoctorCli, JsonListsTheFakeMachinesHazards) {
  const auto r = bb_stdout("doctor --json --interval 0.1", hazardous_env());
  ASSERT_EQ(r.exit_code, 0) << r.out << read_text(dir.path("stderr.txt"));
  const json hazards = json::parse(r.out);
  ASSERT_TRUE(hazards.is_array());
  const auto found = ids(hazards);
  for (const char* id : {"cpu_governor_powersave", "gpu_thermal_throttle", "gpu_power_cap", "gpu_persistence_off",
                         "gpu_other_processes"})
    EXPECT_TRUE(contains(found, id)) << id << " missing from " << r.out;
  EXPECT_FALSE(contains(found, "gpu_hw_slowdown")) << r.out;  // part of the thermal slowdown here
  for (const auto& h : hazards) {
    ASSERT_EQ(h.size(), 4u) << h.dump();
    for (const char* key : {"id", "what", "evidence", "fix"})
      EXPECT_FALSE(h.at(key).get<std::string>().empty()) << key << " in " << h.dump();
    if (h["id"] == "gpu_other_processes") EXPECT_EQ(h["evidence"], "pid 4000001 (2048 MiB)");  // not balerbench itself
    if (h["id"] == "gpu_thermal_throttle")
      EXPECT_EQ(h["evidence"], "throttle reasons: hw_thermal_slowdown; SM clock 1100 MHz; 88 C; power limit 300 W");
  }
}

TEST_F(DoctorCli, PlainOutputHasTheBlockAndWhatWasChecked) {
  const auto r = bb("doctor --interval 0.1", hazardous_env());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("hazards on this machine can skew time and energy"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  - GPU 0 (Fake H100) is not in persistence mode: nvmlDeviceGetPersistenceMode: disabled. "
                       "Fix: sudo nvidia-smi -pm 1"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("checked:\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  gpu0 (Fake H100): SM 1100 MHz"), std::string::npos) << r.out;
  // A healthy fake GPU and governor: none of theirs (the host's CPU load may still be one).
  const auto ok = bb_stdout("doctor --json --interval 0.1", fake_env(json::object(), "performance"));
  ASSERT_EQ(ok.exit_code, 0) << ok.out;
  for (const auto& id : ids(json::parse(ok.out)))
    EXPECT_TRUE(id == "cpu_busy" || id == "cpu_steal" || id == "blas_generic_kernel" || id == "debug_build") << ok.out;
  const auto plain = bb("doctor --interval 0.1", fake_env(json::object(), "performance"));
  EXPECT_NE(plain.out.find("  cpu governor: performance on CPU 0\n"), std::string::npos) << plain.out;
  EXPECT_EQ(bb("doctor --interval 0", "").exit_code, 2);
}

TEST_F(DoctorCli, TrainPrintsTheHazardsBlockBeforeTrainingAndJsonCarriesThem) {
  ASSERT_EQ(bb("data generate --kind cms --rows 1000 --seed 1 --out cms.npz", "").exit_code, 0);
  const json config = {{"input_path", dir.path("cms.npz")}, {"model_name", "AE"}, {"compression_ratio", 1.6},
                       {"epochs", 1}, {"batch_size", 256}, {"progress", "lines"}, {"type_list", cms_type_list()}};
  write_text(dir.path("c.json"), config.dump());
  const std::string env = hazardous_env();
  const auto r = bb("train --config c.json --out out", env);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto block = r.out.find("hazards on this machine can skew time and energy measurements: ");
  ASSERT_NE(block, std::string::npos) << r.out;
  const std::string line = r.out.substr(block, r.out.find('\n', block) - block);
  EXPECT_NE(line.find("GPU 0 (Fake H100) is slowed down for heat"), std::string::npos) << line;
  EXPECT_NE(line.find("(balerbench doctor for the evidence and the fixes)"), std::string::npos) << line;
  EXPECT_LT(block, r.out.find("Epoch 1/1")) << r.out;
  EXPECT_EQ(r.out.find("hazards on this machine"), r.out.rfind("hazards on this machine")) << "one block\n" << r.out;
  const auto j = bb_stdout("train --json --config c.json --out out2", env);
  ASSERT_EQ(j.exit_code, 0) << j.out << read_text(dir.path("stderr.txt"));
  const auto found = ids(json::parse(j.out).at("hazards"));
  EXPECT_TRUE(contains(found, "gpu_persistence_off")) << j.out;
  EXPECT_EQ(read_text(dir.path("stderr.txt")).find("hazards on this machine"), std::string::npos);
}

TEST_F(DoctorCli, RunPrintsTheHazardsBlockOnceAndDryRunDoesNotProbe) {
  const json experiment = json::parse(R"({
    "schema_version": 1, "name": "one",
    "dataset": {"generator": {"kind": "cms", "rows": 1000, "seed": 1}},
    "model": {"name": "AE", "compression_ratio": 1.6},
    "sweep": {"batch_size": [256], "precision": ["fp32"], "epochs": [1], "repeats": 1},
    "energy": {"meters": ["cpu_estimate"], "cpu_tdp_w": 100}
  })");
  write_text(dir.path("exp.json"), experiment.dump());
  const std::string env = hazardous_env();
  const auto r = bb("run exp.json --db db.sqlite --progress none --tables none", env);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto block = r.out.find("hazards on this machine can skew time and energy measurements: ");
  ASSERT_NE(block, std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the CPU frequency governor is powersave", block), std::string::npos) << r.out;
  EXPECT_LT(r.out.find("to run"), block) << "after the plan, once the input is known good\n" << r.out;
  EXPECT_LT(block, r.out.find("== trial 1/1")) << r.out;
  EXPECT_EQ(r.out.find("hazards on this machine"), r.out.rfind("hazards on this machine")) << "one block\n" << r.out;
  const auto dry = bb("run exp.json --db db2.sqlite --dry-run", env);
  ASSERT_EQ(dry.exit_code, 0) << dry.out;
  EXPECT_EQ(dry.out.find("hazards on this machine"), std::string::npos) << dry.out;
  // A bad input is one line of error, with no hazards before it.
  const auto bad = bb("run exp.json --db db3.sqlite --shard 5/2", env);
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_EQ(bad.out.find("hazard"), std::string::npos) << bad.out;
  write_text(dir.path("huge.json"), R"({"schema_version": 1, "name": "huge",
    "dataset": {"generator": {"kind": "cms", "rows": 1000, "seed": 1}},
    "model": {"name": "AE", "compression_ratio": 1.6},
    "sweep": {"batch_size": [256], "precision": ["fp32"], "epochs": [1], "repeats": 200000}})");
  const auto huge = bb("run huge.json --db db4.sqlite", env);
  EXPECT_EQ(huge.exit_code, 2) << huge.out;
  EXPECT_EQ(huge.out.find("hazard"), std::string::npos) << huge.out;
  EXPECT_FALSE(std::filesystem::exists(dir.path("db4.sqlite")));
}

}  // namespace
}  // namespace balerbench
