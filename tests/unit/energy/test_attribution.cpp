// test_attribution.cpp: T7 attribution against known truths. The process tree's CPU time from a fake
// /proc (children lists and the fallback scan of every stat), and windows that split each category's
// energy by the tree's share: CPU by CPU time, GPU by per-process SM samples, with their ± and the
// sums of a phase.
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "harness/energy/energy_window.h"
#include "harness/energy/process_tree.h"
#include "harness/energy/sampler.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

namespace fs = std::filesystem;

// A /proc with a few processes: stat files in ticks, /proc/stat's cpu line, and the children lists.
class FakeProc {
 public:
  explicit FakeProc(std::string root) : root_(std::move(root)) { fs::create_directories(root_); }
  // utime stime cutime cstime, in ticks.
  void process(int pid, int ppid, const std::string& comm, long utime, long stime, long cutime = 0, long cstime = 0) {
    const std::string dir = root_ + "/" + std::to_string(pid);
    fs::create_directories(dir + "/task/" + std::to_string(pid));
    write_text(dir + "/stat", std::to_string(pid) + " (" + comm + ") S " + std::to_string(ppid) +
                                  " 1 1 0 -1 4194304 100 0 0 0 " + std::to_string(utime) + " " +
                                  std::to_string(stime) + " " + std::to_string(cutime) + " " +
                                  std::to_string(cstime) + " 20 0 1 0 100 1000 200\n");
    if (children_lists_ && !fs::exists(dir + "/task/" + std::to_string(pid) + "/children"))
      write_text(dir + "/task/" + std::to_string(pid) + "/children", "");
  }
  void children(int pid, const std::string& list) {
    write_text(root_ + "/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children", list);
  }
  void remove(int pid) { fs::remove_all(root_ + "/" + std::to_string(pid)); }
  // user nice system idle iowait irq softirq steal, in ticks.
  void host(long user, long nice, long system, long idle, long iowait, long irq, long softirq, long steal) {
    write_text(root_ + "/stat", "cpu  " + std::to_string(user) + " " + std::to_string(nice) + " " +
                                    std::to_string(system) + " " + std::to_string(idle) + " " +
                                    std::to_string(iowait) + " " + std::to_string(irq) + " " +
                                    std::to_string(softirq) + " " + std::to_string(steal) + " 0 0\ncpu0 1 2 3\n");
  }
  void without_children_lists() { children_lists_ = false; }
  const std::string& root() const { return root_; }

 private:
  std::string root_;
  bool children_lists_ = true;
};

// The tree under pid 100: 101 (with a comm holding ") (" and spaces), and 101's child 102. Pid 200 is
// not in it. Each read adds user+system+cutime+cstime of the tree; the host's busy time is every field
// but idle and iowait.
void check_tree(bool children_lists) {
  TempDir dir;
  FakeProc proc(dir.path("proc"));
  if (!children_lists) proc.without_children_lists();
  proc.host(1000, 10, 300, 5000, 50, 5, 5, 0);
  proc.process(100, 1, "balerbench", 50, 10, 0, 0);
  proc.process(101, 100, "sh) (x y", 5, 5, 0, 0);
  proc.process(102, 101, "python3", 20, 0, 0, 0);
  proc.process(200, 1, "other", 900, 100, 0, 0);
  if (children_lists) {
    proc.children(100, "101 ");
    proc.children(101, "102");
  }
  ProcessTree tree(proc.root(), 100);
  const double tick = tree.tick_s();
  const ProcessCpu a = tree.read();
  ASSERT_TRUE(a.valid) << tree.unavailable_reason();
  EXPECT_EQ(a.processes, 3);
  EXPECT_EQ(a.tree_cpu_s, 0.0);  // since the first read
  EXPECT_TRUE(tree.contains(102));
  EXPECT_FALSE(tree.contains(200));

  // 30 ticks for the tree (100: +10, 102: +20), 200 for the host's busy time (user 150, irq 10, softirq
  // 20, steal 20; idle and iowait move too and do not count).
  proc.host(1150, 10, 300, 5400, 80, 15, 25, 20);
  proc.process(100, 1, "balerbench", 60, 10, 0, 0);
  proc.process(102, 101, "python3", 40, 0, 0, 0);
  const ProcessCpu b = tree.read();
  ASSERT_TRUE(b.valid);
  EXPECT_NEAR(b.tree_cpu_s, 30 * tick, 1e-12);
  EXPECT_NEAR(b.busy_cpu_s, 200 * tick, 1e-12);
  EXPECT_DOUBLE_EQ(b.tick_s, tick);

  // 102 ends and 101 reaps it: its 40 ticks move into 101's cutime, and nothing is counted twice or lost.
  proc.remove(102);
  if (children_lists) proc.children(101, "");
  proc.process(101, 100, "sh) (x y", 5, 5, 40, 0);
  const ProcessCpu c = tree.read();
  EXPECT_NEAR(c.tree_cpu_s, 30 * tick, 1e-12);
  EXPECT_EQ(c.processes, 2);
  EXPECT_TRUE(tree.contains(102));  // still known: a GPU sample of it may come later

  // 101 is reaped by a process outside the tree (it was re-parented): its 50 ticks leave the sum, which
  // does not run backwards.
  proc.remove(101);
  if (children_lists) proc.children(100, "");
  proc.process(100, 1, "balerbench", 65, 10, 0, 0);
  const ProcessCpu d = tree.read();
  EXPECT_NEAR(d.tree_cpu_s, 30 * tick, 1e-12);
  proc.process(100, 1, "balerbench", 70, 10, 0, 0);
  EXPECT_NEAR(tree.read().tree_cpu_s, 35 * tick, 1e-12);
  EXPECT_EQ(tree.describe()["method"].get<std::string>().find("the kernel's children lists") != std::string::npos, children_lists)
      << tree.describe().dump();

  // The root gone, or no /proc/stat: no reading, and why.
  proc.remove(100);
  EXPECT_FALSE(tree.read().valid);
  EXPECT_NE(tree.unavailable_reason().find("100/stat"), std::string::npos) << tree.unavailable_reason();
  ProcessTree nowhere(dir.path("no-proc"), 100);
  EXPECT_FALSE(nowhere.read().valid);
  EXPECT_NE(nowhere.unavailable_reason().find("no-proc/stat"), std::string::npos);
}

TEST(ProcessTree, SumsTheTreesCpuTimeThroughTheChildrenLists) { check_tree(true); }
TEST(ProcessTree, SumsTheTreesCpuTimeByScanningEveryStat) { check_tree(false); }

// The real /proc: this process's own tree, its CPU time grows with work, and never exceeds the host's.
TEST(ProcessTree, ReadsThisProcessFromTheRealProc) {
  ProcessTree tree;
  const ProcessCpu a = tree.read();
  ASSERT_TRUE(a.valid) << tree.unavailable_reason();
  EXPECT_TRUE(tree.contains(static_cast<unsigned>(getpid())));
  volatile double x = 0;
  for (long i = 0; i < 60000000; ++i) x = x + 1e-9 * static_cast<double>(i % 7);
  const ProcessCpu b = tree.read();
  EXPECT_GT(b.tree_cpu_s, 0.0);
  EXPECT_GT(b.busy_cpu_s, 0.0);
  EXPECT_LE(b.tree_cpu_s, b.busy_cpu_s + 4 * b.tick_s);
}

// A meter with a CPU, a RAM and a GPU domain whose readings are set by the test.
class SetMeter : public EnergyMeter {
 public:
  SetMeter() {
    domains_ = {{"package-0", DomainCategory::kCpu, true, ""},
                {"dram-0", DomainCategory::kRam, true, ""},
                {"gpu0", DomainCategory::kGpu, true, ""}};
  }
  std::string name() const override { return "set"; }
  MeterKind kind() const override { return MeterKind::kMeasured; }
  const std::vector<Domain>& domains() const override { return domains_; }
  double update_period_s() const override { return 0.001; }
  MeterReading read() override { return {}; }

 private:
  std::vector<Domain> domains_;
};

// A snapshot at `t_s` with cumulative energies, the tree's and host's CPU seconds, and the GPU's SM use.
Snapshot at(double t_s, double cpu_j, double ram_j, double gpu_j, double tree_cpu_s, double busy_cpu_s,
            double tree_sm, double all_sm) {
  static const SteadyClock::time_point t0 = SteadyClock::now();
  Snapshot s;
  s.time = t0 + std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(t_s));
  MeterReading r;
  r.time = s.time;
  r.energy_j = {cpu_j, ram_j, gpu_j};
  r.tree_use = {std::nan(""), std::nan(""), tree_sm};
  r.all_use = {std::nan(""), std::nan(""), all_sm};
  s.readings.push_back(r);
  s.process.valid = true;
  s.process.tree_cpu_s = tree_cpu_s;
  s.process.busy_cpu_s = busy_cpu_s;
  s.process.tick_s = 0.01;
  return s;
}

// Window 1: CPU 100 J with the tree at 0.3 of 1.2 busy CPU seconds (share 0.25), GPU 200 J with the
// tree's samples at 600 of 800 percent-samples (0.75). Window 2: CPU 100 J at 0.5, GPU 100 J with no
// SM use at all. RAM is never attributed. The ± of each is share x the energy's ± + the share's ± x
// the energy, the share's from two ticks at each edge (CPU) or one sample of full use (GPU).
TEST(Attribution, WindowsSplitEachCategoryByTheTreesShare) {
  std::vector<std::unique_ptr<EnergyMeter>> meters;
  meters.push_back(std::make_unique<SetMeter>());
  const Snapshot a = at(0, 0, 0, 0, 0, 0, 0, 0);
  const Snapshot b = at(2, 100, 10, 200, 0.3, 1.2, 600, 800);
  const WindowResult w = make_window("train", a, b, {}, meters, nullptr);
  ASSERT_EQ(w.domains.size(), 3u);
  const DomainEnergy &cpu = w.domains[0], &ram = w.domains[1], &gpu = w.domains[2];
  ASSERT_TRUE(cpu.attributable_j);
  EXPECT_NEAR(*cpu.attributable_j, 25.0, 1e-12);
  EXPECT_NEAR(*cpu.attributable_share(), 0.25, 1e-12);
  const double cpu_share_u = 2 * 0.01 * 1.25 / 1.2;
  EXPECT_NEAR(*cpu.attributable_uncertainty_j, 0.25 * *cpu.uncertainty_j() + cpu_share_u * 100, 1e-9);
  EXPECT_FALSE(ram.attributable_j);
  ASSERT_TRUE(gpu.attributable_j);
  EXPECT_NEAR(*gpu.attributable_j, 150.0, 1e-12);
  EXPECT_NEAR(*gpu.attributable_uncertainty_j, 0.75 * *gpu.uncertainty_j() + (100.0 / 800) * 200, 1e-9);
  // Absolute and attributable side by side, never mixed: the totals stay absolute.
  EXPECT_NEAR(w.total_energy_j(), 310.0, 1e-12);
  const auto cpu_a = w.attribution(DomainCategory::kCpu);
  ASSERT_TRUE(cpu_a);
  EXPECT_NEAR(cpu_a->energy_j, 100.0, 1e-12);
  EXPECT_NEAR(*cpu_a->share(), 0.25, 1e-12);
  EXPECT_FALSE(w.attribution(DomainCategory::kRam));
  const nlohmann::json j = w.to_json();
  EXPECT_NEAR(j["attribution"]["cpu"]["attributable_j"].get<double>(), 25.0, 1e-12);
  EXPECT_NEAR(j["attribution"]["cpu"]["tree_cpu_s"].get<double>(), 0.3, 1e-12);
  EXPECT_NEAR(j["attribution"]["cpu"]["busy_cpu_s"].get<double>(), 1.2, 1e-12);
  EXPECT_NEAR(j["attribution"]["gpu"]["share"].get<double>(), 0.75, 1e-12);
  EXPECT_NEAR(j["attribution"]["gpu"]["all_sm_use"].get<double>(), 800, 1e-12);
  EXPECT_NEAR(j["total_energy_j"].get<double>(), 310.0, 1e-12);
  EXPECT_TRUE(j["domains"][1]["attributable_j"].is_null());

  // Window 2, and the phase: each window at its own share.
  const Snapshot c = at(3, 200, 20, 300, 0.8, 2.2, 600, 800);
  const WindowResult w2 = make_window("train", b, c, {}, meters, nullptr);
  EXPECT_NEAR(*w2.domains[0].attributable_j, 50.0, 1e-12);
  EXPECT_NEAR(*w2.domains[2].attributable_j, 0.0, 1e-12);  // no process used the SMs
  EXPECT_NEAR(*w2.domains[2].attributable_uncertainty_j, 0.0, 1e-12);
  PhaseTotals phases;
  phases.add(w);
  phases.add(w2);
  const WindowResult& p = *phases.find("train");
  const auto pc = p.attribution(DomainCategory::kCpu);
  EXPECT_NEAR(pc->attributable_j, 75.0, 1e-12);
  EXPECT_NEAR(pc->energy_j, 200.0, 1e-12);
  EXPECT_NEAR(pc->use_tree, 0.8, 1e-12);
  EXPECT_NEAR(pc->use_all, 2.2, 1e-12);
  EXPECT_NEAR(*pc->attributable_uncertainty_j,
              std::hypot(*w.domains[0].attributable_uncertainty_j, *w2.domains[0].attributable_uncertainty_j), 1e-9);
  EXPECT_NEAR(p.attribution(DomainCategory::kGpu)->attributable_j, 150.0, 1e-12);

  // No CPU tick in a window: the share is anything from none to all, 0.5 ± 0.5.
  const Snapshot d = at(3.001, 200.1, 20, 300, 0.8, 2.2, 600, 800);
  const WindowResult tiny = make_window("tiny", c, d, {}, meters, nullptr);
  EXPECT_NEAR(*tiny.domains[0].attributable_j, 0.05, 1e-9);
  EXPECT_GE(*tiny.domains[0].attributable_uncertainty_j, 0.05 - 1e-9);

  // Without the process tree's figures, or with a GPU whose use is not sampled: no share, and a phase
  // holding such a window has none either.
  Snapshot e = at(4, 300, 30, 400, 1.0, 3.0, 700, 900);
  e.process.valid = false;
  e.readings[0].all_use[2] = std::nan("");
  const WindowResult blind = make_window("train", c, e, {}, meters, nullptr);
  EXPECT_FALSE(blind.domains[0].attributable_j);
  EXPECT_FALSE(blind.domains[2].attributable_j);
  EXPECT_TRUE(blind.to_json()["attribution"].is_null());
  phases.add(blind);
  EXPECT_FALSE(phases.find("train")->attribution(DomainCategory::kCpu));
}

}  // namespace
}  // namespace balerbench
