// power_limit.h: GPU power-limit control with a guaranteed restore.
//
// PowerLimitGuard remembers each GPU's original limit the first time it
// touches it, writes the originals to a journal file before changing
// anything, checks the requested limit against NVML's constraints, sets it,
// and reads back the limit NVML enforces. restore() (also run by the
// destructor, and safe to call from a signal-watching thread) puts every
// original back, reads it back and removes the journal. A run killed with
// SIGKILL cannot restore anything itself: the journal survives it, and the
// next `balerbench run` calls recover_power_limits() first. The journal names
// the process that wrote it (pid and start time, power_hold.h): it is restored
// only once that process is dead, and a run holds the GPUs' limits for its
// whole life (PowerLimitHold), so that two runs never set them at once.
//
// Changing limits needs root or CAP_SYS_ADMIN; without them NVML says
// NVML_ERROR_NO_PERMISSION and set_limit throws PowerLimitError with
// permission = true (the trial is then recorded as skipped).
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "harness/power/power_hold.h"

namespace balerbench {

class NvmlLibrary;

struct PowerLimitError : std::runtime_error {
  PowerLimitError(const std::string& what, bool no_permission) : std::runtime_error(what), permission(no_permission) {}
  bool permission;
};

// The GPUs whose limits can be read and set.
class PowerControl {
 public:
  virtual ~PowerControl() = default;
  virtual std::size_t count() const = 0;
  virtual std::string name(std::size_t i) const = 0;
  virtual std::string uuid(std::size_t i) const = 0;
  virtual double limit_w(std::size_t i) const = 0;                           // the management limit set now
  virtual double enforced_limit_w(std::size_t i) const = 0;                  // what the GPU enforces
  virtual std::pair<double, double> constraints_w(std::size_t i) const = 0;  // min, max
  virtual void set_limit_w(std::size_t i, double limit_w) = 0;               // PowerLimitError
};

// The visible GPUs through NVML (the real driver, or the fake in tests).
class NvmlPowerControl : public PowerControl {
 public:
  // nullptr with `reason` when NVML or its power-limit calls are missing.
  static std::unique_ptr<NvmlPowerControl> open(std::string& reason);
  std::size_t count() const override { return gpus_.size(); }
  std::string name(std::size_t i) const override;
  std::string uuid(std::size_t i) const override;
  double limit_w(std::size_t i) const override;
  double enforced_limit_w(std::size_t i) const override;
  std::pair<double, double> constraints_w(std::size_t i) const override;
  void set_limit_w(std::size_t i, double limit_w) override;
  const NvmlLibrary& library() const { return *lib_; }

 private:
  std::shared_ptr<NvmlLibrary> lib_;
  struct Gpu;
  std::vector<std::shared_ptr<Gpu>> gpus_;
};

// One GPU's limits in a trial.
struct AppliedLimit {
  std::string uuid, name;
  double original_w = 0, requested_w = 0, enforced_w = 0;
  double restored_w = -1;  // enforced after restore; -1 until restored
  nlohmann::json to_json() const;
};

class PowerLimitGuard {
 public:
  PowerLimitGuard(PowerControl& control, std::string journal_path);
  ~PowerLimitGuard();
  PowerLimitGuard(const PowerLimitGuard&) = delete;
  PowerLimitGuard& operator=(const PowerLimitGuard&) = delete;

  // Sets every GPU to `limit_w`. InputError when outside a GPU's constraints
  // (nothing is changed then); PowerLimitError when NVML refuses.
  std::vector<AppliedLimit> apply(double limit_w);
  // Puts back every original limit (idempotent, thread-safe); returns what was restored.
  std::vector<AppliedLimit> restore();
  bool touched() const;
  // Gives up restoring (the GPUs cannot be reached): the journal stays for recover_power_limits().
  void keep_journal();

 private:
  void write_journal_locked() const;
  PowerControl& control_;
  std::string journal_;
  LimitHolder writer_ = LimitHolder::self();  // the journal's writer: this process
  mutable std::mutex mu_;
  std::map<std::size_t, AppliedLimit> touched_;
};

// BALERBENCH_POWER_JOURNAL, else /var/tmp/balerbench-power-limits.json.
std::string default_power_journal_path();

// When `journal_path` exists (an earlier run died before restoring), sets
// each GPU it names back to its original limit and removes it. Returns what
// was restored (empty when there was no journal). InputError, and nothing
// touched, when the process that wrote it still runs: those limits are its own.
std::vector<AppliedLimit> recover_power_limits(PowerControl& control, const std::string& journal_path);

// The process that wrote the journal at `journal_path`; empty when there is none, or it names none.
std::optional<LimitHolder> journal_writer(const std::string& journal_path);

}  // namespace balerbench
