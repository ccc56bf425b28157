// test_proc_fs.cpp: the one reader of /proc (base/proc_fs.h) on fake text and a fake tree: the host's
// CPU ticks and btime, a process's stat (a command name with spaces and parentheses), statm, comm,
// cmdline, the boot id, the numeric entries and a thread's children; and this machine's own /proc.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "harness/base/proc_fs.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

namespace fs = std::filesystem;

TEST(ProcFs, HostStatReadsTheCpuLineTheCpusAndBtime) {
  const HostStat h = parse_host_stat(
      "cpu  100 20 30 1000 5 1 2 40 0 0\ncpu0 50 10 15 500 2 0 1 20 0 0\ncpu1 50 10 15 500 3 1 1 20 0 0\n"
      "intr 1 2 3\nbtime 1700000000\n");
  EXPECT_TRUE(h.cpu_first);
  EXPECT_EQ(h.cpu_fields, 8);
  EXPECT_TRUE(h.has_cpu(8));
  EXPECT_EQ(h.cpu[HostStat::kUser], 100u);
  EXPECT_EQ(h.cpu[HostStat::kIdle], 1000u);
  EXPECT_EQ(h.cpu[HostStat::kSteal], 40u);
  EXPECT_EQ(h.cpus, 2);
  ASSERT_TRUE(h.boot_unix_s.has_value());
  EXPECT_DOUBLE_EQ(*h.boot_unix_s, 1700000000);
}

TEST(ProcFs, HostStatSaysWhatIsMissing) {
  const HostStat old_kernel = parse_host_stat("cpu 1 2 3 4 5 6 7\n");
  EXPECT_EQ(old_kernel.cpu_fields, 7);
  EXPECT_TRUE(old_kernel.has_cpu(7));
  EXPECT_FALSE(old_kernel.has_cpu(8));
  const HostStat later = parse_host_stat("intr 0\ncpu 1 2 3 4 5 6 7 8\n");
  EXPECT_EQ(later.cpu_fields, 8);
  EXPECT_FALSE(later.cpu_first);
  const HostStat none = parse_host_stat("");
  EXPECT_EQ(none.cpu_fields, 0);
  EXPECT_EQ(none.cpus, 0);
  EXPECT_FALSE(none.boot_unix_s.has_value());
  TempDir t;
  EXPECT_EQ(read_host_stat(t.root()).cpu_fields, 0);  // no stat file
}

TEST(ProcFs, PidStatCountsFieldsFromTheLastParenthesis) {
  const PidStat st = parse_pid_stat("42 (a (b) c) S 7 1 1 0 -1 4194304 100 0 0 0 11 22 33 44 20 0 5 0 9876 1000 100\n");
  EXPECT_EQ(st.comm, "a (b) c");
  EXPECT_EQ(st.fields.front(), "S");
  EXPECT_TRUE(st.has(22));
  EXPECT_FALSE(st.has(26));
  EXPECT_EQ(st.ppid, 7);
  EXPECT_DOUBLE_EQ(st.utime, 11);
  EXPECT_DOUBLE_EQ(st.stime, 22);
  EXPECT_DOUBLE_EQ(st.cutime, 33);
  EXPECT_DOUBLE_EQ(st.cstime, 44);
  EXPECT_TRUE(st.times_valid);
  EXPECT_EQ(st.threads, 5);
  EXPECT_EQ(st.starttime, "9876");
}

TEST(ProcFs, PidStatSaysWhatIsMissingOrDamaged) {
  const PidStat short_line = parse_pid_stat("1 (x) R 1 1 1 0 -1 0 0 0 0 0 7 0 0 0\n");
  EXPECT_TRUE(short_line.has(17));
  EXPECT_FALSE(short_line.has(20));
  EXPECT_EQ(short_line.starttime, "");
  EXPECT_DOUBLE_EQ(short_line.utime, 7);
  EXPECT_FALSE(parse_pid_stat("1 (x) R 1 1 1 0 -1 0 0 0 0 0 7 -1 0 0\n").times_valid);
  EXPECT_FALSE(parse_pid_stat("1 (x) R 1 1 1 0 -1 0 0 0 0 0 7 x 0 0\n").times_valid);
  EXPECT_TRUE(parse_pid_stat("no parenthesis here").fields.empty());
  EXPECT_TRUE(parse_pid_stat("").fields.empty());
}

TEST(ProcFs, StatmCommCmdlineBootIdAndChildrenFromAFakeTree) {
  TempDir t;
  fs::create_directories(t.path("12/task/12"));
  fs::create_directories(t.path("123456/task"));
  fs::create_directories(t.path("sys/kernel/random"));
  fs::create_directories(t.path("self"));
  write_text(t.path("12/statm"), "1000 250 30 1 0 100 0\n");
  write_text(t.path("12/comm"), "balerbench\n");
  write_text(t.path("12/cmdline"), std::string("balerbench\0run\0exp.json\0", 25));
  write_text(t.path("12/task/12/children"), "13 14 \n");
  write_text(t.path("sys/kernel/random/boot_id"), "0f1e2d3c\n");
  write_text(t.path("self/statm"), "2 1\n");
  const PidStatm m = read_pid_statm(t.root(), 12);
  ASSERT_TRUE(m.ok);
  EXPECT_DOUBLE_EQ(m.size_pages, 1000);
  EXPECT_DOUBLE_EQ(m.resident_pages, 250);
  EXPECT_DOUBLE_EQ(read_pid_statm(t.root(), 0).size_pages, 2);  // pid 0: "self"
  EXPECT_FALSE(read_pid_statm(t.root(), 99).ok);
  EXPECT_FALSE(parse_pid_statm("7").ok);
  EXPECT_EQ(read_pid_comm(t.root(), 12), "balerbench");
  EXPECT_EQ(read_pid_cmdline(t.root(), 12), "balerbench run exp.json");
  EXPECT_EQ(read_pid_cmdline(t.root(), 99), "");
  EXPECT_EQ(read_boot_id(t.root()), "0f1e2d3c");
  std::vector<std::string> pids = proc_numeric_entries(t.root());
  std::sort(pids.begin(), pids.end());
  EXPECT_EQ(pids, (std::vector<std::string>{"12", "123456"}));
  bool readable = false;
  EXPECT_EQ(read_task_children(t.root(), 12, "12", &readable), (std::vector<int>{13, 14}));
  EXPECT_TRUE(readable);
  EXPECT_TRUE(read_task_children(t.root(), 123456, "123456", &readable).empty());
  EXPECT_FALSE(readable);
  EXPECT_EQ(read_proc_text(t.path("nothing")), "");
  EXPECT_EQ(read_proc_line(t.path("12/cmdline")), std::string("balerbench\0run\0exp.json\0", 25));
}

TEST(ProcFs, ReadsThisMachine) {
  if (!fs::exists("/proc/self/stat")) GTEST_SKIP() << "no /proc here";
  const HostStat h = read_host_stat();
  EXPECT_TRUE(h.cpu_first);
  EXPECT_TRUE(h.has_cpu(7));
  EXPECT_GE(h.cpus, 1);
  EXPECT_TRUE(h.boot_unix_s.has_value());
  const PidStat self = read_pid_stat("/proc", static_cast<int64_t>(getpid()));
  EXPECT_TRUE(self.has(22));
  EXPECT_TRUE(self.times_valid);
  EXPECT_GE(self.threads, 1);
  EXPECT_EQ(self.starttime, read_pid_stat("/proc", 0).starttime);
  EXPECT_TRUE(read_pid_statm("/proc", 0).ok);
  EXPECT_FALSE(read_pid_cmdline("/proc", 0).empty());
}

TEST(ProcFs, StatusLinesInKib) {
  const std::string status = "Name:\tbalerbench\nVmHWM:\t  20480 kB\nVmRSS:\t   1024 kB\nThreads:\t2\n";
  EXPECT_EQ(parse_status_kib(status, "VmHWM"), std::optional<double>(20480));
  EXPECT_EQ(parse_status_kib(status, "VmRSS"), std::optional<double>(1024));
  EXPECT_FALSE(parse_status_kib(status, "VmSwap").has_value());
  EXPECT_FALSE(parse_status_kib(status, "Vm").has_value());  // a key is matched whole, with its colon
  EXPECT_FALSE(parse_status_kib("VmRSS:\t-- kB\n", "VmRSS").has_value());
  EXPECT_FALSE(read_status_kib("/nonexistent-proc", 0, "VmRSS").has_value());
  if (fs::exists("/proc/self/status")) EXPECT_GT(read_status_kib("/proc", 0, "VmRSS").value_or(0), 0);
  EXPECT_FALSE(reset_self_peak_rss("/nonexistent-proc").empty());
}

TEST(ProcFs, SelfExeIsTheLinksTarget) {
  TempDir t;
  fs::create_directories(t.path("self"));
  fs::create_symlink("/opt/balerbench/bin/balerbench", t.path("self/exe"));  // need not exist
  EXPECT_EQ(read_self_exe(t.root()), "/opt/balerbench/bin/balerbench");
  EXPECT_EQ(read_self_exe(t.path("nothing")), "");
  if (!fs::exists("/proc/self/exe")) return;
  const std::string exe = read_self_exe();
  EXPECT_TRUE(fs::is_regular_file(exe)) << exe;
  EXPECT_TRUE(fs::equivalent(exe, "/proc/self/exe")) << exe;
}

}  // namespace
}  // namespace balerbench
