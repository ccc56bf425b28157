// test_hazards.cpp: the hazard list of `balerbench doctor`, `run` and `train` without the host:
// cpufreq governors from fake sysfs trees, CPU use from fake /proc snapshots written by the injected
// sleeper (exact figures: the window is counted in ticks), and collect_hazards() over hand-made
// probes. NVML's part through the fake library is in test_nvml.cpp.
#include <unistd.h>

#include <filesystem>

#include "harness/energy/hazards.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

namespace fs = std::filesystem;

// A fake /sys/devices/system/cpu with one governor per CPU ("" : no cpufreq folder for that CPU).
void write_governors(const std::string& root, const std::vector<std::string>& governors) {
  for (std::size_t i = 0; i < governors.size(); ++i) {
    const std::string cpu = root + "/cpu" + std::to_string(i);
    fs::create_directories(cpu);
    if (governors[i].empty()) continue;
    fs::create_directories(cpu + "/cpufreq");
    write_text(cpu + "/cpufreq/scaling_governor", governors[i] + "\n");
    write_text(cpu + "/cpufreq/scaling_driver", "intel_pstate\n");
  }
  fs::create_directories(root + "/cpufreq");  // not a cpuN entry
}

std::vector<std::string> ids(const HazardReport& r) {
  std::vector<std::string> out;
  for (const auto& h : r.hazards) out.push_back(h.id);
  return out;
}

bool has_note(const HazardReport& r, const std::string& fragment) {
  for (const auto& n : r.notes)
    if (n.find(fragment) != std::string::npos) return true;
  return false;
}

TEST(CpuGovernor, ReadsEachCpusGovernorAndTheDriver) {
  TempDir dir;
  write_governors(dir.root(), {"powersave", "powersave", "performance", "powersave"});
  const CpuGovernors g = read_cpu_governors(dir.root());
  ASSERT_TRUE(g.exposed());
  EXPECT_EQ(g.cpus(), 4);
  EXPECT_EQ(g.driver, "intel_pstate");
  EXPECT_EQ(g.by_name.at("powersave"), (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(g.to_json()["governors"]["powersave"], "0-1,3");
  EXPECT_EQ(cpu_list_text({0, 1, 2, 5, 7, 8}), "0-2,5,7-8");
}

TEST(CpuGovernor, PowersaveIsAHazardAndPerformanceIsNot) {
  TempDir dir;
  write_governors(dir.path("a"), {"powersave", "performance"});
  write_governors(dir.path("b"), {"performance", "performance"});
  HazardProbe p;
  p.build = {"Release", true, true};
  p.governors = read_cpu_governors(dir.path("a"));
  HazardReport r = collect_hazards(p);
  ASSERT_EQ(ids(r), std::vector<std::string>{"cpu_governor_powersave"});
  EXPECT_EQ(r.hazards[0].evidence, "scaling_governor is powersave on CPU 0 (1 of 2; driver intel_pstate)");
  EXPECT_NE(r.hazards[0].fix.find("cpupower frequency-set -g performance"), std::string::npos);
  p.governors = read_cpu_governors(dir.path("b"));
  r = collect_hazards(p);
  EXPECT_TRUE(r.hazards.empty());
  EXPECT_TRUE(has_note(r, "cpu governor: performance on CPUs 0-1; driver intel_pstate"));
}

// A VM: CPUs without cpufreq, or no such folder at all. Nothing is known; the note says so.
TEST(CpuGovernor, NotExposedIsANoteNotAHazard) {
  TempDir dir;
  write_governors(dir.root(), {"", ""});
  for (const std::string& root : {dir.root(), dir.path("absent")}) {
    HazardProbe p;
    p.build = {"Release", true, true};
    p.governors = read_cpu_governors(root);
    EXPECT_FALSE(p.governors.exposed());
    const HazardReport r = collect_hazards(p);
    EXPECT_TRUE(r.hazards.empty());
    EXPECT_TRUE(has_note(r, "cpu governor: not exposed")) << root;
  }
}

// A fake /proc: the "cpu" line of stat, two cpuN lines, and a stat per process.
class FakeProc {
 public:
  FakeProc() { self_ = 4242; }
  const std::string& root() const { return dir_.root(); }
  int self() const { return self_; }
  // Ticks: user nice system idle iowait irq softirq steal.
  void stat(const std::vector<unsigned long long>& f, int cpus = 2) {
    std::string text = "cpu ";
    for (auto v : f) text += " " + std::to_string(v);
    text += " 0 0\n";
    for (int i = 0; i < cpus; ++i) text += "cpu" + std::to_string(i) + " 0 0 0 0 0 0 0 0 0 0\n";
    write_text(dir_.path("stat"), text + "intr 0\nctxt 0\n");
  }
  void process(int pid, const std::string& comm, unsigned long long utime, unsigned long long stime) {
    fs::create_directories(dir_.path(std::to_string(pid)));
    write_text(dir_.path(std::to_string(pid) + "/stat"),
               std::to_string(pid) + " (" + comm + ") S 1 1 1 0 -1 4194304 100 0 0 0 " + std::to_string(utime) + " " +
                   std::to_string(stime) + " 0 0 20 0 1 0 100 1000 100\n");
  }

 private:
  TempDir dir_;
  int self_;
};

// 100 ticks per CPU pass (2 CPUs: 200 in all). Others are busy 70 + 20 + 10 + 5 + 5 ticks = 110, of
// which this process used 20: 90 ticks = 0.9 cores. Steal 10 ticks = 0.1 cores.
TEST(CpuLoad, OtherProcessesBusyTimeInCoresFromTwoSnapshots) {
  FakeProc proc;
  proc.stat({1000, 0, 500, 8000, 0, 0, 0, 0});
  proc.process(proc.self(), "balerbench", 50, 10);
  proc.process(100, "cc1plus", 400, 20);
  proc.process(200, "make (job 2)", 10, 0);
  proc.process(300, "sleepy", 5, 0);
  int slept = 0;
  const CpuLoad l = sample_cpu_load(proc.root(), 0.5, [&](double s) {
    EXPECT_DOUBLE_EQ(s, 0.5);
    ++slept;
    proc.stat({1070, 20, 510, 8075, 5, 5, 5, 10});
    proc.process(proc.self(), "balerbench", 65, 15);
    proc.process(100, "cc1plus", 460, 20);
    proc.process(200, "make (job 2)", 20, 0);
    proc.process(400, "new", 7, 0);  // started in the window: counted whole
  }, proc.self());
  EXPECT_EQ(slept, 1);
  ASSERT_TRUE(l.valid) << l.reason;
  EXPECT_EQ(l.cpus, 2);
  EXPECT_DOUBLE_EQ(l.other_cores, 0.9);
  EXPECT_DOUBLE_EQ(l.steal_cores, 0.1);
  EXPECT_DOUBLE_EQ(l.window_s, 100.0 / static_cast<double>(sysconf(_SC_CLK_TCK)));
  ASSERT_EQ(l.top.size(), 3u);
  EXPECT_EQ(l.top[0].name, "cc1plus");
  EXPECT_DOUBLE_EQ(l.top[0].cores, 0.6);
  EXPECT_EQ(l.top[1].name, "make (job 2)");
  EXPECT_EQ(l.top[1].pid, 200);
  EXPECT_EQ(l.top[2].name, "new");
  EXPECT_DOUBLE_EQ(l.top[2].cores, 0.07);
}

// A sample begun earlier (train begins one as it starts): the first snapshot is the one taken when it
// began, whatever happened to the tree before finish(); the figures are the same as in one go.
TEST(CpuLoad, ASampleBegunEarlierSpansFromItsBeginning) {
  FakeProc proc;
  proc.stat({1000, 0, 500, 8000, 0, 0, 0, 0});
  proc.process(proc.self(), "balerbench", 50, 10);
  proc.process(100, "cc1plus", 400, 20);
  const CpuLoadSample sample(proc.root(), proc.self());
  // The command's own start-up: this process busy, and another process too.
  proc.stat({1040, 0, 505, 8035, 0, 0, 0, 0});
  proc.process(proc.self(), "balerbench", 70, 10);
  proc.process(100, "cc1plus", 420, 20);
  const CpuLoad l = sample.finish(0.5, [&](double s) {
    EXPECT_DOUBLE_EQ(s, 0.5);
    proc.stat({1070, 0, 510, 8120, 0, 0, 0, 0});
    proc.process(proc.self(), "balerbench", 80, 10);
    proc.process(100, "cc1plus", 460, 20);
  });
  ASSERT_TRUE(l.valid) << l.reason;
  // 200 ticks on 2 CPUs: a window of 100; others 80 ticks less this process's 30: 0.5 cores.
  EXPECT_DOUBLE_EQ(l.other_cores, 0.5);
  ASSERT_EQ(l.top.size(), 1u);
  EXPECT_DOUBLE_EQ(l.top[0].cores, 0.6);
}

TEST(CpuLoad, ThisProcessAloneIsNotOtherLoad) {
  FakeProc proc;
  proc.stat({1000, 0, 0, 1000, 0, 0, 0, 0});
  proc.process(proc.self(), "balerbench", 0, 0);
  const CpuLoad l = sample_cpu_load(proc.root(), 0.5, [&](double) {
    proc.stat({1080, 0, 20, 1100, 0, 0, 0, 0});
    proc.process(proc.self(), "balerbench", 80, 20);
  }, proc.self());
  ASSERT_TRUE(l.valid) << l.reason;
  EXPECT_DOUBLE_EQ(l.other_cores, 0.0);
  EXPECT_DOUBLE_EQ(l.steal_cores, 0.0);
  EXPECT_TRUE(l.top.empty());
}

TEST(CpuLoad, UnreadableOrFrozenProcIsInvalidWithAReason) {
  FakeProc proc;
  CpuLoad l = sample_cpu_load(proc.root(), 0.5, [](double) {}, proc.self());
  EXPECT_FALSE(l.valid);
  EXPECT_NE(l.reason.find("/stat"), std::string::npos) << l.reason;
  proc.stat({1000, 0, 0, 1000, 0, 0, 0, 0});
  proc.process(proc.self(), "balerbench", 0, 0);
  l = sample_cpu_load(proc.root(), 0.5, [](double) {}, proc.self());
  EXPECT_FALSE(l.valid);
  EXPECT_NE(l.reason.find("no time passed"), std::string::npos) << l.reason;
  HazardProbe p;
  p.build = {"Release", true, true};
  p.cpu_load = l;
  const HazardReport r = collect_hazards(p);
  EXPECT_TRUE(r.hazards.empty());
  EXPECT_TRUE(has_note(r, "cpu load: not sampled (no time passed"));
}

// The real /proc: a valid sample, whatever the load (no threshold on the host's figures).
TEST(CpuLoad, RealProcGivesAValidSample) {
  const CpuLoad l = sample_cpu_load("/proc", 0.05);
  ASSERT_TRUE(l.valid) << l.reason;
  EXPECT_GE(l.cpus, 1);
  EXPECT_GE(l.other_cores, 0.0);
  for (const auto& p : l.top) EXPECT_NE(p.pid, static_cast<int>(getpid()));
}

HazardProbe quiet_machine() {
  HazardProbe p;
  p.build = {"Release", true, true};
  p.cpu_load.valid = true;
  p.cpu_load.cpus = 2;
  p.cpu_load.window_s = 0.5;
  p.self_pid = 4242;
  return p;
}

TEST(Hazards, CpuBusyAboveTheThresholdWithTheTopProcesses) {
  HazardProbe p = quiet_machine();
  p.cpu_load.other_cores = kOtherCpuHazardCores;  // at the threshold: not a hazard
  HazardReport r = collect_hazards(p);
  EXPECT_TRUE(r.hazards.empty());
  EXPECT_TRUE(has_note(r, "cpu load: 0.25 cores busy with other processes over 0.50 s (2 CPUs)"));
  p.cpu_load.other_cores = 0.93;
  p.cpu_load.top = {{100, "cc1plus", 0.61}, {200, "make", 0.2}};
  r = collect_hazards(p);
  ASSERT_EQ(ids(r), std::vector<std::string>{"cpu_busy"});
  EXPECT_EQ(r.hazards[0].evidence,
            "0.93 cores busy with other processes over 0.50 s (2 CPUs); "
            "top: cc1plus (pid 100) 0.61, make (pid 200) 0.20");
}

TEST(Hazards, StealIsAHazardFromAThresholdAndANoteBelowIt) {
  HazardProbe p = quiet_machine();
  p.cpu_load.steal_cores = 0.02;
  HazardReport r = collect_hazards(p);
  EXPECT_TRUE(r.hazards.empty());
  EXPECT_TRUE(has_note(r, "cpu steal: steal 0.02 cores over 0.50 s"));
  p.cpu_load.steal_cores = 0.3;
  r = collect_hazards(p);
  ASSERT_EQ(ids(r), std::vector<std::string>{"cpu_steal"});
  EXPECT_EQ(r.hazards[0].evidence, "steal 0.30 cores over 0.50 s (/proc/stat)");
}

// Neither RAPL nor a GPU under NVML: every joule is estimated, which doctor lists with what would
// give a measurement; RAPL readable, or a GPU, and it is gone.
TEST(Hazards, NoHardwareMeterIsAHazardWithTheWaysToMeasure) {
  HazardProbe p = quiet_machine();
  p.rapl_note = "no /sys/class/powercap/intel-rapl:0";
  p.nvml_note = "libnvidia-ml.so.1 not found";
  HazardReport r = collect_hazards(p);
  ASSERT_EQ(ids(r), std::vector<std::string>{"no_energy_meter"});
  EXPECT_EQ(r.hazards[0].what, "no hardware energy meter: energy is estimated");
  EXPECT_EQ(r.hazards[0].evidence, "RAPL: no /sys/class/powercap/intel-rapl:0; NVML: libnvidia-ml.so.1 not found");
  EXPECT_NE(r.hazards[0].fix.find("wattmeter"), std::string::npos);
  p.rapl_note.clear();  // RAPL readable
  EXPECT_TRUE(collect_hazards(p).hazards.empty());
}

TEST(Hazards, BlasHazardTextIsSplitAtItsFix) {
  HazardProbe p = quiet_machine();
  p.blas_hazard =
      "OpenBLAS runs its generic Prescott kernel on a CPU with AVX2 (reason). Fix: set BALERBENCH_BLAS_KERNEL=Haswell";
  HazardReport r = collect_hazards(p);
  ASSERT_EQ(ids(r), std::vector<std::string>{"blas_generic_kernel"});
  EXPECT_EQ(r.hazards[0].evidence, "OpenBLAS runs its generic Prescott kernel on a CPU with AVX2 (reason)");
  EXPECT_EQ(r.hazards[0].fix, "set BALERBENCH_BLAS_KERNEL=Haswell");
  p.blas_hazard = "a generic kernel";  // no "Fix:": the whole text is the evidence
  r = collect_hazards(p);
  EXPECT_EQ(r.hazards[0].evidence, "a generic kernel");
  EXPECT_NE(r.hazards[0].fix.find("docs/doctor.md"), std::string::npos);
}

TEST(Hazards, DebugBuildIsAHazard) {
  HazardProbe p = quiet_machine();
  p.build = {"Debug", false, false};
  HazardReport r = collect_hazards(p);
  ASSERT_EQ(ids(r), std::vector<std::string>{"debug_build"});
  EXPECT_EQ(r.hazards[0].evidence,
            "CMAKE_BUILD_TYPE Debug; NDEBUG not defined (assertions on); compiled without optimisation (-O0)");
  p.build = {"", true, false};
  EXPECT_EQ(collect_hazards(p).hazards.at(0).evidence,
            "CMAKE_BUILD_TYPE (none); compiled without optimisation (-O0)");
  // This test program is built as the project is (Release, scripts/setup.sh).
  const BuildInfo b = build_info();
  EXPECT_EQ(b.ndebug && b.optimized, b.build_type == "Release" || b.build_type == "RelWithDebInfo" ||
                                         b.build_type == "MinSizeRel") << b.build_type;
}

NvmlLibrary::GpuState fake_gpu(unsigned long long throttle_mask) {
  NvmlLibrary::GpuState g;
  g.index = 0;
  g.name = "Fake H100";
  g.sm_clock_mhz = 1200u;
  g.temperature_c = 87u;
  g.power_limit_w = 700.0;
  g.persistence_mode = "enabled";
  g.throttle_mask = throttle_mask;
  g.throttle_reasons = throttle_reason_names(throttle_mask);
  g.compute_processes = std::vector<NvmlLibrary::GpuState::Process>{};
  return g;
}

TEST(Hazards, GpuThrottleReasonsAreGroupedIntoHazards) {
  HazardProbe p = quiet_machine();
  p.nvml_available = true;
  p.gpus = {fake_gpu(0x1 | 0x2 | 0x100)};  // idle, application clocks, display clock: not hazards
  EXPECT_TRUE(collect_hazards(p).hazards.empty());
  p.gpus = {fake_gpu(0x40 | 0x8)};  // hw thermal sets hw_slowdown too: one hazard
  HazardReport r = collect_hazards(p);
  ASSERT_EQ(ids(r), std::vector<std::string>{"gpu_thermal_throttle"});
  EXPECT_EQ(r.hazards[0].what, "GPU 0 (Fake H100) is slowed down for heat");
  EXPECT_EQ(r.hazards[0].evidence,
            "throttle reasons: hw_thermal_slowdown; SM clock 1200 MHz; 87 C; power limit 700 W");
  p.gpus = {fake_gpu(0x4 | 0x8 | 0x10 | 0x20 | 0x80)};
  r = collect_hazards(p);
  EXPECT_EQ(ids(r), (std::vector<std::string>{"gpu_thermal_throttle", "gpu_power_brake", "gpu_power_cap",
                                              "gpu_sync_boost"}));
  p.gpus = {fake_gpu(0x8)};  // hw_slowdown alone
  EXPECT_EQ(ids(collect_hazards(p)), std::vector<std::string>{"gpu_hw_slowdown"});
}

TEST(Hazards, GpuPersistenceOffAndOtherProcessesButNotThisOne) {
  HazardProbe p = quiet_machine();
  p.nvml_available = true;
  NvmlLibrary::GpuState g = fake_gpu(0);
  g.persistence_mode = "disabled";
  g.compute_processes = std::vector<NvmlLibrary::GpuState::Process>{{4242, 300.0}, {77, 2048.0}, {78, std::nullopt}};
  p.gpus = {g};
  p.process_names = {{77, "python3"}};
  HazardReport r = collect_hazards(p);
  ASSERT_EQ(ids(r), (std::vector<std::string>{"gpu_persistence_off", "gpu_other_processes"}));
  EXPECT_EQ(r.hazards[1].evidence, "pid 77 (python3, 2048 MiB), pid 78");
  g.persistence_mode = "unknown";  // not answered: not a hazard
  g.compute_processes = std::vector<NvmlLibrary::GpuState::Process>{{4242, 300.0}};
  p.gpus = {g};
  r = collect_hazards(p);
  EXPECT_TRUE(r.hazards.empty());
  EXPECT_TRUE(has_note(r, "gpu0 (Fake H100): SM 1200 MHz, 87 C, power limit 700 W, persistence unknown"));
}

TEST(Hazards, NoNvmlIsANote) {
  HazardProbe p = quiet_machine();
  p.nvml_note = "cannot load libnvidia-ml.so.1";
  const HazardReport r = collect_hazards(p);
  EXPECT_TRUE(r.hazards.empty());
  EXPECT_TRUE(has_note(r, "gpus: NVML not available (cannot load libnvidia-ml.so.1)"));
}

TEST(Hazards, BlockHasALinePerHazardAndIsEmptyWithoutHazards) {
  EXPECT_EQ(format_hazard_block({}), "");
  const std::string block =
      format_hazard_block({{"a", "what a", "evidence a", "fix a"}, {"b", "what b", "ev b", "fix b"}});
  EXPECT_EQ(block,
            "balerbench: 2 hazards on this machine can skew time and energy measurements "
            "(balerbench doctor; docs/doctor.md):\n"
            "  - what a: evidence a. Fix: fix a\n"
            "  - what b: ev b. Fix: fix b\n");
  EXPECT_EQ(format_hazard_line({}), "");
  EXPECT_EQ(format_hazard_line({{"a", "what a", "evidence a", "fix a"}, {"b", "what b", "ev b", "fix b"}}),
            "balerbench: 2 hazards on this machine can skew time and energy measurements: what a; what b "
            "(balerbench doctor for the evidence and the fixes)\n");
  const HazardReport r{{{"a", "w", "e", "f"}}, {}};
  EXPECT_EQ(r.hazards_json(), nlohmann::json::parse(R"([{"id":"a","what":"w","evidence":"e","fix":"f"}])"));
}

}  // namespace
}  // namespace balerbench
