// sweep.cpp: see sweep.h. run_sweep reads as its steps: plan what to run, set up the power-limit
// session (power_session.h) and live monitoring, run each trial in turn under its claim
// (trial_claims.h), print each outcome, and sum up.
#include "harness/sweep/sweep.h"

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <set>

#include "datasets/dataset.h"
#include "common/error.h"
#include "harness/base/blas_kernel.h"
#include "harness/base/processes.h"
#include "harness/energy/energy_session.h"
#include "harness/engine/system_description.h"
#include "harness/power/power_limit.h"
#include "harness/monitor/live_metrics.h"
#include "harness/monitor/monitor.h"
#include "harness/store/store.h"
#include "harness/sweep/power_session.h"
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

// What a run does: the grid on this system, the database, and the trials still to run, in order.
struct SweepPlan {
  nlohmann::json system;
  std::string fingerprint;
  std::vector<TrialSpec> grid;
  std::unique_ptr<Store> store;  // null for a dry run without a database
  std::vector<const TrialSpec*> todo;
};

SweepPlan plan_sweep(const Experiment& ex, const SweepOptions& o, SweepSummary& sum) {
  SweepPlan p;
  // The system first: a trial's key is its spec on this system, so a database keeps the same
  // experiment from several machines apart, and a run resumes only what ran here.
  p.system = current_system();
  p.fingerprint = p.system["fingerprint"].get<std::string>();
  p.grid = expand_grid(ex, p.fingerprint);
  sum.grid = static_cast<int64_t>(p.grid.size());
  if (!o.dry_run) {
    p.store = std::make_unique<Store>(o.db_path);
    p.store->put_experiment(ex.name, ex.source, ex.raw);
  } else if (std::filesystem::exists(o.db_path)) {
    p.store = std::make_unique<Store>(o.db_path, StoreAccess::kReadOnly);  // only read: what is done
  }
  if (p.store && !p.store->migration_note().empty())
    std::fprintf(stderr, "balerbench: note: %s\n", p.store->migration_note().c_str());
  std::set<std::string> done = p.store ? p.store->trial_keys() : std::set<std::string>{};
  if (p.store && o.retry_failed) {
    for (const auto& k : p.store->trial_keys(TrialStatus::kFailed)) done.erase(k);
    for (const auto& k : p.store->trial_keys(TrialStatus::kSkipped)) done.erase(k);
  }
  std::vector<const TrialSpec*> todo;
  for (const auto& t : p.grid) {
    if (o.shard && !o.shard->contains(t.grid_index)) continue;
    ++sum.in_shard;
    if (done.count(t.key)) {
      ++sum.already_done;
      continue;
    }
    todo.push_back(&t);
  }
  for (std::size_t i : run_order(ex, todo)) p.todo.push_back(todo[i]);  // README, Comparable results
  return p;
}

void print_plan(const Experiment& ex, const SweepOptions& o, const SweepPlan& p, const SweepSummary& sum,
                std::FILE* out) {
  std::fprintf(out, "system %s: %s\n", p.fingerprint.c_str(), p.system["label"].get<std::string>().c_str());
  if (const std::string blas = blas_choice_line(); !blas.empty()) std::fprintf(out, "%s\n", blas.c_str());
  std::fprintf(out, "experiment %s: %lld trials in the grid%s, %lld already in %s, %lld to run%s\n", ex.name.c_str(),
               static_cast<long long>(sum.grid),
               o.shard ? (", " + std::to_string(sum.in_shard) + " in shard " + o.shard->label()).c_str() : "",
               static_cast<long long>(sum.already_done), o.db_path.c_str(), static_cast<long long>(p.todo.size()),
               o.dry_run ? " (dry run: nothing runs)" : "");
  if (!o.dry_run) return;
  std::fprintf(out, "order: %s%s\n", ex.order.c_str(),
               ex.order == "shuffled" ? (" (seed " + std::to_string(ex.order_seed) + ")").c_str() : "");
  for (const auto* t : p.todo)
    std::fprintf(out, "  #%lld %s  key %s\n", static_cast<long long>(t->grid_index), t->label().c_str(), t->key.c_str());
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

// The trials this run executes: warm-ups first (only when something is to run), then the plan's.
std::vector<const TrialSpec*> run_sequence(const Experiment& ex, const SweepPlan& p, std::vector<TrialSpec>& warmups) {
  const std::string run_id = make_run_id();
  for (int64_t n = 0; !p.todo.empty() && n < ex.warmup_trials; ++n)
    warmups.push_back(warmup_trial(ex, n, run_id, p.fingerprint));
  std::vector<const TrialSpec*> sequence;
  for (const auto& w : warmups) sequence.push_back(&w);
  sequence.insert(sequence.end(), p.todo.begin(), p.todo.end());
  return sequence;
}

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
        claim = store.claim_trial(t.key, claims.holder, claims.retry_before,
                                  [this](const Claim& c) { return claim_alive(c, claims.me, unix_time_s()); });
      } catch (const StoreWriteError& e) {  // a full disk before the trial: nothing after it could be stored
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
    if (!ctx.dataset) ctx.dataset = load_experiment_dataset(ex.dataset);
    ctx.run_ordinal = static_cast<int64_t>(i) + 1;
    header(t, i, n);
    std::fputs(taken_over.c_str(), out);
    std::fflush(out);
    const TrialRecord rec = run_trial(t, ctx);
    try {
      store.insert_trial(rec, o.retry_failed);
      if (release) release->armed = false;  // the stored trial took its claim with it
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
    ++sum.ran;
    if (rec.status == TrialStatus::kOk) ++sum.ok;
    else (rec.status == TrialStatus::kFailed ? sum.failed : sum.skipped)++;
    print_outcome(rec, out);
    std::fflush(out);
    return true;
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
  if (o.dry_run) return sum;
  // Stop signals first: every thread started from here on (NVML's, LibTorch's, the sampler's)
  // inherits the blocked mask, so SIGINT/SIGTERM reach only the watcher.
  std::atomic<PowerLimitGuard*> signal_guard{nullptr};
  StopSignals signals(restore_on_signal(signal_guard, out));
  PowerLimitSession power(ex, o.power_journal, signal_guard, out);
  LiveMetrics live("run");
  std::unique_ptr<Monitor> monitor = open_monitor(o.monitoring, live, make_run_id());
  TrialContext ctx;
  ctx.experiment = &ex;
  ctx.power = power.power();
  ctx.guard = power.guard();
  ctx.live = &live;
  ctx.stop = &signals.flag();
  ctx.progress = o.progress;
  ctx.provenance = base_provenance();  // the same machine for every trial of this run
  ctx.order = ex.order;
  ctx.order_seed = ex.order == "shuffled" ? nlohmann::json(ex.order_seed) : nlohmann::json(nullptr);
  std::vector<TrialSpec> warmups;  // stored, flagged, left out of statistics
  const std::vector<const TrialSpec*> sequence = run_sequence(ex, plan, warmups);
  ctx.run_count = static_cast<int64_t>(sequence.size());
  SweepClaims claims;
  // --retry-failed runs again what failed before this run began, never what a concurrent run just stored.
  if (o.retry_failed) claims.retry_before = unix_time_s();
  std::unique_ptr<ClaimHeartbeat> heartbeat;
  if (!plan.todo.empty()) heartbeat = std::make_unique<ClaimHeartbeat>(o.db_path, claims.holder);
  TrialTurn turn{ex, o, *plan.store, claims, ctx, sum, out};
  try {
    for (std::size_t i = 0; i < sequence.size(); ++i)
      if (!turn.run(*sequence[i], i, sequence.size())) break;
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
