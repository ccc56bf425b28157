// power_session.cpp: see power_session.h.
#include "harness/sweep/power_session.h"

#include <csignal>
#include <filesystem>
#include <vector>

#include "common/error.h"
#include "harness/power/power_hold.h"

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
  const bool journal = std::filesystem::exists(journal_);
  if (ex.allow_power_limit_changes || journal) power_ = NvmlPowerControl::open(reason);
  if (power_) take_hold(ex, journal);
  if (!ex.allow_power_limit_changes) {
    power_.reset();
    hold_.reset();  // a run that sets nothing holds nothing once a dead run's journal is restored
  }
  if (ex.allow_power_limit_changes && !power_)
    std::fprintf(out_, "power limits: NVML unavailable (%s); limits apply to a simulated_gpu meter if there is one\n",
                 reason.c_str());
  if (power_) guard_ = std::make_unique<PowerLimitGuard>(*power_, journal_);
  signal_guard_ = guard_.get();
}

PowerLimitSession::~PowerLimitSession() { signal_guard_ = nullptr; }  // the signal thread never sees a dead guard

// The hold on the GPUs' limits (power_hold.h), then a dead run's journal restored. Another live run
// holding them: a run that would set limits is refused (it would reset that run's mid-trial); one
// that sets none leaves them and that run's journal alone.
void PowerLimitSession::take_hold(const Experiment& ex, bool journal) {
  std::string holder;
  hold_ = PowerLimitHold::take(journal_, holder);
  if (!hold_) {
    if (ex.allow_power_limit_changes)
      throw InputError("the GPUs' power limits are held by another balerbench run (" + holder + ", lock " +
                           power_hold_path(journal_) + "): two runs that set limits would reset each other's "
                           "mid-trial",
                       "run this experiment once that run ends, or without allow_power_limit_changes");
    std::fprintf(out_, "power limits: held by another balerbench run (%s); this run sets none and leaves its "
                 "journal alone\n", holder.c_str());
    power_.reset();
    return;
  }
  if (!journal) return;
  // Free to take, yet its writer runs: a balerbench from before the hold, or one not yet reaped.
  if (const auto writer = journal_writer(journal_); writer && writer->alive()) {
    if (ex.allow_power_limit_changes)
      throw InputError("the power-limit journal " + journal_ + " belongs to a balerbench run that still runs (" +
                           writer->describe() + "): its limits are its own to put back",
                       "run this experiment once that run ends, or without allow_power_limit_changes");
    std::fprintf(out_, "power limits: the journal %s belongs to a run that still runs (%s); left alone\n",
                 journal_.c_str(), writer->describe().c_str());
    power_.reset();
    return;
  }
  print_restored(recover_power_limits(*power_, journal_), "from the journal of an earlier run", out_);
}

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
  return [&signal_guard, stream = out](int sig) {
    // A closed stdout (StopSignals' SIGPIPE) is said on stderr: what goes to stdout is lost.
    std::FILE* const out = sig == SIGPIPE ? stderr : stream;
    std::fprintf(out, "\nbalerbench: %s: stopping after restoring power limits; a trial still training is not stored (one "
                 "that finished and waits for a locked database is kept in a side file)\n",
                 sig == SIGINT    ? "SIGINT"
                 : sig == SIGHUP  ? "SIGHUP"
                 : sig == SIGPIPE ? "stdout was closed (its reader ended, as `| head` does)"
                                  : "SIGTERM");
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
