// sweep.cpp: see sweep.h. run_sweep reads as its steps: plan what to run, set up the power-limit
// session (power_session.h) and live monitoring, run each trial in turn under its claim
// (trial_claims.h), print each outcome, and sum up.
#include "harness/sweep/sweep.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>
#include <set>

#include "datasets/dataset.h"
#include "common/error.h"
#include "harness/base/blas_kernel.h"
#include "harness/base/processes.h"
#include "harness/base/stall_watch.h"
#include "harness/energy/energy_session.h"
#include "harness/energy/gpu_watch.h"
#include "harness/energy/hazards.h"
#include "harness/engine/system_description.h"
#include "harness/power/power_limit.h"
#include "harness/monitor/live_metrics.h"
#include "harness/monitor/monitor.h"
#include "harness/store/side_files.h"
#include "harness/store/store.h"
#include "harness/sweep/power_session.h"
#include "harness/sweep/sweep_plan.h"
#include "harness/sweep/stop_signals.h"
#include "harness/sweep/trial.h"
#include "harness/sweep/trial_claims.h"

namespace balerbench {
namespace {

std::string fmt_opt(const std::optional<double>& v, const char* unit) {
  if (!v) return "-";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.3f %s", *v, unit);
  return buf;
}

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

// The trials this run executes: warm-ups first (only when something is to run), then the plan's,
// each made when its turn comes.
class RunSequence {
 public:
  RunSequence(const Experiment& ex, const SweepPlan& p) : plan_(p) {
    const std::string run_id = make_run_id();
    for (int64_t n = 0; !p.todo.empty() && n < ex.warmup_trials; ++n)
      warmups_.push_back(warmup_trial(ex, n, run_id, p.fingerprint));
  }
  std::size_t size() const { return warmups_.size() + plan_.todo.size(); }
  TrialSpec at(std::size_t i) const {
    return i < warmups_.size() ? warmups_[i] : plan_.grid->at(plan_.todo[i - warmups_.size()]);
  }

 private:
  const SweepPlan& plan_;
  std::vector<TrialSpec> warmups_;  // stored, flagged, left out of statistics
};

// One trial of the run, from its claim to its stored record and its outcome line. False when the
// sweep must stop (the database cannot be written).
struct TrialTurn {
  const Experiment& ex;
  const SweepOptions& o;
  Store& store;
  const SweepClaims& claims;
  TrialContext& ctx;
  SweepSummary& sum;
  std::FILE* out;

  bool run(const TrialSpec& t, std::size_t i, std::size_t n) {
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
    const TrialRecord rec = run_trial(t, ctx);
    return store_trial(rec, release);
  }

  // Stores a finished trial, waiting for a lock held by another program; a trial that still cannot be
  // stored is kept in a side file beside the database (side_files.h), never dropped. False when the
  // sweep must stop.
  bool store_trial(const TrialRecord& rec, std::optional<ClaimRelease>& release) {
    try {
      waiting_for_lock([&] { return store.insert_trial(rec, o.retry_failed); });
      if (release) release->armed = false;  // the stored trial took its claim with it
    } catch (const StoreBusyError& e) {
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
    return true;
  }

  // `write()`, tried again while the database stays locked by another connection, for up to
  // o.db_wait_s in all (each try waits SQLite's busy timeout); the last StoreBusyError otherwise.
  template <typename F>
  auto waiting_for_lock(F write) -> decltype(write()) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(o.db_wait_s);
    for (bool told = false;; told = true) {
      try {
        return write();
      } catch (const StoreBusyError&) {
        if (!told)
          std::fprintf(out, "   %s is locked by another program: waiting up to %g s in all for it (--db-wait)\n",
                       o.db_path.c_str(), o.db_wait_s);
        std::fflush(out);
        if (std::chrono::steady_clock::now() >= deadline) throw;
      }
    }
  }

  // The finished trial in a side file, and the sweep stopped with exit code 4, saying where it is.
  bool keep_aside(const TrialRecord& rec, const StoreBusyError& e) {
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

  void count(const TrialRecord& rec) {
    ++sum.ran;
    if (rec.status == TrialStatus::kOk) ++sum.ok;
    else (rec.status == TrialStatus::kFailed ? sum.failed : sum.skipped)++;
    print_outcome(rec, out);
    std::fflush(out);
  }

  // `what` is the line's start as printed ("\n   not run", "   not stored").
  bool stop_on(const StoreWriteError& e, const char* what) {
    sum.store_error = e.what();
    std::fprintf(out, "%s: %s\n", what, e.what());
    std::fflush(out);
    return false;
  }

  void skipped(const TrialSpec& t, const ClaimOutcome& claim, std::size_t i, std::size_t n) {
    const bool stored = claim.kind == ClaimOutcome::kStored;
    std::fprintf(out, "\n== trial %zu/%zu (grid #%lld): %s: %s, skipped\n", i + 1, n,
                 static_cast<long long>(t.grid_index), t.label().c_str(),
                 stored ? "already stored by another run"
                        : ("being run by another balerbench (" + describe_claim(*claim.other) + ")").c_str());
    ++(stored ? sum.already_done : sum.held_by_other);
  }

  void header(const TrialSpec& t, std::size_t i, std::size_t n) {
    if (t.warmup)
      std::fprintf(out, "\n== trial %zu/%zu (warm-up, left out of statistics): %s\n", i + 1, n, t.label().c_str());
    else
      std::fprintf(out, "\n== trial %zu/%zu (grid #%lld): %s\n", i + 1, n, static_cast<long long>(t.grid_index),
                   t.label().c_str());
  }
};

}  // namespace

SweepSummary run_sweep(const Experiment& ex, const SweepOptions& o, std::FILE* out) {
  SweepSummary sum;
  SweepPlan plan = plan_sweep(ex, o, sum);
  print_plan(ex, o, plan, sum, out);
  std::fflush(out);  // the plan before anything on stderr
  if (o.dry_run) return sum;
  // Once the input, the grid and the database are known to be good, and only when something runs.
  if (o.report_hazards && !plan.todo.empty()) std::fputs(format_hazard_line(find_hazards()).c_str(), stderr);
  // Stop signals first: every thread started from here on (NVML's, LibTorch's, the sampler's)
  // inherits the blocked mask, so SIGINT/SIGTERM reach only the watcher.
  std::atomic<PowerLimitGuard*> signal_guard{nullptr};
  StopSignals signals(restore_on_signal(signal_guard, out));
  const StallWatch stalls;  // a stopped or paused process flags the trial it stalled (cpu_activity.h)
  PowerLimitSession power(ex, o.power_journal, signal_guard, out);
  LiveMetrics live("run");
  std::unique_ptr<Monitor> monitor = open_monitor(o.monitoring, live, make_run_id());
  TrialContext ctx;
  ctx.dataset = plan.dataset;
  ctx.experiment = &ex;
  ctx.power = power.power();
  ctx.guard = power.guard();
  std::string gpu_note;
  const std::unique_ptr<GpuWatch> gpus = GpuWatch::open(gpu_note);  // read only: MaxPower, the thermal protocol
  ctx.gpus = gpus.get();
  if (ex.thermal.enabled && !gpus && !plan.todo.empty())
    std::fprintf(out, "thermal protocol: no NVML GPU to wait on (%s); trials start without waiting\n",
                 gpu_note.c_str());
  ctx.live = &live;
  ctx.stop = &signals.flag();
  ctx.progress = o.progress;
  ctx.provenance = base_provenance();  // the same machine for every trial of this run
  ctx.order = ex.order;
  ctx.order_seed = ex.order == "shuffled" ? nlohmann::json(ex.order_seed) : nlohmann::json(nullptr);
  const RunSequence sequence(ex, plan);
  ctx.run_count = static_cast<int64_t>(sequence.size());
  SweepClaims claims;
  // --retry-failed runs again what failed before this run began, never what a concurrent run just stored.
  if (o.retry_failed) claims.retry_before = unix_time_s();
  std::unique_ptr<ClaimHeartbeat> heartbeat;
  if (!plan.todo.empty()) heartbeat = std::make_unique<ClaimHeartbeat>(o.db_path, claims.holder);
  TrialTurn turn{ex, o, *plan.store, claims, ctx, sum, out};
  try {
    for (std::size_t i = 0; i < sequence.size(); ++i)
      if (!turn.run(sequence.at(i), i, sequence.size())) break;
  } catch (const Interrupted& i) {
    sum.signal = i.signal;
  }
  power.finish();
  if (monitor) monitor->finish();
  if (sum.signal == 0 && signals.stop_requested()) sum.signal = signals.signal();
  heartbeat.reset();
  print_summary(sum, o, out);
  return sum;
}

}  // namespace balerbench
