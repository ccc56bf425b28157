// recurrence_sweep.cpp: run_recurrences (sweep.h): an experiment's job recurring under Zeus's
// batch-size optimiser. It reads as its steps: the system, the database and what it holds; the
// power-limit arm (just in time over the GPUs' limits, or none) and the cost's MaxPower; then one
// attempt after another, each planned by the recurrence tuner (tuning/recurrence_tuner.h) from the
// outcomes before it, run as a trial (or, when the database holds it, read back), and fed to the tuner.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>

#include "common/error.h"
#include "harness/base/blas_kernel.h"
#include "harness/base/processes.h"
#include "harness/base/stall_watch.h"
#include "harness/energy/hazards.h"
#include "harness/energy/energy_session.h"
#include "harness/engine/system_description.h"
#include "harness/monitor/live_metrics.h"
#include "harness/monitor/monitor.h"
#include "harness/power/optimizer.h"
#include "harness/power/power_limit.h"
#include "harness/store/side_files.h"
#include "harness/store/store.h"
#include "harness/sweep/power_session.h"
#include "harness/sweep/stop_signals.h"
#include "harness/sweep/sweep.h"
#include "harness/sweep/trial.h"
#include "harness/sweep/trial_claims.h"
#include "harness/sweep/trial_turn.h"

namespace balerbench {
namespace {

using nlohmann::json;

std::string list_text(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t x : v) s += (s.empty() ? "" : ", ") + std::to_string(x);
  return s;
}

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

}  // namespace

SweepSummary run_recurrences(const Experiment& ex, const SweepOptions& o, std::FILE* out) {
  const BatchSizeOptimizerSpec& bso = ex.batch_size_optimizer;
  if (o.shard)
    throw InputError("--shard " + o.shard->label() +
                         ": the batch-size optimiser's recurrences depend on each other "
                         "and run one after another",
                     "run it without --shard (and outside a Slurm array)");
  SweepSummary sum;
  const json system = current_system();
  const std::string fingerprint = system["fingerprint"].get<std::string>();
  std::unique_ptr<Store> store;
  if (!o.dry_run) {
    store = std::make_unique<Store>(o.db_path);
    if (!store->migration_note().empty()) std::fprintf(stderr, "balerbench: note: %s\n", store->migration_note().c_str());
    // Trials an earlier run could not store (a locked database) first: they may be attempts of these.
    for (const std::string& line : fold_side_files(*store)) std::fprintf(stderr, "balerbench: note: %s\n", line.c_str());
    store->set_busy_timeout_s(std::min(kStoreLockTryS, o.db_wait_s));
    store->put_experiment(ex.name, ex.source, ex.raw);
  } else if (std::filesystem::exists(o.db_path)) {
    store = std::make_unique<Store>(o.db_path, StoreAccess::kReadOnly);
    if (!store->migration_note().empty()) std::fprintf(stderr, "balerbench: note: %s\n", store->migration_note().c_str());
  }
  std::map<std::string, TrialRecord> stored = stored_by_key(store.get(), ex.name);

  if (!o.dry_run && o.report_hazards) std::fputs(format_hazard_line(find_hazards()).c_str(), stderr);
  // Stop signals before any thread starts (as run_sweep), then the power limits.
  std::atomic<PowerLimitGuard*> signal_guard{nullptr};
  std::unique_ptr<StopSignals> signals;
  std::unique_ptr<StallWatch> stalls;  // a stopped or paused process flags the attempt it stalled
  std::unique_ptr<PowerLimitSession> session;
  std::unique_ptr<NvmlPowerControl> read_only_power;  // what NVML sees, read only (a dry run sets nothing)
  std::string nvml_reason;
  const PowerControl* power = nullptr;  // what this run may set
  if (!o.dry_run) {
    signals = std::make_unique<StopSignals>(restore_on_signal(signal_guard, out));
    stalls = std::make_unique<StallWatch>();
    session = std::make_unique<PowerLimitSession>(ex, o.power_journal, signal_guard, out);
    power = session->power();
  }
  if (!power) read_only_power = NvmlPowerControl::open(nvml_reason);
  if (o.dry_run && ex.allow_power_limit_changes) power = read_only_power.get();
  const PowerArm arm = power_arm(ex, power, power ? power : read_only_power.get(), nvml_reason);
  const int64_t recurrences =
      bso.recurrences.value_or(2 * static_cast<int64_t>(ex.batch_sizes.size()) * static_cast<int64_t>(arm.limits));
  sum.grid = sum.in_shard = recurrences;
  std::fprintf(out, "system %s: %s\n", fingerprint.c_str(), system["label"].get<std::string>().c_str());
  if (const std::string blas = blas_choice_line(); !blas.empty()) std::fprintf(out, "%s\n", blas.c_str());
  std::fprintf(out,
               "experiment %s: the batch-size optimiser over batch sizes %s from %lld, %lld recurrences%s; eta %g, "
               "beta %g, seed %lld, MaxPower %g W; power limit: %s; %s\n",
               ex.name.c_str(), list_text(ex.batch_sizes).c_str(), static_cast<long long>(bso.default_batch_size),
               static_cast<long long>(recurrences), bso.recurrences ? "" : " (2 x batch sizes x power limits)", bso.eta,
               bso.beta, static_cast<long long>(bso.seed), arm.max_power_w, arm.text.c_str(),
               o.dry_run ? "dry run: nothing runs" : ("database " + o.db_path).c_str());

  TunerOptions to;
  to.eta = bso.eta;
  to.beta = bso.beta;
  to.max_power_w = arm.max_power_w;
  to.max_attempts = bso.max_attempts;
  to.power_limits = arm.jit;
  to.batch_size_optimizer = {bso.pruning_rounds, bso.window, static_cast<uint64_t>(bso.seed)};
  RecurrenceTuner tuner(ex.batch_sizes, bso.default_batch_size, to);

  LiveMetrics live("run");
  std::unique_ptr<Monitor> monitor;
  if (!o.dry_run) monitor = open_monitor(o.monitoring, live, make_run_id());
  TrialContext ctx;
  ctx.experiment = &ex;
  ctx.power = session ? session->power() : nullptr;
  ctx.guard = session ? session->guard() : nullptr;
  ctx.live = &live;
  ctx.stop = signals ? &signals->flag() : nullptr;
  ctx.progress = o.progress;
  ctx.provenance = o.dry_run ? json(nullptr) : base_provenance();
  ctx.order = "recurrences";
  ctx.order_seed = bso.seed;
  SweepClaims claims;
  if (o.retry_failed) claims.retry_before = unix_time_s();
  std::unique_ptr<ClaimHeartbeat> heartbeat;
  if (store && !o.dry_run) heartbeat = std::make_unique<ClaimHeartbeat>(o.db_path, claims.holder);
  std::optional<TrialTurn> turn;
  if (store && !o.dry_run) turn.emplace(TrialTurn{ex, o, *store, claims, ctx, sum, out});

  int64_t index = 0;
  std::size_t ran_here = 0;
  auto stop = [&](const std::string& why) {
    sum.recurrences_stop = why;
    std::fprintf(out, "\nrecurrences stopped: %s\n", why.c_str());
  };
  try {
    while (tuner.recurrences_done() < recurrences) {
      const AttemptPlan plan = tuner.next();
      const TrialSpec t = recurrence_trial(ex, {plan, bso.eta, arm.max_power_w}, index++, fingerprint);
      const std::string where = "recurrence " + std::to_string(plan.recurrence + 1) + " attempt " +
                                std::to_string(plan.attempt) + " (batch size " + std::to_string(plan.batch_size) + ")";
      std::optional<TrialRecord> rec;
      const auto it = stored.find(t.key);
      if (it != stored.end() && (it->second.status == TrialStatus::kOk || !o.retry_failed)) {
        rec = it->second;
        ++sum.already_done;
        std::fprintf(out, "== attempt #%lld: %s: stored\n", static_cast<long long>(t.grid_index), t.label().c_str());
      } else if (o.dry_run) {
        std::fprintf(out, "next: attempt #%lld %s  key %s\n", static_cast<long long>(t.grid_index), t.label().c_str(),
                     t.key.c_str());
        break;
      } else {
        ctx.run_count = std::max<int64_t>(recurrences, static_cast<int64_t>(ran_here) + 1);
        if (!turn->run(t, ran_here++, 0, &rec)) break;  // the database cannot be written: sum says why
        if (!rec) {
          // Skipped: stored by another run meanwhile (read it back), or being run by one now.
          if (store->trial_status(t.key) == TrialStatus::kOk) {
            rec = stored_by_key(store.get(), ex.name).at(t.key);
          } else {
            stop(where + " is being run by another balerbench: run the same command again once it ends");
            break;
          }
        }
      }
      if (rec->status != TrialStatus::kOk) {
        stop(where + " " + trial_status_name(rec->status) + ": " + rec->error +
             " (hint: the next attempt depends on its outcome; fix the cause, then run again with --retry-failed)");
        break;
      }
      const json& r = rec->result.value("recurrence", json::object());
      if (!r.contains("energy_j") || !r["energy_j"].is_number() || !r.contains("time_s") || !r["time_s"].is_number()) {
        stop(where + ": the trial has no energy to weigh (its meters gave none)");
        break;
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
      outcome.reached = rec->target_reached;
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
    }
  } catch (const Interrupted& i) {
    sum.signal = i.signal;
  } catch (const TuningError& e) {
    stop(e.what());
  }
  if (session) session->finish();
  if (monitor) monitor->finish();
  if (signals && sum.signal == 0 && signals->stop_requested()) sum.signal = signals->signal();
  heartbeat.reset();
  const json state = tuner.to_json();
  std::fprintf(
      out, "\nrecurrences: %lld of %lld done; batch-size optimiser: %s stage, arms [%s]%s\n",
      static_cast<long long>(tuner.recurrences_done()), static_cast<long long>(recurrences),
      state["batch_size_optimizer"]["stage"].get<std::string>().c_str(),
      list_text(tuner.batch_size_optimizer().arms()).c_str(),
      tuner.cheapest_recurrence_j() ? ("; cheapest recurrence " + joules(*tuner.cheapest_recurrence_j())).c_str() : "");
  if (!o.dry_run) print_summary(sum, o, out);
  return sum;
}

}  // namespace balerbench
