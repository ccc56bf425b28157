// sweep.cpp: see sweep.h.
#include "harness/sweep/sweep.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <ctime>
#include <mutex>
#include <thread>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <set>

#include "datasets/dataset.h"
#include "datasets/error.h"
#include "harness/base/blas_kernel.h"
#include "harness/base/processes.h"
#include "harness/energy/energy_session.h"
#include "harness/engine/system_description.h"
#include "harness/power/power_limit.h"
#include "harness/monitor/live_metrics.h"
#include "harness/monitor/monitor.h"
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

std::string describe_claim(const Claim& c) {
  const std::time_t t = static_cast<std::time_t>(c.claimed_unix_s);
  char when[32] = "?";
  std::tm tm{};
  if (localtime_r(&t, &tm)) std::strftime(when, sizeof when, "%H:%M:%S", &tm);
  return "pid " + std::to_string(c.holder.pid) + " on " + c.holder.host + ", since " + when;
}

// Refreshes this run's claims every kClaimHeartbeatS from a connection of its own, so that a run on
// another machine sees them live for as long as this one runs.
class ClaimHeartbeat {
 public:
  ClaimHeartbeat(std::string db_path, ClaimHolder me)
      : db_path_(std::move(db_path)), me_(std::move(me)), thread_([this] { loop(); }) {}
  ~ClaimHeartbeat() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!wake_.wait_for(lock, std::chrono::duration<double>(kClaimHeartbeatS), [this] { return stop_; })) {
      try {
        Store(db_path_, StoreAccess::kReadWrite).refresh_claims(me_);
      } catch (const std::exception&) {
        // A busy or full database: the next beat tries again, and the lease is ten beats long.
      }
    }
  }
  std::string db_path_;
  ClaimHolder me_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

// Drops this run's claim on a trial that ends without being stored (a failure to store it, a stop
// signal, an exception).
struct ClaimRelease {
  ClaimRelease(Store& s, std::string k, const ClaimHolder& m) : store(s), key(std::move(k)), me(m) {}
  ClaimRelease(const ClaimRelease&) = delete;
  ClaimRelease& operator=(const ClaimRelease&) = delete;
  Store& store;
  std::string key;
  const ClaimHolder& me;
  bool armed = true;
  ~ClaimRelease() {
    if (!armed) return;
    try {
      store.release_claim(key, me);
    } catch (const std::exception&) {
      // The holder is this process: once it ends, the claim reads as dead and is taken over.
    }
  }
};

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
    store = std::make_unique<Store>(o.db_path, StoreAccess::kReadOnly);  // only read: what is done
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
  // Claims: each trial is claimed before it runs, so that another run into the same database skips
  // it rather than running it twice; the claim goes with the stored trial.
  const ProcessIdentity me = this_process();
  const ClaimHolder holder = claim_holder(me);
  // --retry-failed runs again what failed before this run began, never what a concurrent run just stored.
  const std::optional<double> retry_before = o.retry_failed ? std::optional<double>(unix_time_s()) : std::nullopt;
  std::unique_ptr<ClaimHeartbeat> heartbeat;
  if (!todo.empty()) heartbeat = std::make_unique<ClaimHeartbeat>(o.db_path, holder);
  try {
    for (std::size_t i = 0; i < sequence.size(); ++i) {
      const TrialSpec& t = *sequence[i];
      // Another run into the same database (a second shell, a Slurm array without --shard) may have
      // stored this trial since the grid was read, or be running it now: skip it rather than run it twice.
      std::optional<ClaimRelease> release;
      std::string taken_over;
      if (!t.warmup) {
        ClaimOutcome claim;
        try {
          claim = store->claim_trial(t.key, holder, retry_before, [&me](const Claim& c) { return claim_alive(c, me, unix_time_s()); });
        } catch (const StoreWriteError& e) {  // a full disk before the trial: nothing after it could be stored
          sum.store_error = e.what();
          std::fprintf(out, "\n   not run: %s\n", e.what());
          std::fflush(out);
          break;
        }
        if (claim.kind != ClaimOutcome::kClaimed) {
          const bool stored = claim.kind == ClaimOutcome::kStored;
          std::fprintf(out, "\n== trial %zu/%zu (grid #%lld): %s: %s, skipped\n", i + 1, sequence.size(),
                       static_cast<long long>(t.grid_index), t.label().c_str(),
                       stored ? "already stored by another run"
                              : ("being run by another balerbench (" + describe_claim(*claim.other) + ")").c_str());
          ++(stored ? sum.already_done : sum.held_by_other);
          continue;
        }
        if (claim.taken_over)
          taken_over = "   claimed by " + describe_claim(*claim.taken_over) + ", which no longer runs: this run takes it over\n";
        release.emplace(*store, t.key, holder);
      }
      if (!ctx.dataset) ctx.dataset = load_experiment_dataset(ex.dataset);
      ctx.run_ordinal = static_cast<int64_t>(i) + 1;
      if (t.warmup)
        std::fprintf(out, "\n== trial %zu/%zu (warm-up, left out of statistics): %s\n", i + 1, sequence.size(),
                     t.label().c_str());
      else
        std::fprintf(out, "\n== trial %zu/%zu (grid #%lld): %s\n", i + 1, sequence.size(),
                     static_cast<long long>(t.grid_index), t.label().c_str());
      std::fputs(taken_over.c_str(), out);
      std::fflush(out);
      const TrialRecord rec = run_trial(t, ctx);
      try {
        store->insert_trial(rec, o.retry_failed);
        if (release) release->armed = false;  // the stored trial took its claim with it
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
  heartbeat.reset();
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
  return sum;
}

}  // namespace balerbench
