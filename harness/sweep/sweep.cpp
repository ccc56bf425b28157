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
#include "harness/run/system_description.h"
#include "harness/power/power_limit.h"
#include "harness/monitor/live_metrics.h"
#include "harness/monitor/monitor.h"
#include "harness/store/side_files.h"
#include "harness/store/store.h"
#include "harness/sweep/power_session.h"
#include "harness/sweep/sweep_plan.h"
#include "harness/sweep/stop_signals.h"
#include "harness/trial/trial.h"
#include "harness/sweep/trial_claims.h"
#include "harness/sweep/trial_turn.h"

namespace balerbench {
namespace {

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

}  // namespace

SweepSummary run_sweep(const Experiment& ex, const SweepOptions& o, std::FILE* out) {
  if (ex.batch_size_optimizer.enabled) return run_recurrences(ex, o, out);
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
  ctx.protocol = &ex;
  ctx.dataset_label = ex.dataset.label();
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
