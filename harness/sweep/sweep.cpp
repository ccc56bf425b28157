// sweep.cpp: see sweep.h.
#include "harness/sweep/sweep.h"

#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <set>

#include "datasets/dataset.h"
#include "datasets/error.h"
#include "harness/base/blas_kernel.h"
#include "harness/energy/energy_session.h"
#include "harness/engine/system_description.h"
#include "harness/power/power_limit.h"
#include "harness/report/live_metrics.h"
#include "harness/report/monitor.h"
#include "harness/store/store.h"
#include "harness/sweep/stop_signals.h"
#include "harness/sweep/trial.h"

namespace balerbench {
namespace {

void print_restored(const std::vector<AppliedLimit>& restored, const char* when, std::FILE* out) {
  for (const auto& a : restored)
    std::fprintf(out, "power limit: %s (%s) restored to %g W (enforced %g W) %s\n", a.uuid.c_str(), a.name.c_str(),
                 a.original_w, a.restored_w, when);
}

std::string fmt_opt(const std::optional<double>& v, const char* unit) {
  if (!v) return "-";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.3f %s", *v, unit);
  return buf;
}

}  // namespace

SweepSummary run_sweep(const Experiment& ex, const SweepOptions& o, std::FILE* out) {
  SweepSummary sum;
  // The system first: a trial's key is its spec on this system, so a database keeps the same
  // experiment from several machines apart, and a run resumes only what ran here.
  const nlohmann::json system = current_system();
  const std::string fingerprint = system["fingerprint"].get<std::string>();
  const std::vector<TrialSpec> grid = expand_grid(ex, fingerprint);
  sum.grid = static_cast<int64_t>(grid.size());
  std::vector<const TrialSpec*> todo;
  std::unique_ptr<Store> store;
  if (!o.dry_run) {
    store = std::make_unique<Store>(o.db_path);
    store->put_experiment(ex.name, ex.source, ex.raw);
  } else if (std::filesystem::exists(o.db_path)) {
    store = std::make_unique<Store>(o.db_path, false);  // only read: what is done
  }
  if (store && !store->migration_note().empty())
    std::fprintf(stderr, "balerbench: note: %s\n", store->migration_note().c_str());
  std::set<std::string> done = store ? store->trial_keys() : std::set<std::string>{};
  if (store && o.retry_failed) {
    for (const auto& k : store->trial_keys(TrialStatus::kFailed)) done.erase(k);
    for (const auto& k : store->trial_keys(TrialStatus::kSkipped)) done.erase(k);
  }
  for (const auto& t : grid) {
    if (o.shard && !o.shard->contains(t.grid_index)) continue;
    ++sum.in_shard;
    if (done.count(t.key)) {
      ++sum.already_done;
      continue;
    }
    todo.push_back(&t);
  }
  {  // the order they run in (README, Comparable results)
    const std::vector<std::size_t> order = run_order(ex, todo);
    std::vector<const TrialSpec*> ordered;
    for (std::size_t i : order) ordered.push_back(todo[i]);
    todo.swap(ordered);
  }
  std::fprintf(out, "system %s: %s\n", fingerprint.c_str(), system["label"].get<std::string>().c_str());
  if (const std::string blas = blas_choice_line(); !blas.empty()) std::fprintf(out, "%s\n", blas.c_str());
  std::fprintf(out, "experiment %s: %lld trials in the grid%s, %lld already in %s, %lld to run%s\n", ex.name.c_str(),
               static_cast<long long>(sum.grid),
               o.shard ? (", " + std::to_string(sum.in_shard) + " in shard " + o.shard->label()).c_str() : "",
               static_cast<long long>(sum.already_done), o.db_path.c_str(), static_cast<long long>(todo.size()),
               o.dry_run ? " (dry run: nothing runs)" : "");
  if (o.dry_run) {
    std::fprintf(out, "order: %s%s\n", ex.order.c_str(),
                 ex.order == "shuffled" ? (" (seed " + std::to_string(ex.order_seed) + ")").c_str() : "");
    for (const auto* t : todo)
      std::fprintf(out, "  #%lld %s  key %s\n", static_cast<long long>(t->grid_index), t->label().c_str(), t->key.c_str());
    return sum;
  }

  // Stop signals first: every thread started from here on (NVML's, LibTorch's, the sampler's)
  // inherits the blocked mask, so SIGINT/SIGTERM reach only the watcher.
  std::atomic<PowerLimitGuard*> guard_ptr{nullptr};
  StopSignals signals([&guard_ptr, out](int sig) {
    std::fprintf(out, "\nbalerbench: %s: stopping after restoring power limits; the trial in flight is not stored\n",
                 sig == SIGINT ? "SIGINT" : "SIGTERM");
    if (PowerLimitGuard* g = guard_ptr.load()) {
      try {
        print_restored(g->restore(), "on the signal", out);
      } catch (const std::exception& e) {
        std::fprintf(out, "balerbench: restoring power limits failed: %s\n", e.what());
      }
    }
    std::fflush(out);
  });

  // Power limits: a journal from a killed run first, then a guard for this run.
  const std::string journal = o.power_journal.empty() ? default_power_journal_path() : o.power_journal;
  std::unique_ptr<PowerControl> power;
  std::string power_reason;
  if (ex.allow_power_limit_changes || std::filesystem::exists(journal)) power = NvmlPowerControl::open(power_reason);
  if (power) print_restored(recover_power_limits(*power, journal), "from the journal of an earlier run", out);
  if (!ex.allow_power_limit_changes) power.reset();
  if (ex.allow_power_limit_changes && !power)
    std::fprintf(out, "power limits: NVML unavailable (%s); limits apply to a simulated_gpu meter if there is one\n",
                 power_reason.c_str());
  std::unique_ptr<PowerLimitGuard> guard;
  if (power) guard = std::make_unique<PowerLimitGuard>(*power, journal);
  guard_ptr = guard.get();
  struct ClearOnExit {  // destroyed before `guard`: the signal thread never sees a dead guard
    std::atomic<PowerLimitGuard*>& ptr;
    ~ClearOnExit() { ptr = nullptr; }
  } clear_guard_ptr{guard_ptr};

  LiveMetrics live("run");
  std::unique_ptr<Monitor> monitor = open_monitor(o.monitoring, live, make_run_id());
  TrialContext ctx;
  ctx.experiment = &ex;
  ctx.power = power.get();
  ctx.guard = guard.get();
  ctx.live = &live;
  ctx.stop = &signals.flag();
  ctx.progress = o.progress;
  ctx.provenance = base_provenance();  // the same machine for every trial of this run
  // Warm-ups before the grid (only when something is to run): stored, flagged, left out of statistics.
  std::vector<TrialSpec> warmups;
  const std::string run_id = make_run_id();
  for (int64_t n = 0; !todo.empty() && n < ex.warmup_trials; ++n) warmups.push_back(warmup_trial(ex, n, run_id, fingerprint));
  std::vector<const TrialSpec*> sequence;
  for (const auto& w : warmups) sequence.push_back(&w);
  sequence.insert(sequence.end(), todo.begin(), todo.end());
  ctx.run_count = static_cast<int64_t>(sequence.size());
  ctx.order = ex.order;
  ctx.order_seed = ex.order == "shuffled" ? nlohmann::json(ex.order_seed) : nlohmann::json(nullptr);
  try {
    for (std::size_t i = 0; i < sequence.size(); ++i) {
      const TrialSpec& t = *sequence[i];
      // Another run into the same database (a second shell, a Slurm array without --shard) may have
      // stored this trial since the grid was read: skip it rather than run it twice.
      const auto stored = t.warmup ? std::nullopt : store->trial_status(t.key);
      if (stored && !(o.retry_failed && *stored != TrialStatus::kOk)) {
        std::fprintf(out, "\n== trial %zu/%zu (grid #%lld): %s: already stored by another run, skipped\n", i + 1,
                     sequence.size(), static_cast<long long>(t.grid_index), t.label().c_str());
        ++sum.already_done;
        continue;
      }
      if (!ctx.dataset) ctx.dataset = load_experiment_dataset(ex.dataset);
      ctx.run_ordinal = static_cast<int64_t>(i) + 1;
      if (t.warmup)
        std::fprintf(out, "\n== trial %zu/%zu (warm-up, left out of statistics): %s\n", i + 1, sequence.size(),
                     t.label().c_str());
      else
        std::fprintf(out, "\n== trial %zu/%zu (grid #%lld): %s\n", i + 1, sequence.size(),
                     static_cast<long long>(t.grid_index), t.label().c_str());
      std::fflush(out);
      const TrialRecord rec = run_trial(t, ctx);
      try {
        store->insert_trial(rec, o.retry_failed);
      } catch (const StoreWriteError& e) {  // nothing after it could be stored either: stop here
        sum.store_error = e.what();
        std::fprintf(out, "   not stored: %s\n", e.what());
        std::fflush(out);
        break;
      } catch (const std::exception&) {
        // The same trial stored by another run while this one ran it: theirs is kept, this run goes on.
        if (!store->trial_status(rec.key)) throw;
        std::fprintf(out, "   not stored: another run stored this trial while this one ran it (theirs is kept)\n");
        std::fflush(out);
        ++sum.stored_by_other;
        continue;
      }
      ++sum.ran;
      if (rec.status == TrialStatus::kOk) {
        ++sum.ok;
        std::fprintf(
            out, "   ok: train %s, %s; compress %s; decompress %s; target %s\n", fmt_opt(rec.train_s, "s").c_str(),
            fmt_opt(rec.train_energy_j, "J").c_str(), fmt_opt(rec.compress_s, "s").c_str(),
            fmt_opt(rec.decompress_s, "s").c_str(),
            !rec.spec["target"].is_null()
                ? (rec.target_reached ? ("reached at epoch " + std::to_string(*rec.epochs_to_target) + " (TTA " +
                                         fmt_opt(rec.tta_s, "s") + ", ETA " + fmt_opt(rec.eta_j, "J") + ")")
                                      : std::string("not reached"))
                      .c_str()
                : "none");
      } else {
        (rec.status == TrialStatus::kFailed ? sum.failed : sum.skipped)++;
        std::fprintf(out, "   %s: %s\n", trial_status_name(rec.status), rec.error.c_str());
      }
      std::fflush(out);
    }
  } catch (const Interrupted& i) {
    sum.signal = i.signal;
  }
  if (guard) {
    try {
      print_restored(guard->restore(), "at the end of the sweep", out);
    } catch (const PowerLimitError& e) {  // a GPU that cannot be reached now (lost, its driver gone)
      std::fprintf(out, "balerbench: warning: %s; the originals stay in %s, and the next balerbench run restores "
                   "them\n", e.what(), journal.c_str());
      guard->keep_journal();  // said once: the guard's destructor does not try again
    }
  }
  if (monitor) monitor->finish();
  if (sum.signal == 0 && signals.stop_requested()) sum.signal = signals.signal();
  const std::string by_other =
      sum.stored_by_other ? ", " + std::to_string(sum.stored_by_other) +
                                " more ran here but another run stored them first (split the grid with --shard to share "
                                "the work)"
                          : "";
  std::fprintf(out, "\n%s: %lld ran (%lld ok, %lld failed, %lld skipped), %lld were already stored%s; database %s\n",
               sum.signal                 ? "interrupted"
               : !sum.store_error.empty() ? "stopped (a trial could not be stored)"
                                          : "done",
               static_cast<long long>(sum.ran), static_cast<long long>(sum.ok),
               static_cast<long long>(sum.failed), static_cast<long long>(sum.skipped),
               static_cast<long long>(sum.already_done), by_other.c_str(), o.db_path.c_str());
  return sum;
}

}  // namespace balerbench
