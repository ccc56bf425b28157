// power_session.cpp: see power_session.h.
#include "harness/sweep/power_session.h"

#include <csignal>
#include <filesystem>
#include <vector>

namespace balerbench {
namespace {

void print_restored(const std::vector<AppliedLimit>& restored, const char* when, std::FILE* out) {
  for (const auto& a : restored)
    std::fprintf(out, "power limit: %s (%s) restored to %g W (enforced %g W) %s\n", a.uuid.c_str(), a.name.c_str(),
                 a.original_w, a.restored_w, when);
}

}  // namespace

PowerLimitSession::PowerLimitSession(const Experiment& ex, const std::string& journal_path,
                                     std::atomic<PowerLimitGuard*>& signal_guard, std::FILE* out)
    : out_(out), journal_(journal_path.empty() ? default_power_journal_path() : journal_path),
      signal_guard_(signal_guard) {
  std::string reason;
  if (ex.allow_power_limit_changes || std::filesystem::exists(journal_)) power_ = NvmlPowerControl::open(reason);
  if (power_) print_restored(recover_power_limits(*power_, journal_), "from the journal of an earlier run", out_);
  if (!ex.allow_power_limit_changes) power_.reset();
  if (ex.allow_power_limit_changes && !power_)
    std::fprintf(out_, "power limits: NVML unavailable (%s); limits apply to a simulated_gpu meter if there is one\n",
                 reason.c_str());
  if (power_) guard_ = std::make_unique<PowerLimitGuard>(*power_, journal_);
  signal_guard_ = guard_.get();
}

PowerLimitSession::~PowerLimitSession() { signal_guard_ = nullptr; }  // the signal thread never sees a dead guard

void PowerLimitSession::finish() {
  if (!guard_) return;
  try {
    print_restored(guard_->restore(), "at the end of the sweep", out_);
  } catch (const PowerLimitError& e) {  // a GPU that cannot be reached now (lost, its driver gone)
    std::fprintf(out_, "balerbench: warning: %s; the originals stay in %s, and the next balerbench run restores "
                 "them\n", e.what(), journal_.c_str());
    guard_->keep_journal();  // said once: the guard's destructor does not try again
  }
}

std::function<void(int)> restore_on_signal(std::atomic<PowerLimitGuard*>& signal_guard, std::FILE* out) {
  return [&signal_guard, out](int sig) {
    std::fprintf(out, "\nbalerbench: %s: stopping after restoring power limits; a trial still training is not stored (one "
                 "that finished and waits for a locked database is kept in a side file)\n",
                 sig == SIGINT ? "SIGINT" : sig == SIGHUP ? "SIGHUP" : "SIGTERM");
    if (PowerLimitGuard* g = signal_guard.load()) {
      try {
        print_restored(g->restore(), "on the signal", out);
      } catch (const std::exception& e) {
        std::fprintf(out, "balerbench: restoring power limits failed: %s\n", e.what());
      }
    }
    std::fflush(out);
  };
}

}  // namespace balerbench
