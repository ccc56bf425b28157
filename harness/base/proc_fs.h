// proc_fs.h: the one reader of Linux's /proc. The host's CPU times (/proc/stat), a process's stat,
// statm, status, comm and cmdline, the boot id, the processes and a thread's children are read here
// and parsed into structs, and the peak resident set is reset here; cpu_activity, processes,
// energy's CPU load, process tree and hazards, monitor's process stats and engine's memory peaks use
// them, the cpuinfo and meminfo readers (system_info, blas_kernel, host_info) take their text
// from read_proc_text, and blas_kernel's check of a kernel runs the program read_self_exe names. `proc_root` is "/proc", or a fake tree in tests. A file that cannot be read
// parses as empty: each struct says what it holds. The parsers take the text, for tests and fuzzing.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace balerbench {

// The text of a file under /proc; "" when it cannot be read.
std::string read_proc_text(const std::string& path);
// Its first line, without the newline; "" when it cannot be read.
std::string read_proc_line(const std::string& path);

// /proc/stat: the aggregate "cpu" line in ticks, the cpuN lines, btime.
struct HostStat {
  enum Field { kUser, kNice, kSystem, kIdle, kIowait, kIrq, kSoftirq, kSteal };
  std::array<unsigned long long, 8> cpu{};  // user nice system idle iowait irq softirq steal
  int cpu_fields = 0;   // how many of them the "cpu" line held, in order (0: no such line)
  bool cpu_first = false;  // the "cpu" line is the file's first
  int cpus = 0;         // the cpuN lines
  std::optional<double> boot_unix_s;  // btime: the boot, in seconds since the epoch
  // The first `n` fields are all there.
  bool has_cpu(int n) const { return cpu_fields >= n; }
};
HostStat parse_host_stat(const std::string& text);
HostStat read_host_stat(const std::string& proc_root = "/proc");

// /proc/PID/stat: "pid (comm) state ppid ... utime stime cutime cstime ... num_threads ... starttime".
// The command name may hold spaces and parentheses, so the fields are counted from the last ')'.
struct PidStat {
  std::string comm;         // field 2, without its parentheses
  std::vector<std::string> fields;  // fields[k - 3] is field k of proc(5); empty when unreadable
  int64_t ppid = 0;         // field 4
  // Fields 14-17 in ticks: user and system time, and those of the waited-for children.
  double utime = 0, stime = 0, cutime = 0, cstime = 0;
  // Those of fields 14-17 that are present are all numbers >= 0.
  bool times_valid = false;
  int64_t threads = 0;      // field 20
  std::string starttime;    // field 22, as written (with the pid, a process's identity); "" when absent
  // Field k of proc(5) is there.
  bool has(int k) const { return static_cast<int>(fields.size()) >= k - 2; }
};
PidStat parse_pid_stat(const std::string& text);
PidStat read_pid_stat(const std::string& proc_root, int64_t pid);  // pid 0: "self"

// /proc/PID/statm: the first two fields, in pages.
struct PidStatm {
  bool ok = false;
  double size_pages = 0, resident_pages = 0;
};
PidStatm parse_pid_statm(const std::string& text);
PidStatm read_pid_statm(const std::string& proc_root, int64_t pid);  // pid 0: "self"

// /proc/PID/comm without its newline; /proc/PID/cmdline with its NULs as spaces and no trailing
// space. "" when unreadable.
std::string read_pid_comm(const std::string& proc_root, int64_t pid);
std::string read_pid_cmdline(const std::string& proc_root, int64_t pid);

// A "Key:   123 kB" line of a process's status file, in KiB; none when the key is missing or the
// file cannot be read (pid 0: "self"). The parser takes the file's text.
std::optional<double> parse_status_kib(const std::string& text, const std::string& key);
std::optional<double> read_status_kib(const std::string& proc_root, int64_t pid, const std::string& key);
// Resets this process's peak resident set (VmHWM) to the current one: "5" written to
// /proc/self/clear_refs (the kernel's Documentation/filesystems/proc.rst). "" when done, else why not.
std::string reset_self_peak_rss(const std::string& proc_root = "/proc");

// /proc/sys/kernel/random/boot_id: one id per boot; "" when unreadable.
std::string read_boot_id(const std::string& proc_root = "/proc");

// /proc/self/exe: the path of this process's program (the link's target); "" when unreadable.
std::string read_self_exe(const std::string& proc_root = "/proc");

// The numeric entries of a /proc folder (proc_root: the processes; PID/task: the threads), unsorted.
std::vector<std::string> proc_numeric_entries(const std::string& dir);
// /proc/PID/task/TID/children: the pids it lists. Empty when unreadable (`readable` says which).
std::vector<int> read_task_children(const std::string& proc_root, int64_t pid, const std::string& tid,
                                    bool* readable = nullptr);

}  // namespace balerbench
