// processes.h: this process as other processes can recognise it, whether a process it names is still
// alive, and which other balerbench processes run on this machine. The results database's claims
// (store.h) name their holder this way, and a trial lists the balerbench processes that ran beside
// it, since they competed for the same CPUs and their power is in the same meters.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace balerbench {

// A process, told apart from a later one that reuses its pid (start time) and from one on another
// machine or an earlier boot (host name and the kernel's boot id).
struct ProcessIdentity {
  std::string host, boot_id;
  int64_t pid = 0;
  std::string start_ticks;  // field 22 of /proc/PID/stat: clock ticks from boot to the process's start
};

ProcessIdentity this_process(const std::string& proc_root = "/proc");
// The start ticks of process `pid`, nullopt when there is no such process (or /proc cannot say).
std::optional<std::string> process_start_ticks(int64_t pid, const std::string& proc_root = "/proc");
// Whether `p`, on this boot of this machine, is still running (the same pid with the same start time).
// False for a process of another boot or machine: only its own heartbeats can say (store.h).
bool process_alive(const ProcessIdentity& p, const std::string& proc_root = "/proc");
bool same_boot(const ProcessIdentity& a, const ProcessIdentity& b);

struct PeerProcess {
  int64_t pid = 0;
  std::string command;  // its command line, arguments joined by spaces (cut at 200 bytes)
  double cpu_s = 0;     // user + system time so far
  std::string start_ticks;  // as ProcessIdentity's: a reused pid is another process
};
// The other balerbench processes on this machine (by their command name), this one and its own
// children left out.
std::vector<PeerProcess> other_balerbench_processes(const std::string& proc_root = "/proc");

// Other balerbench processes seen over a window, from samples taken at its points (a trial's start,
// its phases' ends): which ran, and how much CPU each used between the first and the last time it
// was seen. One that starts or ends inside the window counts as active: its CPU time there is unknown.
class PeerWatch {
 public:
  explicit PeerWatch(std::string proc_root = "/proc") : proc_root_(std::move(proc_root)) {}
  void sample();
  // Above this many CPU seconds in the window, a peer competed for the CPUs.
  static constexpr double kActiveCpuS = 0.05;
  bool any_active() const;
  // [{"pid", "command", "cpu_s" (null when seen once), "samples_seen", "of_samples", "active"}]
  nlohmann::json to_json() const;
  // "another balerbench ran beside it (pid 123: balerbench run a.json, 4.2 CPU-s)", or empty.
  std::string reason() const;

 private:
  struct Seen {
    PeerProcess first, last;
    int samples = 0;
  };
  std::string proc_root_;
  std::map<std::string, Seen> seen_;  // by pid and start: a reused pid is another process
  int samples_ = 0;
  bool active(const Seen& s) const;
};

}  // namespace balerbench
