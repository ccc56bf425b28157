// test_system.cpp: the BLAS kernel decision (with injected core names and CPU features, so nothing
// depends on CI's CPU), the system description's readers over fake /proc and /sys trees, the
// fingerprint, and the CPU activity behind a trial's disturbance flag.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <set>
#include <thread>

#include "harness/base/blas_kernel.h"
#include "harness/base/cpu_activity.h"
#include "harness/base/processes.h"
#include "harness/base/stall_watch.h"
#include "harness/base/system_info.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

namespace fs = std::filesystem;
using Env = std::map<std::string, std::string>;

CpuFeatures cpu_with(std::initializer_list<const char*> flags) {
  CpuFeatures c;
  c.vendor = "GenuineIntel";
  for (const char* f : flags) c.flags.insert(f);
  return c;
}
const CpuFeatures kEmeraldRapids = cpu_with({"sse4_2", "avx", "avx2", "fma", "avx512f", "avx512dq", "avx512bw",
                                             "avx512vl", "avx512_bf16", "avx512_fp16", "amx_tile", "hypervisor"});
const CpuFeatures kSkylake = cpu_with({"avx", "avx2", "fma", "avx512f", "avx512dq", "avx512bw", "avx512vl"});
const CpuFeatures kHaswell = cpu_with({"avx", "avx2", "fma"});
const CpuFeatures kOldCpu = cpu_with({"sse4_2"});

TEST(BlasKernel, BestCoreFollowsTheIsa) {
  EXPECT_EQ(best_openblas_core(kEmeraldRapids), "Cooperlake");
  EXPECT_EQ(best_openblas_core(kSkylake), "SkylakeX");
  EXPECT_EQ(best_openblas_core(kHaswell), "Haswell");
  EXPECT_EQ(best_openblas_core(cpu_with({"avx"})), "SandyBridge");
  EXPECT_EQ(best_openblas_core(kOldCpu), "");
  EXPECT_EQ(openblas_core_rank("Prescott"), 1);
  EXPECT_EQ(openblas_core_rank("Sandybridge"), 2);  // OpenBLAS's own spelling
  EXPECT_EQ(openblas_core_rank("zen"), 3);
  EXPECT_EQ(openblas_core_rank("COOPERLAKE"), 5);
  EXPECT_EQ(openblas_core_rank("NoSuchCore"), 0);
}

TEST(BlasKernel, AGenericKernelOnAModernCpuIsSwitchedToTheBest) {
  const BlasDecision d = decide_blas_kernel("Prescott", kEmeraldRapids, {});
  EXPECT_EQ(d.action, BlasDecision::Action::kSwitch);
  EXPECT_EQ(d.from, "Prescott");
  EXPECT_EQ(d.to, "Cooperlake");
  EXPECT_NE(d.reason.find("generic Prescott"), std::string::npos) << d.reason;
  EXPECT_NE(d.reason.find("BALERBENCH_BLAS_KERNEL=keep"), std::string::npos) << d.reason;  // the opt-out, named
  // OpenBLAS 0.3.21 does not accept Cooperlake by name: the switch has fallbacks, best first.
  EXPECT_EQ(d.candidates, (std::vector<std::string>{"Cooperlake", "SkylakeX", "Haswell"}));
  EXPECT_EQ(openblas_core_candidates(kSkylake), (std::vector<std::string>{"SkylakeX", "Haswell"}));
  EXPECT_TRUE(openblas_core_candidates(kOldCpu).empty());
  EXPECT_EQ(decide_blas_kernel("Nehalem", kHaswell, {}).to, "Haswell");
  EXPECT_EQ(decide_blas_kernel("Sandybridge", kSkylake, {}).to, "SkylakeX");
}

TEST(BlasKernel, AGoodOrTheOnlyKernelIsKept) {
  for (const auto& [core, cpu] : std::vector<std::pair<std::string, CpuFeatures>>{
           {"Cooperlake", kEmeraldRapids}, {"Haswell", kEmeraldRapids}, {"Zen", kHaswell}, {"Prescott", kOldCpu},
           {"Mystery", kEmeraldRapids}}) {
    const BlasDecision d = decide_blas_kernel(core, cpu, {});
    EXPECT_EQ(d.action, BlasDecision::Action::kKeep) << core;
    EXPECT_FALSE(d.generic) << core;
  }
  // Not OpenBLAS: nothing is known, nothing is guessed.
  const BlasDecision other = decide_blas_kernel("", kEmeraldRapids, {});
  EXPECT_EQ(other.action, BlasDecision::Action::kKeep);
  EXPECT_NE(other.reason.find("not OpenBLAS"), std::string::npos);
}

TEST(BlasKernel, AValueTheUserSetIsNeverOverriddenButAGenericOneIsAHazard) {
  const BlasDecision d = decide_blas_kernel("Prescott", kEmeraldRapids, Env{{"OPENBLAS_CORETYPE", "Prescott"}});
  EXPECT_EQ(d.action, BlasDecision::Action::kKeep);
  EXPECT_TRUE(d.generic);
  EXPECT_NE(d.reason.find("OPENBLAS_CORETYPE=Prescott is set"), std::string::npos) << d.reason;
  EXPECT_NE(d.reason.find("Cooperlake"), std::string::npos) << d.reason;  // the fix, named
  // A name OpenBLAS does not know: it chose for itself, and the reason says so.
  const BlasDecision unknown = decide_blas_kernel("Cooperlake", kEmeraldRapids, Env{{"OPENBLAS_CORETYPE", "NoSuch"}});
  EXPECT_NE(unknown.reason.find("does not know that name and chose Cooperlake"), std::string::npos) << unknown.reason;
  const BlasDecision fine = decide_blas_kernel("Haswell", kEmeraldRapids, Env{{"OPENBLAS_CORETYPE", "Haswell"}});
  EXPECT_EQ(fine.action, BlasDecision::Action::kKeep);
  EXPECT_FALSE(fine.generic);
}

TEST(BlasKernel, OptOutAndRequestByName) {
  const BlasDecision keep = decide_blas_kernel("Prescott", kEmeraldRapids, Env{{"BALERBENCH_BLAS_KERNEL", "keep"}});
  EXPECT_EQ(keep.action, BlasDecision::Action::kKeep);
  EXPECT_TRUE(keep.generic);  // opted out, still a hazard
  const BlasDecision want =
      decide_blas_kernel("Cooperlake", kEmeraldRapids, Env{{"BALERBENCH_BLAS_KERNEL", "Haswell"}});
  EXPECT_EQ(want.action, BlasDecision::Action::kSwitch);
  EXPECT_EQ(want.to, "Haswell");
  EXPECT_EQ(want.candidates, std::vector<std::string>{"Haswell"});  // asked for by name: that one only
  // The request outranks an OPENBLAS_CORETYPE in the environment: it is the more specific of the two.
  const BlasDecision both = decide_blas_kernel(
      "Prescott", kEmeraldRapids, Env{{"BALERBENCH_BLAS_KERNEL", "SkylakeX"}, {"OPENBLAS_CORETYPE", "Prescott"}});
  EXPECT_EQ(both.to, "SkylakeX");
  const BlasDecision same = decide_blas_kernel("Haswell", kEmeraldRapids, Env{{"BALERBENCH_BLAS_KERNEL", "haswell"}});
  EXPECT_EQ(same.action, BlasDecision::Action::kKeep);
  EXPECT_EQ(decide_blas_kernel("Prescott", kEmeraldRapids, Env{{"BALERBENCH_BLAS_KERNEL", "auto"}}).to, "Cooperlake");
}

TEST(BlasKernel, ThisProcessesGemmsMatchTheReference) {
  std::string why;
  EXPECT_TRUE(blas_gemm_check(why)) << why;
  const BlasInfo b = query_blas();
  if (b.library == "OpenBLAS") {
    EXPECT_FALSE(b.version.empty());
    EXPECT_FALSE(b.core.empty());
    EXPECT_NE(b.config.find(b.version), std::string::npos);
  } else {
    EXPECT_TRUE(b.core.empty());  // never guessed
  }
  // A test program does not choose its kernel; it says so.
  EXPECT_EQ(blas_choice()["decision"], "not checked");
}

// ---- the CPU, the environment, the fingerprint ----

void fake_tree(const TempDir& t, const std::string& flags, const std::string& governor) {
  fs::create_directories(t.path("proc"));
  std::string cpuinfo;
  for (int i = 0; i < 4; ++i)
    cpuinfo += "processor\t: " + std::to_string(i) +
               "\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 207\nmodel name\t: INTEL(R) XEON(R) PLATINUM "
               "8581C\nstepping\t: 2\nphysical id\t: 0\nsiblings\t: 4\ncpu cores\t: 2\nflags\t\t: " +
               flags + "\n\n";
  write_text(t.path("proc/cpuinfo"), cpuinfo);
  fs::create_directories(t.path("sys/devices/system/cpu/smt"));
  write_text(t.path("sys/devices/system/cpu/smt/active"), "1\n");
  if (!governor.empty()) {
    fs::create_directories(t.path("sys/devices/system/cpu/cpu0/cpufreq"));
    write_text(t.path("sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"), governor + "\n");
    write_text(t.path("sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq"), "3900000\n");
  }
}

TEST(SystemInfo, TheCpuFromFakeProcAndSysTrees) {
  TempDir t;
  fake_tree(t, "fpu sse4_2 avx avx2 fma avx512f avx512_bf16 amx_tile hypervisor", "powersave");
  const CpuFeatures f = read_cpu_features(t.path("proc"));
  EXPECT_EQ(f.family, 6);
  EXPECT_EQ(f.model, 207);
  EXPECT_TRUE(f.has("avx512_bf16"));
  const auto cpu = describe_cpu(t.path("proc"), t.path("sys"));
  EXPECT_EQ(cpu["logical_cpus"], 4);
  EXPECT_EQ(cpu["smt"]["threads_per_core"], 2);
  EXPECT_EQ(cpu["smt"]["active"], true);
  EXPECT_EQ(cpu["hypervisor"]["present"], true);
  EXPECT_EQ(cpu["frequency"]["governor"], "powersave");
  EXPECT_DOUBLE_EQ(cpu["frequency"]["max_mhz"].get<double>(), 3900);
  EXPECT_EQ(cpu["isa"], nlohmann::json({"sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_bf16", "amx_tile"}));
  // A VM that exposes no cpufreq: null, not a guess.
  TempDir vm;
  fake_tree(vm, "avx2", "");
  EXPECT_TRUE(describe_cpu(vm.path("proc"), vm.path("sys"))["frequency"]["governor"].is_null());
}

TEST(SystemInfo, OnlyTheVariablesThatChangeSpeedOrNumerics) {
  const char* vars[] = {"OMP_NUM_THREADS=2", "OPENBLAS_CORETYPE=Haswell", "HOME=/root", "MKL_CBWR=AVX2",
                        "NVIDIA_TF32_OVERRIDE=0", "TORCH_SHOW_CPP_STACKTRACES=1", "PATH=/bin", "KMP_AFFINITY=x",
                        "CUDA_VISIBLE_DEVICES=0", "OMPX=1", nullptr};
  const auto env = relevant_environment(const_cast<char**>(vars));
  EXPECT_EQ(env.size(), 7u);
  EXPECT_EQ(env.at("OPENBLAS_CORETYPE"), "Haswell");
  EXPECT_EQ(env.count("HOME") + env.count("PATH") + env.count("OMPX"), 0u);
}

nlohmann::json system_of(const std::string& core, const std::string& host) {
  return {{"host", {{"hostname", host}}},
          {"cpu", {{"vendor", "GenuineIntel"}, {"model_name", "Xeon"}, {"family", 6}, {"model", 207}, {"logical_cpus", 2},
                   {"isa", {"avx2"}}, {"smt", {{"threads_per_core", 1}}}, {"hypervisor", {{"present", true}}},
                   {"frequency", {{"governor", nullptr}}}}},
          {"blas", {{"library", "OpenBLAS"}, {"version", "0.3.21"}, {"core", core}, {"threads", 2}}},
          {"torch", {{"version", "1.13.0"}, {"build_hash", "abc"}, {"onednn", "v2.6.3"}, {"threads", 2}}},
          {"gpus", nlohmann::json::array()},
          {"env", {{"OPENBLAS_CORETYPE", core}}}};
}

TEST(SystemInfo, TheFingerprintCoversWhatShapesResultsAndNothingElse) {
  const std::string a = system_fingerprint(system_of("Cooperlake", "node1"));
  EXPECT_EQ(a.size(), 12u);
  EXPECT_EQ(system_fingerprint(system_of("Cooperlake", "node2")), a);  // identical nodes: one system
  EXPECT_NE(system_fingerprint(system_of("Prescott", "node1")), a);    // another kernel: another system
  nlohmann::json threads = system_of("Cooperlake", "node1");
  threads["blas"]["threads"] = 1;  // a trial's own setting, recorded per trial
  threads["torch"]["threads"] = 1;
  EXPECT_EQ(system_fingerprint(threads), a);
  nlohmann::json env = system_of("Cooperlake", "node1");
  env["env"]["OMP_WAIT_POLICY"] = "PASSIVE";
  EXPECT_NE(system_fingerprint(env), a);
  nlohmann::json gpu = system_of("Cooperlake", "node1");
  gpu["gpus"] = {{{"name", "NVIDIA H100"}, {"uuid", "GPU-1"}}};
  EXPECT_NE(system_fingerprint(gpu), a);
  EXPECT_EQ(system_label(gpu), "Xeon (2 CPUs), OpenBLAS 0.3.21 Cooperlake, GPU: NVIDIA H100");
  EXPECT_EQ(system_label(nlohmann::json()), "unknown system");
}

// ---- CPU activity and disturbance ----

TEST(CpuActivity, ReadsHostBusyAndStealFromAFakeProcStat) {
  TempDir t;
  fs::create_directories(t.path("proc"));
  write_text(t.path("proc/stat"), "cpu  100 20 30 1000 5 1 2 40 0 0\ncpu0 50 10 15 500 2 0 1 20 0 0\n"
                                  "cpu1 50 10 15 500 3 1 1 20 0 0\nintr 1 2 3\n");
  const CpuActivity a = read_cpu_activity(t.path("proc"));
  ASSERT_TRUE(a.valid);
  EXPECT_EQ(a.cpus, 2);
  const double tick = 1.0 / static_cast<double>(sysconf(_SC_CLK_TCK));
  EXPECT_NEAR(a.host_busy_s, (100 + 20 + 30 + 1 + 2) * tick, 1e-9);
  EXPECT_NEAR(a.host_steal_s, 40 * tick, 1e-9);
  EXPECT_GE(a.self_cpu_s, 0);
  TempDir none;
  EXPECT_FALSE(read_cpu_activity(none.root()).valid);
}

TEST(CpuActivity, ANeighbourOrAStealingHypervisorFlagsTheWindow) {
  CpuActivity b;
  b.valid = true;
  b.cpus = 2;
  CpuActivity e = b;
  e.wall_s = 10;            // a 10 s window
  e.self_cpu_s = 9.5;       // the trial used 0.95 CPUs
  e.host_busy_s = 9.5 + 1;  // and others 1 s: 0.1 CPUs
  e.host_steal_s = 0.2;     // 1% of 20 CPU-seconds
  nlohmann::json d = disturbance(b, e);
  EXPECT_NEAR(d["other_cpu_cores"].get<double>(), 0.1, 1e-12);
  EXPECT_NEAR(d["steal_fraction"].get<double>(), 0.01, 1e-12);
  EXPECT_FALSE(d["disturbed"].get<bool>());
  EXPECT_TRUE(d["reason"].is_null());
  e.host_busy_s = 9.5 + 8;  // a neighbour on most of a core
  d = disturbance(b, e);
  EXPECT_TRUE(d["disturbed"].get<bool>());
  EXPECT_NE(d["reason"].get<std::string>().find("0.80 CPUs"), std::string::npos) << d.dump();
  e.host_busy_s = 9.5;
  e.host_steal_s = 1.0;  // 5%
  d = disturbance(b, e);
  EXPECT_TRUE(d["disturbed"].get<bool>());
  EXPECT_NE(d["reason"].get<std::string>().find("stole 5.0%"), std::string::npos) << d.dump();
  EXPECT_NE(d["threshold"].get<std::string>().find("0.25 CPUs"), std::string::npos);
  b.valid = false;
  EXPECT_TRUE(disturbance(b, e).is_null());
}

// The process not running although it could have (stopped, paused) flags the window past 0.1 s and 2%
// of it; without a StallWatch at both ends there is no figure, and nothing is flagged for it.
TEST(CpuActivity, AStalledProcessFlagsTheWindow) {
  CpuActivity b;
  b.valid = true;
  b.cpus = 2;
  CpuActivity e = b;
  e.wall_s = 10;
  e.self_cpu_s = 6;
  e.host_busy_s = 6;
  nlohmann::json d = disturbance(b, e);
  EXPECT_TRUE(d["stalled_s"].is_null());
  EXPECT_FALSE(d["disturbed"].get<bool>());
  b.stalled_s = 1.0;
  e.stalled_s = 1.15;  // 0.15 s: above 0.1 s, below 2% of 10 s
  EXPECT_FALSE(disturbance(b, e)["disturbed"].get<bool>());
  e.stalled_s = 5.0;  // 4 s of 10
  d = disturbance(b, e);
  EXPECT_NEAR(d["stalled_s"].get<double>(), 4.0, 1e-12);
  EXPECT_TRUE(d["disturbed"].get<bool>());
  EXPECT_NE(d["reason"].get<std::string>().find("did not run for 4.00 s of the 10.00 s"), std::string::npos) << d.dump();
}

// A child process runs a StallWatch while the parent stops it (SIGSTOP) for 1 s: the child counts at
// least the stop less one sleep period. No watch, no figure.
TEST(StallWatch, CountsTheTimeTheProcessWasStopped) {
  EXPECT_FALSE(StallWatch::stalled_s().has_value());
  int ready[2], go[2], result[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(go), 0);
  ASSERT_EQ(pipe(result), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    double stalled = -1;
    {
      const StallWatch watch;
      char c = 'r';
      (void)!write(ready[1], &c, 1);
      (void)!read(go[0], &c, 1);  // the watch's thread runs on (and is stopped) while this waits
      // Its thread adds the stall when it next wakes, within a period of the SIGCONT: wait for it.
      eventually([] { return StallWatch::stalled_s().value_or(0) >= 0.5; }, 30);
      stalled = StallWatch::stalled_s().value_or(-1);
    }
    (void)!write(result[1], &stalled, sizeof stalled);
    _exit(0);
  }
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  ASSERT_EQ(kill(pid, SIGSTOP), 0);
  // The length of the stop, not a time limit; real, as the stall StallWatch measures is real time.
  std::this_thread::sleep_for(std::chrono::seconds(1));
  ASSERT_EQ(kill(pid, SIGCONT), 0);
  ASSERT_EQ(write(go[1], &c, 1), 1);
  double stalled = -1;
  ASSERT_EQ(read(result[0], &stalled, sizeof stalled), static_cast<ssize_t>(sizeof stalled));
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_GE(stalled, 1.0 - kStallPeriodS - 0.01) << "the stop was 1 s long";
  for (int fd : {ready[0], ready[1], go[0], go[1], result[0], result[1]}) close(fd);
}

}  // namespace
}  // namespace balerbench

namespace balerbench {
namespace {

// A fake /proc with one process of each kind: a balerbench (pid 4242, its CPU time set by `cpu_ticks`),
// another program, and this boot's id.
void fake_process(const std::string& root, int64_t pid, const std::string& comm, int64_t parent, int64_t cpu_ticks,
                  const std::string& start_ticks = "777") {
  const std::string dir = root + "/" + std::to_string(pid);
  std::filesystem::create_directories(dir);
  write_text(dir + "/comm", comm + "\n");
  // Fields 3.. after "(comm)": state, ppid, then 9 fields, utime (14), stime (15), ..., starttime (22).
  write_text(dir + "/stat", std::to_string(pid) + " (" + comm + ") S " + std::to_string(parent) +
                                " 1 1 0 -1 0 0 0 0 0 " + std::to_string(cpu_ticks) + " 0 0 0 20 0 1 0 " + start_ticks +
                                " 1000 100\n");
  const std::string cmd = comm + std::string(1, '\0') + "run" + std::string(1, '\0') + "exp.json";
  write_text(dir + "/cmdline", cmd);
}

TEST(Processes, ThisProcessIsAliveAndAnExitedOrReusedPidIsNot) {
  const ProcessIdentity me = this_process();
  EXPECT_GT(me.pid, 0);
  EXPECT_FALSE(me.boot_id.empty());
  EXPECT_FALSE(me.start_ticks.empty());
  EXPECT_TRUE(process_alive(me));
  ProcessIdentity reused = me;  // the same pid, started at another time: another process
  reused.start_ticks = me.start_ticks + "0";
  EXPECT_FALSE(process_alive(reused));
  ProcessIdentity elsewhere = me;  // another boot: only its heartbeats can tell
  elsewhere.boot_id = "another-boot";
  EXPECT_FALSE(process_alive(elsewhere));
  EXPECT_FALSE(same_boot(elsewhere, me));
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  const auto child_start = process_start_ticks(child);
  ::waitpid(child, nullptr, 0);  // reaped: gone
  ProcessIdentity gone = me;
  gone.pid = child;
  gone.start_ticks = child_start.value_or("1");
  EXPECT_FALSE(process_alive(gone));
}

TEST(Processes, OtherBalerbenchProcessesAreFoundAndThoseThatUsedCpuFlagged) {
  TempDir dir;
  const std::string proc = dir.path("proc");
  std::filesystem::create_directories(proc + "/sys/kernel/random");
  write_text(proc + "/sys/kernel/random/boot_id", "boot\n");
  fake_process(proc, 4242, "balerbench", 1, 100);
  fake_process(proc, 4343, "python3", 1, 500);
  fake_process(proc, 4444, "balerbench", ::getpid(), 100);  // a child of this process: left out
  fake_process(proc, 4545, "balerbench", 1, 100);           // idle all along
  const auto found = other_balerbench_processes(proc);
  ASSERT_EQ(found.size(), 2u);
  std::set<int64_t> pids{found[0].pid, found[1].pid};
  EXPECT_EQ(pids, (std::set<int64_t>{4242, 4545}));
  for (const auto& p : found) EXPECT_EQ(p.command, "balerbench run exp.json");

  PeerWatch watch(proc);
  watch.sample();
  fake_process(proc, 4242, "balerbench", 1, 100 + 3 * ::sysconf(_SC_CLK_TCK));  // 3 CPU-s later
  watch.sample();
  EXPECT_TRUE(watch.any_active());
  const nlohmann::json j = watch.to_json();
  ASSERT_EQ(j.size(), 2u);
  for (const auto& p : j) {
    if (p["pid"] == 4242) {
      EXPECT_NEAR(p["cpu_s"].get<double>(), 3.0, 1e-9);
      EXPECT_TRUE(p["active"].get<bool>());
    } else {
      EXPECT_NEAR(p["cpu_s"].get<double>(), 0.0, 1e-9);
      EXPECT_FALSE(p["active"].get<bool>());  // idle beside it the whole time: not a competitor
    }
  }
  EXPECT_NE(watch.reason().find("another balerbench ran beside it (pid 4242: balerbench run exp.json, 3.00 CPU-s)"),
            std::string::npos)
      << watch.reason();
  EXPECT_EQ(watch.reason().find("4545"), std::string::npos) << watch.reason();

  // One that starts inside the window is active whatever its CPU time: what it used before is unknown.
  PeerWatch late(proc);
  std::filesystem::remove_all(proc + "/4242");
  std::filesystem::remove_all(proc + "/4545");
  late.sample();
  EXPECT_FALSE(late.any_active());
  fake_process(proc, 4646, "balerbench", 1, 0);
  late.sample();
  EXPECT_TRUE(late.any_active());
  EXPECT_TRUE(late.to_json()[0]["cpu_s"].is_null());
}

}  // namespace
}  // namespace balerbench
