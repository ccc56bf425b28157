// sweep_cli_fixture.h: the SweepCli fixture shared by the CLI tests of sweeps, power limits, merges,
// signals and concurrent runs, and the BLAS kernel: a temp folder, the experiments they run, the fake
// NVML library's settings and logs, and runs in the background. Not in an anonymous namespace: the
// test programs' files share one fixture class (GoogleTest requires one per suite).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/test_util.h"

namespace balerbench {

using nlohmann::json;
namespace fs = std::filesystem;

inline json tiny_experiment() {
  return json::parse(R"({
    "schema_version": 1, "name": "tiny",
    "dataset": {"generator": {"kind": "cms", "rows": 2000, "seed": 1}},
    "model": {"name": "AE", "compression_ratio": 1.6},
    "training": {"test_size": 0.2},
    "sweep": {"batch_size": [256], "precision": ["fp32", "fp64"], "epochs": [3], "repeats": 2},
    "target": {"relative_error": 0.9},
    "energy": {"meters": ["cpu_estimate", "ram_estimate"], "sample_hz": 20, "cpu_tdp_w": 100},
    "cost": {"eta": [0, 0.5, 1], "max_power_w": 100}
  })");
}

// The second trial runs long enough to be interrupted (5,000 rows, 600 epochs).
inline json long_experiment() {
  json j = tiny_experiment();
  j["name"] = "long";
  j["dataset"]["generator"]["rows"] = 5000;
  j["sweep"] = {{"batch_size", {512}}, {"precision", {"fp32"}}, {"epochs", {2, 600}}, {"repeats", 1}};
  return j;
}

class SweepCli : public ::testing::Test {
 protected:
  std::string write_experiment(const json& j, const std::string& name = "exp.json") {
    write_text(dir_.path(name), j.dump(2));
    return dir_.path(name);
  }
  // Runs balerbench with `args` in the temp dir, with `env` prepended.
  CommandResult bb(const std::string& args, const std::string& env = "") {
    return run_command("cd " + dir_.root() + " && " + env + " " + balerbench_binary() + " " + args);
  }
  std::string fake_nvml_env(const std::string& extra_device = "") {
    write_text(dir_.path("nvml.json"),
               R"({"driver_version": "550.00", "devices": [{"name": "Fake H100", "uuid": "GPU-aaaa",
                   "power_w": 200, "power_limit_w": 300, "default_limit_w": 300, "min_limit_w": 100,
                   "max_limit_w": 300)" +
                   extra_device + "}]}");
    return "BALERBENCH_NVML_LIB=" + std::string(FAKE_NVML_LIB) + " FAKE_NVML_CONFIG=" + dir_.path("nvml.json") +
           " FAKE_NVML_SET_LOG=" + dir_.path("sets.log") + " FAKE_NVML_STATE=" + dir_.path("state.json") +
           " BALERBENCH_POWER_JOURNAL=" + dir_.path("journal.json");
  }
  std::vector<std::string> sets() const { return read_lines(dir_.path("sets.log")); }
  double state_limit_w() const { return json::parse(read_text(dir_.path("state.json")))["GPU-aaaa"].get<double>(); }
  // Starts a run in the background; returns its pid.
  long start_background(const std::string& args, const std::string& env, const std::string& log) {
    const auto r = run_command("cd " + dir_.root() + " && (" + env + " exec " + balerbench_binary() + " " + args +
                               " > " + log + " 2>&1 & echo $! > pid; wait $! ; echo $? > rc) > /dev/null 2>&1 &");
    EXPECT_EQ(r.exit_code, 0);
    // The shell creates the file before it writes the pid: wait for the whole line, as wait_exit does.
    std::string pid;
    eventually(
        [&] {
          pid = fs::exists(dir_.path("pid")) ? read_text(dir_.path("pid")) : "";
          return !pid.empty() && pid.back() == '\n';
        },
        5);
    if (pid.empty() || pid.back() != '\n') throw std::runtime_error("start_background: no pid after 5 s: " + args);
    return std::stol(pid);
  }
  // Waits until `log` contains `text` (up to `seconds`).
  bool wait_for(const std::string& log, const std::string& text, double seconds) {
    return eventually([&] { return fs::exists(log) && read_text(log).find(text) != std::string::npos; }, seconds);
  }
  // Waits until `log` contains `text` after the first `marker` (up to `seconds`): a line of the trial
  // `marker` starts, not of an earlier one.
  bool wait_for_after(const std::string& log, const std::string& marker, const std::string& text, double seconds) {
    return eventually(
        [&] {
          if (!fs::exists(log)) return false;
          const std::string t = read_text(log);
          const std::size_t at = t.find(marker);
          return at != std::string::npos && t.find(text, at + marker.size()) != std::string::npos;
        },
        seconds);
  }
  int wait_exit(double seconds) {
    int code = -1;
    eventually(
        [&] {
          if (!fs::exists(dir_.path("rc"))) return false;
          const std::string rc = read_text(dir_.path("rc"));
          if (rc.empty() || rc.back() != '\n') return false;
          code = std::stoi(rc);
          return true;
        },
        seconds);
    return code;
  }
  void reset_background() {
    fs::remove(dir_.path("pid"));
    fs::remove(dir_.path("rc"));
  }
  TempDir dir_;
};

}  // namespace balerbench
