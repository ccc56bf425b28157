// recurrence_sweep.cpp: run_recurrences (sweep.h): an experiment's job recurring under Zeus's
// batch-size optimiser. It reads as its steps: the system, the database and what it holds; what the
// run holds while it runs (stop signals, stall watch, power-limit session); the power-limit arm (just
// in time over the GPUs' limits, or none) and the cost's MaxPower; then the attempts (AttemptLoop),
// each planned by the recurrence tuner (tuning/recurrence_tuner.h) from the outcomes before it, run
// as a trial (or, when the database holds it, read back), and fed to the tuner.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>

#include "common/error.h"
#include "common/text.h"
#include "harness/base/blas_kernel.h"
#include "harness/base/processes.h"
#include "harness/base/stall_watch.h"
#include "harness/energy/hazards.h"
#include "harness/energy/energy_session.h"
#include "harness/run/system_description.h"
#include "harness/monitor/live_metrics.h"
#include "harness/monitor/monitor.h"
#include "harness/power/optimizer.h"
#include "harness/power/power_limit.h"
#include "harness/store/side_files.h"
#include "harness/store/store.h"
#include "harness/sweep/power_session.h"
#include "harness/sweep/stop_signals.h"
#include "harness/sweep/sweep.h"
#include "harness/sweep/sweep_plan.h"
#include "harness/trial/trial.h"
#include "harness/sweep/trial_claims.h"
#include "harness/sweep/trial_turn.h"

namespace balerbench {
namespace {

using nlohmann::json;

// The power-limit arm: the candidate limits the just-in-time optimiser profiles (from the first
// GPU's constraints, in the optimiser's steps), or none.
struct PowerArm {
  bool jit = false;
  std::size_t limits = 1;
  std::string text;
  double max_power_w = 0;
};

// `power`: the GPUs whose limits this run may set (null: none); `visible`: the GPUs NVML sees, read
// only (for MaxPower when no limit may be set); `nvml_reason`: why NVML sees none.
PowerArm power_arm(const Experiment& ex, const PowerControl* power, const PowerControl* visible,
                   const std::string& nvml_reason) {
  PowerArm a;
  const std::string at = ex.source + ": /batch_size_optimizer: ";
  if (ex.optimizer.enabled) {
    if (!power || power->count() == 0)
      throw InputError(
          ex.source + ": /power_limit_optimizer is enabled, but NVML can set no GPU's power limit here" +
              (nvml_reason.empty() ? "" : " (" + nvml_reason + ")"),
          "disable it: the recurrences then run at the limit in force (the no-power-limit arm, as on a CPU)");
    const auto [lo, hi] = power->constraints_w(0);
    const std::vector<double> c = power_limit_candidates(lo, hi, ex.optimizer.pl_step_w);
    a.jit = true;
    a.limits = c.size();
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "just in time, the first attempt at each batch size profiling %zu limits (%g to %g W)", c.size(),
                  c.back(), c.front());
    a.text = buf;
  } else {
    a.text = visible && visible->count() > 0
                 ? "none: /power_limit_optimizer is off, so every attempt runs at the limit in force"
                 : "none: no GPU power limit to choose here (" +
                       (nvml_reason.empty() ? std::string("NVML sees no GPU") : nvml_reason) + ")";
  }
  // MaxPower of the cost, as a trial's: the experiment's, the GPUs' maximum limits, the simulated GPU's.
  const auto& meters = ex.base.energy.meters;
  if (ex.max_power_w) {
    a.max_power_w = *ex.max_power_w;
  } else if (visible && visible->count() > 0) {
    for (std::size_t i = 0; i < visible->count(); ++i) a.max_power_w += visible->constraints_w(i).second;
  } else if (std::find(meters.begin(), meters.end(), MeterChoice::kSimulatedGpu) != meters.end()) {
    a.max_power_w = ex.base.energy.simulated_gpu.max_limit_w;
  } else {
    throw InputError(
        at + "the cost weighs time by MaxPower, and this machine has no GPU whose maximum limit NVML reads",
        "set /cost/max_power_w (on a CPU, e.g. its package power or TDP in W)");
  }
  return a;
}

// The stored trials of this experiment by key (the attempts of an earlier run, on any system: each
// key names its system).
std::map<std::string, TrialRecord> stored_by_key(const Store* store, const std::string& experiment) {
  std::map<std::string, TrialRecord> out;
  if (!store) return out;
  for (TrialRecord& t : store->trials(experiment, false, false)) {
    std::string key = t.key;
    out.emplace(std::move(key), std::move(t));
  }
  return out;
}

std::string joules(double j) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.1f J", j);
  return buf;
}

void refuse_shards(const SweepOptions& o) {
  if (o.shard)
    throw InputError("--shard " + o.shard->label() +
                         ": the batch-size optimiser's recurrences depend on each other "
                         "and run one after another",
                     "run it without --shard (and outside a Slurm array)");
}

// The results database: opened for writing for a run (trials an earlier run could not store, from
// a locked database, folded in first: they may be attempts of these), read only for a dry run when
// it exists (null: a dry run with nothing stored yet).
std::unique_ptr<Store> open_store(const Experiment& ex, const SweepOptions& o) {
  std::unique_ptr<Store> store;
  if (!o.dry_run) {
    store = std::make_unique<Store>(o.db_path);
    if (!store->migration_note().empty()) std::fprintf(stderr, "balerbench: note: %s\n", store->migration_note().c_str());
    for (const std::string& line : fold_side_files(*store)) std::fprintf(stderr, "balerbench: note: %s\n", line.c_str());
    store->set_busy_timeout_s(std::min(kStoreLockTryS, o.db_wait_s));
    store->put_experiment(ex.name, ex.source, ex.raw);
  } else if (std::filesystem::exists(o.db_path)) {
    store = std::make_unique<Store>(o.db_path, StoreAccess::kReadOnly);
    if (!store->migration_note().empty()) std::fprintf(stderr, "balerbench: note: %s\n", store->migration_note().c_str());
  }
  return store;
}

// What a run holds while its attempts run, started in this order (as run_sweep): the stop signals
// before any thread starts, the stall watch (a stopped or paused process flags the attempt it
// stalled), the power-limit session; then, when this run may set no limit, what NVML sees, read
// only. A dry run starts none of the first three and sets nothing.
struct RunHold {
  std::unique_ptr<StopSignals> signals;
  std::unique_ptr<StallWatch> stalls;
  std::unique_ptr<PowerLimitSession> session;
  std::unique_ptr<NvmlPowerControl> read_only_power;
  std::string nvml_reason;              // why NVML sees no GPU
  const PowerControl* power = nullptr;  // what this run may set
  const PowerControl* visible() const { return power ? power : read_only_power.get(); }
};

RunHold hold_for_run(const Experiment& ex, const SweepOptions& o, std::atomic<PowerLimitGuard*>& signal_guard,
                     std::FILE* out) {
  RunHold h;
  if (!o.dry_run) {
    h.signals = std::make_unique<StopSignals>(restore_on_signal(signal_guard, out));
    h.stalls = std::make_unique<StallWatch>();
    h.session = std::make_unique<PowerLimitSession>(ex, o.power_journal, signal_guard, out);
    h.power = h.session->power();
  }
  if (!h.power) h.read_only_power = NvmlPowerControl::open(h.nvml_reason);
  if (o.dry_run && ex.allow_power_limit_changes) h.power = h.read_only_power.get();
  return h;
}

void print_start(const Experiment& ex, const SweepOptions& o, const json& system, const PowerArm& arm,
                 int64_t recurrences, std::FILE* out) {
  const BatchSizeOptimizerSpec& bso = ex.batch_size_optimizer;
  std::fprintf(out, "system %s: %s\n", system["fingerprint"].get<std::string>().c_str(),
               system["label"].get<std::string>().c_str());
  if (const std::string blas = blas_choice_line(); !blas.empty()) std::fprintf(out, "%s\n", blas.c_str());
  std::fprintf(out,
               "experiment %s: the batch-size optimiser over batch sizes %s from %lld, %lld recurrences%s; eta %g, "
               "beta %g, seed %lld, MaxPower %g W; power limit: %s; %s\n",
               ex.name.c_str(), list_text(ex.batch_sizes).c_str(), static_cast<long long>(bso.default_batch_size),
               static_cast<long long>(recurrences), bso.recurrences ? "" : " (2 x batch sizes x power limits)", bso.eta,
               bso.beta, static_cast<long long>(bso.seed), arm.max_power_w, arm.text.c_str(),
               o.dry_run ? "dry run: nothing runs" : ("database " + o.db_path).c_str());
}

TunerOptions tuner_options(const BatchSizeOptimizerSpec& bso, const PowerArm& arm) {
  TunerOptions to;
  to.eta = bso.eta;
  to.beta = bso.beta;
  to.max_power_w = arm.max_power_w;
  to.max_attempts = bso.max_attempts;
  to.power_limits = arm.jit;
  to.batch_size_optimizer = {bso.pruning_rounds, bso.window, static_cast<uint64_t>(bso.seed)};
  return to;
}

// What every attempt's trial shares: the experiment, the limits it may set, live monitoring, the
// stop flag, the machine's provenance (read once), the run order.
TrialContext attempt_context(const Experiment& ex, const SweepOptions& o, const RunHold& hold, LiveMetrics& live) {
  TrialContext ctx;
  ctx.protocol = &ex;
  ctx.dataset_label = ex.dataset.label();
  ctx.power = hold.session ? hold.session->power() : nullptr;
  ctx.guard = hold.session ? hold.session->guard() : nullptr;
  ctx.live = &live;
  ctx.stop = hold.signals ? &hold.signals->flag() : nullptr;
  ctx.progress = o.progress;
  ctx.provenance = o.dry_run ? json(nullptr) : base_provenance();
  ctx.order = "recurrences";
  ctx.order_seed = ex.batch_size_optimizer.seed;
  return ctx;
}

// The attempts, one after another: each planned by the tuner, run as a trial (or read back when the
// database holds it), and its outcome fed back to the tuner.
struct AttemptLoop {
  const Experiment& ex;
  const SweepOptions& o;
  const std::string& fingerprint;
  double max_power_w;
  int64_t recurrences;
  const std::map<std::string, TrialRecord>& stored;  // the database's trials when the run began
  Store* store;                                      // null: a dry run with no database
  TrialContext& ctx;
  TrialTurn* turn;  // null: a dry run
  RecurrenceTuner& tuner;
  SweepSummary& sum;
  std::FILE* out;
  int64_t index = 0;
  std::size_t ran_here = 0;

  // The next attempt, planned, run (or read back) and fed to the tuner; false when the recurrences
  // stop (sum says why).
  bool next() {
    const AttemptPlan plan = tuner.next();
    const TrialSpec t = recurrence_trial(ex, {plan, ex.batch_size_optimizer.eta, max_power_w}, index++, fingerprint);
    const std::string where = "recurrence " + std::to_string(plan.recurrence + 1) + " attempt " +
                              std::to_string(plan.attempt) + " (batch size " + std::to_string(plan.batch_size) + ")";
    const std::optional<TrialRecord> rec = record_of(t, where);
    return rec && feed(plan, *rec, where);
  }

  void stop(const std::string& why) {
    sum.recurrences_stop = why;
    std::fprintf(out, "\nrecurrences stopped: %s\n", why.c_str());
  }

 private:
  // The attempt's record: stored by an earlier run (a failed one only without --retry-failed), or
  // run now; none when the loop must stop (a dry run's next attempt, a database that cannot be
  // written, an attempt another run holds).
  std::optional<TrialRecord> record_of(const TrialSpec& t, const std::string& where) {
    const auto it = stored.find(t.key);
    if (it != stored.end() && (it->second.status == TrialStatus::kOk || !o.retry_failed)) {
      ++sum.already_done;
      std::fprintf(out, "== attempt #%lld: %s: stored\n", static_cast<long long>(t.grid_index), t.label().c_str());
      return it->second;
    }
    if (o.dry_run) {
      std::fprintf(out, "next: attempt #%lld %s  key %s\n", static_cast<long long>(t.grid_index), t.label().c_str(),
                   t.key.c_str());
      return std::nullopt;
    }
    std::optional<TrialRecord> rec;
    ctx.run_count = -1;  // as many attempts as the tuner takes: "trial i", no total that later grows
    if (!turn->run(t, ran_here++, 0, &rec)) return std::nullopt;  // the database cannot be written: sum says why
    if (rec) return rec;
    // Skipped: stored by another run meanwhile (read it back), or being run by one now.
    if (store->trial_status(t.key) == TrialStatus::kOk) return stored_by_key(store, ex.name).at(t.key);
    stop(where + " is being run by another balerbench: run the same command again once it ends");
    return std::nullopt;
  }

  // The attempt's outcome to the tuner (its power limit first, when it profiled them); false when a
  // failed attempt or one without energy stops the recurrences.
  bool feed(const AttemptPlan& plan, const TrialRecord& rec, const std::string& where) {
    if (rec.status != TrialStatus::kOk) {
      stop(where + " " + trial_status_name(rec.status) + ": " + rec.error +
           " (hint: the next attempt depends on its outcome; fix the cause, then run again with --retry-failed)");
      return false;
    }
    const json& r = rec.result.value("recurrence", json::object());
    if (!r.contains("energy_j") || !r["energy_j"].is_number() || !r.contains("time_s") || !r["time_s"].is_number()) {
      stop(where + ": the trial has no energy to weigh (its meters gave none)");
      return false;
    }
    if (plan.profile_power_limit) {
      if (r.contains("power_limit_chosen_w") && r["power_limit_chosen_w"].is_number())
        tuner.set_power_limit(plan.batch_size, r["power_limit_chosen_w"].get<double>());
      else
        std::fprintf(out,
                     "   the power-limit optimiser did not finish profiling in this attempt: the next attempt "
                     "at batch size %lld profiles again\n",
                     static_cast<long long>(plan.batch_size));
    }
    AttemptOutcome outcome;
    outcome.reached = rec.target_reached;
    outcome.time_s = r["time_s"].get<double>();
    outcome.energy_j = r["energy_j"].get<double>();
    const AttemptResult res = tuner.finish(plan, outcome);
    const json& bound_stop = r.value("stopped_at_cost_bound", json(nullptr));
    std::fprintf(out, "   %s: cost %s%s, %s\n", where.c_str(), joules(res.cost_j).c_str(),
                 plan.cost_bound_j ? (" (bound " + joules(*plan.cost_bound_j) + ")").c_str() : "",
                 outcome.reached          ? "reached the target"
                 : bound_stop.is_number() ? ("stopped at the bound after epoch " + bound_stop.dump()).c_str()
                                          : "did not reach the target");
    std::fflush(out);
    return true;
  }
};

void print_end(const RecurrenceTuner& tuner, int64_t recurrences, std::FILE* out) {
  const json state = tuner.to_json();
  std::fprintf(
      out, "\nrecurrences: %lld of %lld done; batch-size optimiser: %s stage, arms %s%s\n",
      static_cast<long long>(tuner.recurrences_done()), static_cast<long long>(recurrences),
      state["batch_size_optimizer"]["stage"].get<std::string>().c_str(),
      tuner.batch_size_optimizer().arms().empty() ? "none yet"
                                                  : ("[" + list_text(tuner.batch_size_optimizer().arms()) + "]").c_str(),
      tuner.cheapest_recurrence_j() ? ("; cheapest recurrence " + joules(*tuner.cheapest_recurrence_j())).c_str() : "");
}

}  // namespace

SweepSummary run_recurrences(const Experiment& ex, const SweepOptions& o, std::FILE* out) {
  refuse_shards(o);
  SweepSummary sum;
  const json system = current_system();
  const std::string fingerprint = system["fingerprint"].get<std::string>();
  // What every attempt would refuse, refused before the database is created (as a sweep's plan does).
  const std::shared_ptr<const Dataset> dataset = o.dry_run ? nullptr : load_checked_dataset(ex);
  std::unique_ptr<Store> store = open_store(ex, o);
  const std::map<std::string, TrialRecord> stored = stored_by_key(store.get(), ex.name);
  if (!o.dry_run && o.report_hazards) std::fputs(format_hazard_line(find_hazards()).c_str(), stderr);
  std::atomic<PowerLimitGuard*> signal_guard{nullptr};
  RunHold hold = hold_for_run(ex, o, signal_guard, out);
  const PowerArm arm = power_arm(ex, hold.power, hold.visible(), hold.nvml_reason);
  const BatchSizeOptimizerSpec& bso = ex.batch_size_optimizer;
  const int64_t recurrences =
      bso.recurrences.value_or(2 * static_cast<int64_t>(ex.batch_sizes.size()) * static_cast<int64_t>(arm.limits));
  sum.grid = sum.in_shard = recurrences;
  print_start(ex, o, system, arm, recurrences, out);

  RecurrenceTuner tuner(ex.batch_sizes, bso.default_batch_size, tuner_options(bso, arm));
  LiveMetrics live("run");
  std::unique_ptr<Monitor> monitor;
  if (!o.dry_run) monitor = open_monitor(o.monitoring, live, make_run_id());
  TrialContext ctx = attempt_context(ex, o, hold, live);
  ctx.dataset = dataset;
  SweepClaims claims;
  if (o.retry_failed) claims.retry_before = unix_time_s();
  std::unique_ptr<ClaimHeartbeat> heartbeat;
  if (store && !o.dry_run) heartbeat = std::make_unique<ClaimHeartbeat>(o.db_path, claims.holder);
  std::optional<TrialTurn> turn;
  if (store && !o.dry_run) turn.emplace(TrialTurn{ex, o, *store, claims, ctx, sum, out});
  AttemptLoop loop{ex,          o,   fingerprint,               arm.max_power_w, recurrences, stored,
                   store.get(), ctx, turn ? &*turn : nullptr, tuner,           sum,         out};
  try {
    while (tuner.recurrences_done() < recurrences && loop.next()) {
    }
  } catch (const Interrupted& i) {
    sum.signal = i.signal;
  } catch (const TuningError& e) {
    loop.stop(e.what());
  }
  if (hold.session) hold.session->finish();
  if (monitor) monitor->finish();
  if (hold.signals && sum.signal == 0 && hold.signals->stop_requested()) sum.signal = hold.signals->signal();
  heartbeat.reset();
  print_end(tuner, recurrences, out);
  if (!o.dry_run) print_summary(sum, o, out);
  return sum;
}

}  // namespace balerbench
