// trial_turn.cpp: see trial_turn.h.
#include "harness/sweep/trial_turn.h"

#include <chrono>
#include <cstdio>

#include "harness/base/processes.h"
#include "harness/store/side_files.h"

namespace balerbench {
namespace {

std::string fmt_opt(const std::optional<double>& v, const char* unit) {
  if (!v) return "-";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.3f %s", *v, unit);
  return buf;
}

// "3/12 (grid #5)", or for a recurrence's attempt (n 0: the count is not known ahead) "3 (attempt #2)".
std::string place(const TrialSpec& t, std::size_t i, std::size_t n) {
  const std::string number = std::to_string(i + 1) + (n ? "/" + std::to_string(n) : "");
  return number + (t.recurrence ? " (attempt #" : " (grid #") + std::to_string(t.grid_index) + ")";
}

}  // namespace

// The trial's result line: its figures and target, or why it failed or was skipped.
void print_outcome(const TrialRecord& rec, std::FILE* out) {
  if (rec.status != TrialStatus::kOk) {
    std::fprintf(out, "   %s: %s\n", trial_status_name(rec.status), rec.error.c_str());
    return;
  }
  const std::string target =
      rec.spec["target"].is_null() ? "none"
      : rec.target_reached ? "reached at epoch " + std::to_string(*rec.epochs_to_target) + " (TTA " +
                                 fmt_opt(rec.tta_s, "s") + ", ETA " + fmt_opt(rec.eta_j, "J") + ")"
                           : "not reached";
  std::fprintf(out, "   ok: train %s, %s; compress %s; decompress %s; target %s\n", fmt_opt(rec.train_s, "s").c_str(),
               fmt_opt(rec.train_energy_j, "J").c_str(), fmt_opt(rec.compress_s, "s").c_str(),
               fmt_opt(rec.decompress_s, "s").c_str(), target.c_str());
}

void print_summary(const SweepSummary& sum, const SweepOptions& o, std::FILE* out) {
  std::string by_other =
      sum.stored_by_other ? ", " + std::to_string(sum.stored_by_other) +
                                " more ran here but another run stored them first (split the grid with --shard to share "
                                "the work)"
                          : "";
  if (sum.held_by_other)
    by_other += ", " + std::to_string(sum.held_by_other) +
                " being run by another balerbench (run the same command again once it ends, to pick up any it does "
                "not finish)";
  std::fprintf(out, "\n%s: %lld ran (%lld ok, %lld failed, %lld skipped), %lld were already stored%s; database %s\n",
               sum.signal                 ? "interrupted"
               : !sum.store_error.empty() ? "stopped (a trial could not be stored)"
                                          : "done",
               static_cast<long long>(sum.ran), static_cast<long long>(sum.ok),
               static_cast<long long>(sum.failed), static_cast<long long>(sum.skipped),
               static_cast<long long>(sum.already_done), by_other.c_str(), o.db_path.c_str());
}

// `write()`, tried again while the database stays locked by another connection, for up to
// o.db_wait_s in all: each try waits at most kStoreLockTryS (SQLite's busy timeout, set by the plan), so
// the first wait is said at once and a stop signal is seen within that; the last StoreBusyError
// otherwise (and at once on a stop signal: the caller keeps a finished trial aside).
template <typename F>
auto TrialTurn::waiting_for_lock(F write) -> decltype(write()) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(o.db_wait_s);
  for (bool told = false;; told = true) {
    try {
      return write();
    } catch (const StoreBusyError&) {
      if (!told)
        std::fprintf(out, "   %s is locked by another program: waiting up to %g s in all for it (--db-wait)\n",
                     o.db_path.c_str(), o.db_wait_s);
      std::fflush(out);
      if (std::chrono::steady_clock::now() >= deadline || (ctx.stop && ctx.stop->load() != 0)) throw;
    }
  }
}

bool TrialTurn::run(const TrialSpec& t, std::size_t i, std::size_t n, std::optional<TrialRecord>* ran) {
  // Another run into the same database (a second shell, a Slurm array without --shard) may have
  // stored this trial since the grid was read, or be running it now: skip it rather than run it twice.
  std::optional<ClaimRelease> release;
  std::string taken_over;
  if (!t.warmup) {
    ClaimOutcome claim;
    try {
      claim = waiting_for_lock([&] {
        return store.claim_trial(t.key, claims.holder, claims.retry_before,
                                 [this](const Claim& c) { return claim_alive(c, claims.me, unix_time_s()); });
      });
    } catch (const StoreWriteError& e) {  // a full disk or a lock before the trial: nothing is lost yet
      return stop_on(e, "\n   not run");
    }
    if (claim.kind != ClaimOutcome::kClaimed) {
      skipped(t, claim, i, n);
      return true;
    }
    if (claim.taken_over)
      taken_over = "   claimed by " + describe_claim(*claim.taken_over) + ", which no longer runs: this run takes it over\n";
    release.emplace(store, t.key, claims.holder);
  }
  if (!ctx.dataset) ctx.dataset = load_experiment_dataset(ex.dataset);  // the plan loads it when anything runs
  ctx.run_ordinal = static_cast<int64_t>(i) + 1;
  header(t, i, n);
  std::fputs(taken_over.c_str(), out);
  std::fflush(out);
  const TrialRecord rec = measure_trial(t, ctx);
  return store_trial(rec, release, ran);
}

// Stores a finished trial, waiting for a lock held by another program; a trial that still cannot be
// stored is kept in a side file beside the database (side_files.h), never dropped. False when the
// sweep must stop.
bool TrialTurn::store_trial(const TrialRecord& rec, std::optional<ClaimRelease>& release, std::optional<TrialRecord>* ran) {
  try {
    waiting_for_lock([&] { return store.insert_trial(rec, o.retry_failed); });
    if (release) release->armed = false;  // the stored trial took its claim with it
  } catch (const StoreBusyError& e) {
    // The claim cannot be given back either (the database is locked): it is left to be taken over, as
    // its holder, this process, ends.
    if (release) release->armed = false;
    return keep_aside(rec, e);
  } catch (const StoreWriteError& e) {  // nothing after it could be stored either: stop here
    return stop_on(e, "   not stored");
  } catch (const std::exception&) {
    // The same trial stored by another run while this one ran it: theirs is kept, this run goes on.
    if (!store.trial_status(rec.key)) throw;
    std::fprintf(out, "   not stored: another run stored this trial while this one ran it (theirs is kept)\n");
    std::fflush(out);
    ++sum.stored_by_other;
    return true;
  }
  count(rec);
  if (ran) *ran = rec;
  return true;
}


// The finished trial in a side file, and the sweep stopped with exit code 4, saying where it is.
bool TrialTurn::keep_aside(const TrialRecord& rec, const StoreBusyError& e) {
  try {
    const std::string side = keep_trial_aside(o.db_path, {ex.name, ex.source, ex.raw}, rec);
    count(rec);
    return stop_on(StoreWriteError(std::string(e.what()) + "; the finished trial is kept in " + side +
                                   " (the next `balerbench run` into " + o.db_path + " folds it in; or `balerbench merge " +
                                   o.db_path + " " + side + " --out MERGED.sqlite`)"),
                   "   not stored");
  } catch (const StoreWriteError& side_error) {
    return stop_on(StoreWriteError(std::string(e.what()) + "; " + side_error.what()), "   not stored");
  }
}

void TrialTurn::count(const TrialRecord& rec) {
  ++sum.ran;
  if (rec.status == TrialStatus::kOk) ++sum.ok;
  else (rec.status == TrialStatus::kFailed ? sum.failed : sum.skipped)++;
  print_outcome(rec, out);
  std::fflush(out);
}

// `what` is the line's start as printed ("\n   not run", "   not stored").
bool TrialTurn::stop_on(const StoreWriteError& e, const char* what) {
  sum.store_error = e.what();
  std::fprintf(out, "%s: %s\n", what, e.what());
  std::fflush(out);
  return false;
}

void TrialTurn::skipped(const TrialSpec& t, const ClaimOutcome& claim, std::size_t i, std::size_t n) {
  const bool stored = claim.kind == ClaimOutcome::kStored;
  std::fprintf(out, "\n== trial %s: %s: %s, skipped\n", place(t, i, n).c_str(), t.label().c_str(),
               stored ? "already stored by another run"
                      : ("being run by another balerbench (" + describe_claim(*claim.other) + ")").c_str());
  ++(stored ? sum.already_done : sum.held_by_other);
}

void TrialTurn::header(const TrialSpec& t, std::size_t i, std::size_t n) {
  if (t.warmup)
    std::fprintf(out, "\n== trial %zu/%zu (warm-up, left out of statistics): %s\n", i + 1, n, t.label().c_str());
  else
    std::fprintf(out, "\n== trial %s: %s\n", place(t, i, n).c_str(), t.label().c_str());
}

}  // namespace balerbench
