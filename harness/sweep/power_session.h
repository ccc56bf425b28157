// power_session.h: the GPU power limits of one sweep. The run takes the hold on the GPUs' limits
// (power_hold.h: one run at a time sets them; another live run holding them refuses a run that would
// set limits, exit code 2, naming it), and a journal left by a killed run is restored first; then,
// when the experiment allows changes and NVML can set limits, a guard that trials set limits through,
// restored after every trial (trial.cpp), at the end of the sweep (finish), and at once on
// SIGINT/SIGTERM/SIGHUP or a closed stdout (restore_on_signal, from the signal thread).
#pragma once

#include <atomic>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>

#include "harness/power/power_limit.h"
#include "harness/sweep/experiment.h"

namespace balerbench {

class PowerLimitSession {
 public:
  // `journal_path`: empty for default_power_journal_path(). `signal_guard` is what the stop
  // signal's handler reads (restore_on_signal): set here, cleared before the guard dies.
  PowerLimitSession(const Experiment& ex, const std::string& journal_path,
                    std::atomic<PowerLimitGuard*>& signal_guard, std::FILE* out);
  ~PowerLimitSession();
  PowerLimitSession(const PowerLimitSession&) = delete;
  PowerLimitSession& operator=(const PowerLimitSession&) = delete;

  PowerControl* power() const { return power_.get(); }  // null: no limits may be set
  PowerLimitGuard* guard() const { return guard_.get(); }
  // Restores every limit at the end of the sweep; a GPU that cannot be reached keeps its original
  // in the journal for the next run, which it says.
  void finish();

 private:
  void take_hold(const Experiment& ex, bool journal);
  std::FILE* out_;
  std::string journal_;
  std::unique_ptr<PowerLimitHold> hold_;  // declared before the guard: given back after it restores
  std::unique_ptr<PowerControl> power_;
  std::unique_ptr<PowerLimitGuard> guard_;
  std::atomic<PowerLimitGuard*>& signal_guard_;
};

// The stop signal's handler for a sweep: says it stops, and restores the limits of the guard in
// `signal_guard` (when there is one) at once.
std::function<void(int)> restore_on_signal(std::atomic<PowerLimitGuard*>& signal_guard, std::FILE* out);

}  // namespace balerbench
