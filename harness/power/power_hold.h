// power_hold.h: one balerbench run at a time sets GPU power limits on a machine, and a journal is
// restored only when the run that wrote it is dead.
//
// A run that may set limits holds them for as long as it runs: an exclusive flock on a lock file
// beside the power-limit journal (JOURNAL.lock, power_limit.h), which the kernel gives back however
// the process ends (SIGKILL included), and which names its holder for whoever finds it taken. The
// journal names its writer the same way (LimitHolder: host, boot, pid and the pid's start time, as the
// results database's claims name theirs), so that a second run never puts back the originals of a
// run still mid-trial (was: "restored to 300 W from the journal of an earlier run" while that run,
// alive, measured a trial it recorded at 150 W).
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <string>

#include "harness/base/processes.h"

namespace balerbench {

// The process that holds the GPUs' limits, or wrote a journal.
struct LimitHolder {
  ProcessIdentity process;
  double since_unix_s = 0;  // when it took the hold or wrote the journal

  // This process, now.
  static LimitHolder self();
  // The holder written in `j` (a journal or a lock file); empty when `j` names none. A journal of an
  // older balerbench names only its pid.
  static std::optional<LimitHolder> from_json(const nlohmann::json& j);
  nlohmann::json to_json() const;  // {"pid", "host", "boot_id", "start_ticks", "since_unix_s"}
  // Whether it still runs: the same pid with the same start time on this boot of this machine. A holder
  // named by its pid alone (an older journal) counts as alive while any process has that pid.
  bool alive() const;
  std::string describe() const;  // "pid 123 on host, started 12:34:56"
};

// The hold on the GPUs' limits: the lock file's flock, kept until destroyed.
class PowerLimitHold {
 public:
  // Takes the hold beside `journal_path`; null when another live process has it, with `holder` saying
  // which ("pid 123 on host, started 12:34:56", or that the lock file does not say). InputError when
  // the lock file cannot be opened (a folder that cannot be written).
  static std::unique_ptr<PowerLimitHold> take(const std::string& journal_path, std::string& holder);
  ~PowerLimitHold();
  PowerLimitHold(const PowerLimitHold&) = delete;
  PowerLimitHold& operator=(const PowerLimitHold&) = delete;

 private:
  explicit PowerLimitHold(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// JOURNAL.lock.
std::string power_hold_path(const std::string& journal_path);

}  // namespace balerbench
