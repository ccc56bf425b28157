// replay.cpp: see replay.h. replay_job reads as its steps: the job resolved against the traces
// (resolved_job.h); then the recurrences, each attempt planned by the tuner, its power limit profiled
// just in time through the power-limit optimiser on a GPU made of trace rows (trace_gpu.h), its run
// sampled from the train trace and its figures made of the rows; then the expected figures of the
// default, the final choice and the best in hindsight. The tables are replay_tables.cpp's and
// reproduction_tables.cpp's.
#include "harness/tuning/replay.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "harness/base/zeus_cost.h"
#include "harness/tuning/replay_text.h"
#include "harness/tuning/resolved_job.h"
#include "harness/tuning/seeded_random.h"
#include "harness/tuning/trace_gpu.h"

namespace balerbench {
namespace {

using nlohmann::json;

// What every attempt of one replay reads: the resolved job, the options, the traces' files.
struct ReplayContext {
  const ResolvedJob& job;
  const ReplayOptions& options;
  const std::string& train_file;
  const std::string& power_file;
};

void check_options(const ReplayOptions& options) {
  if (!(options.eta >= 0 && options.eta <= 1)) throw InputError("--eta must be in [0, 1]");
  if (!(options.beta > 1))
    throw InputError("--beta must be greater than 1", "Zeus's default is 2; inf turns the early stop off");
  if (options.recurrences && *options.recurrences < 1) throw InputError("--recurrences must be at least 1");
}

// The result before any recurrence: the traces, the job as resolved, how many recurrences.
ReplayResult result_of(const ReplayContext& c) {
  const ResolvedJob& rv = c.job;
  ReplayResult out;
  out.train_file = c.train_file;
  out.power_file = c.power_file;
  out.job = {rv.dataset, rv.network, rv.optimizer, rv.target, rv.max_epochs, rv.default_bs};
  out.default_batch_size_rule = rv.default_rule;
  out.batch_sizes = rv.batch_sizes;
  out.power = rv.power;
  out.max_power_w = rv.max_power_w;
  out.options = c.options;
  out.notes = rv.notes;
  out.recurrences = c.options.recurrences.value_or(2 * static_cast<int64_t>(rv.batch_sizes.size()) *
                                                   static_cast<int64_t>(rv.limits.size()));
  for (const auto& [bs, points] : rv.power)
    for (const PowerPoint& p : points) out.any_interpolated = out.any_interpolated || p.interpolated;
  return out;
}

TunerOptions tuner_options(const ReplayContext& c) {
  TunerOptions to;
  to.eta = c.options.eta;
  to.beta = c.options.beta;
  to.max_power_w = c.job.max_power_w;
  to.max_attempts = c.options.max_attempts;
  to.batch_size_optimizer.seed = c.options.seed;
  return to;
}

// The epochs the attempt may train: max_epochs, or under a cost bound the most whole epochs whose
// cost stays within it (MaxPower: this batch size's highest limit, as Zeus's simulator has it here).
int64_t epochs_allowed(const ReplayContext& c, const AttemptPlan& plan, const PowerPoint& row) {
  const int64_t max_epochs = c.job.max_epochs;
  if (!plan.cost_bound_j) return max_epochs;
  const double eta = c.options.eta;
  const double max_w = c.job.power.at(plan.batch_size).front().limit_w;
  const double epoch_cost = eta * row.energy_per_epoch_j() + (1 - eta) * max_w * row.time_per_epoch_s;
  const double fit = std::floor(*plan.cost_bound_j / epoch_cost);
  return fit < static_cast<double>(max_epochs) ? static_cast<int64_t>(std::max(0.0, fit)) : max_epochs;
}

// How many epochs the attempt ran and why it stopped, with the sampled run behind it.
std::string epochs_text(const ReplayContext& c, const ReplayAttempt& a, const RunPath& path) {
  const std::string run_text =
      "run " + std::to_string(path.run) + " (" + c.train_file + " line " + std::to_string(path.line) + ")";
  if (a.reached) return std::to_string(a.epochs) + " epochs to target, " + run_text;
  return std::to_string(a.epochs) + " epochs, stopped " +
         (a.epochs < c.job.max_epochs ? std::string("at the cost bound") : std::string("at max_epochs")) + " (" +
         run_text +
         (path.target_epoch ? " reaches it at epoch " + std::to_string(*path.target_epoch)
                            : std::string(" never reaches it")) +
         ")";
}

// The attempt on its sampled run: its epochs, and their time and energy made of the limit's row
// (the profiling epoch's from the profile), with how; `profile` when this attempt profiled.
AttemptOutcome run_attempt(const ReplayContext& c, const RunPath& path, const PowerPoint& row, const Profile* profile,
                           ReplayAttempt& a) {
  AttemptOutcome o;
  const std::string at = "batch size " + std::to_string(a.plan.batch_size) + " at " + num_text(a.power_limit_w) +
                         " W (" + c.power_file + " " + row.source + ")";
  if (a.epochs_allowed == 0) {
    o.ran = false;
    a.ran = false;
    a.how = "not run: one epoch at " + at + " would pass the cost bound";
    return o;
  }
  a.reached = path.target_epoch && *path.target_epoch <= a.epochs_allowed;
  a.epochs = a.reached ? *path.target_epoch : a.epochs_allowed;
  if (profile) {
    o.time_s = profile->epoch_time_s + static_cast<double>(a.epochs - 1) * row.time_per_epoch_s;
    o.energy_j = profile->epoch_energy_j + static_cast<double>(a.epochs - 1) * row.energy_per_epoch_j();
    a.how = epochs_text(c, a, path) + "; epoch 1 profiled the " +
            std::to_string(c.job.power.at(a.plan.batch_size).size()) +
            " limits (the mean of their rows), the rest at " + at;
  } else {
    o.time_s = static_cast<double>(a.epochs) * row.time_per_epoch_s;
    o.energy_j = static_cast<double>(a.epochs) * row.energy_per_epoch_j();
    a.how = epochs_text(c, a, path) + " x " + at;
  }
  o.reached = a.reached;
  a.time_s = o.time_s;
  a.energy_j = o.energy_j;
  return o;
}

// The recurrences: each attempt as the tuner plans it, its limit profiled at a batch size's first
// attempt (as Zeus's simulator, before the bound is checked: the chosen limit's epoch cost is what
// the bound is checked against), its run drawn from the batch size's runs at the target.
void replay_recurrences(const ReplayContext& c, ReplayResult& out) {
  RecurrenceTuner tuner(c.job.batch_sizes, c.job.default_bs, tuner_options(c));
  // The runs are sampled from a stream of their own, so that the bandit's draws and the runs drawn
  // do not move together.
  const uint64_t path_seed = c.options.seed ^ 0x9E3779B97F4A7C15ULL;
  SeededRandom paths(path_seed);
  while (tuner.recurrences_done() < out.recurrences) {
    ReplayAttempt a;
    a.plan = tuner.next();
    const int64_t bs = a.plan.batch_size;
    const std::vector<PowerPoint>& points = c.job.power.at(bs);
    std::optional<Profile> profile;
    if (a.plan.profile_power_limit) {
      profile = profile_limits(points, c.options.eta);
      tuner.set_power_limit(bs, profile->chosen_w);
      out.jit.push_back({bs, a.plan.recurrence, profile->chosen_w, trace_optimum(points, c.options.eta),
                         profile->optimizer});
      a.profiled = true;
    }
    a.power_limit_w = *tuner.power_limit(bs);
    const PowerPoint& row = point_at(points, a.power_limit_w);
    a.interpolated = row.interpolated;
    const std::vector<RunPath>& runs = c.job.runs.at(bs);
    const RunPath& path = runs[paths.below(runs.size())];
    a.run = path.run;
    a.target_epoch = path.target_epoch;
    a.train_line = path.line;
    a.epochs_allowed = epochs_allowed(c, a.plan, row);
    a.result = tuner.finish(a.plan, run_attempt(c, path, row, profile ? &*profile : nullptr, a));
    out.total_time_s += a.time_s;
    out.total_energy_j += a.energy_j;
    out.total_cost_j += a.result.cost_j;
    out.attempts.push_back(std::move(a));
  }
  out.tuner = tuner.to_json();
  out.tuner["path_seed"] = path_seed;
  out.tuner["path_random_draws"] = paths.draws();
}

// The expected figures of batch size `bs` at limit `w`: the mean over its runs that reach the target
// within max_epochs of target_epoch x the row's figures.
Expected expected_of(const ResolvedJob& r, int64_t bs, double w, double eta) {
  const PowerPoint& p = point_at(r.power.at(bs), w);
  Expected e;
  e.batch_size = bs;
  e.power_limit_w = w;
  e.interpolated = p.interpolated;
  double epochs = 0;
  for (const RunPath& run : r.runs.at(bs)) {
    ++e.runs;
    if (run.target_epoch && *run.target_epoch <= r.max_epochs) {
      ++e.runs_reached;
      epochs += static_cast<double>(*run.target_epoch);
    }
  }
  if (e.runs_reached == 0) return e;
  e.mean_epochs = epochs / static_cast<double>(e.runs_reached);
  e.tta_s = e.mean_epochs * p.time_per_epoch_s;
  e.eta_j = e.tta_s * p.average_power_w;
  e.cost_j = zeus_cost(eta, e.eta_j, e.tta_s, r.max_power_w);
  return e;
}

// The cheapest configuration in hindsight among those whose every run reaches the target (none when
// none does); the batch sizes left out are noted.
std::optional<Expected> hindsight_best(const ResolvedJob& rv, double eta, std::vector<std::string>& notes) {
  std::optional<Expected> best;
  std::string incomplete;
  for (int64_t bs : rv.batch_sizes)
    for (const PowerPoint& p : rv.power.at(bs)) {
      const Expected e = expected_of(rv, bs, p.limit_w, eta);
      if (e.runs_reached < e.runs) {
        if (p.limit_w == rv.power.at(bs).front().limit_w)
          incomplete += (incomplete.empty() ? "" : ", ") + std::to_string(bs);
        continue;
      }
      if (!best || e.cost_j < best->cost_j) best = e;
    }
  if (!incomplete.empty())
    notes.push_back(
        "best in hindsight: batch sizes where a run misses the target within max_epochs are left "
        "out of it (" +
        incomplete + ")");
  return best;
}

// The default (the default batch size at its highest limit), the final choice (the last reaching
// attempt's configuration), the best in hindsight, and where the optimiser's limit and the rows'
// cheapest differ.
void expected_figures(const ResolvedJob& rv, double eta, ReplayResult& out) {
  out.default_config = expected_of(rv, rv.default_bs, rv.power.at(rv.default_bs).front().limit_w, eta);
  if (out.default_config.runs_reached < out.default_config.runs)
    out.notes.push_back("the default configuration reaches the target in " +
                        std::to_string(out.default_config.runs_reached) + " of its " +
                        std::to_string(out.default_config.runs) + " runs; its figures are over those");
  for (auto it = out.attempts.rbegin(); it != out.attempts.rend(); ++it)
    if (it->reached) {
      out.final_choice = expected_of(rv, it->plan.batch_size, it->power_limit_w, eta);
      break;
    }
  if (const std::optional<Expected> best = hindsight_best(rv, eta, out.notes)) out.hindsight_best = *best;
  for (const JitChoice& j : out.jit)
    if (j.chosen_w != j.trace_optimum_w)
      out.notes.push_back("batch size " + std::to_string(j.batch_size) + ": the optimiser chose " +
                          num_text(j.chosen_w) + " W, the rows' cheapest epoch is at " + num_text(j.trace_optimum_w) +
                          " W");
}

}  // namespace

ReplayResult replay_job(const TrainTrace& train, const PowerTrace& power, const ReplayJob& job,
                        const ReplayOptions& options) {
  check_options(options);
  const ResolvedJob resolved = resolve_job(train, power, job);
  const ReplayContext c{resolved, options, train.file, power.file};
  ReplayResult out = result_of(c);
  replay_recurrences(c, out);
  expected_figures(resolved, options.eta, out);
  return out;
}

json Expected::to_json() const {
  return {{"batch_size", batch_size},
          {"power_limit_w", power_limit_w},
          {"runs", runs},
          {"runs_reached", runs_reached},
          {"mean_epochs", runs_reached ? json(mean_epochs) : json(nullptr)},
          {"tta_s", runs_reached ? json(tta_s) : json(nullptr)},
          {"eta_j", runs_reached ? json(eta_j) : json(nullptr)},
          {"cost_j", runs_reached ? json(cost_j) : json(nullptr)},
          {"interpolated", interpolated}};
}

json ReplayResult::to_json() const {
  json attempts_json = json::array();
  for (const ReplayAttempt& a : attempts)
    attempts_json.push_back({{"plan", a.plan.to_json()},
                             {"power_limit_w", a.power_limit_w},
                             {"run", a.run},
                             {"target_epoch", a.target_epoch ? json(*a.target_epoch) : json(nullptr)},
                             {"train_line", a.train_line},
                             {"epochs_allowed", a.epochs_allowed},
                             {"epochs", a.epochs},
                             {"ran", a.ran},
                             {"reached", a.reached},
                             {"profiled", a.profiled},
                             {"interpolated", a.interpolated},
                             {"time_s", a.time_s},
                             {"energy_j", a.energy_j},
                             {"cost_j", a.result.cost_j},
                             {"observed_cost_j", a.result.observed_cost_j},
                             {"how", a.how}});
  json jit_json = json::array();
  for (const JitChoice& j : jit)
    jit_json.push_back({{"batch_size", j.batch_size},
                        {"recurrence", j.recurrence},
                        {"chosen_w", j.chosen_w},
                        {"trace_optimum_w", j.trace_optimum_w},
                        {"optimizer", j.optimizer}});
  return {{"train_file", train_file},
          {"power_file", power_file},
          {"gpu", gpu_of(power_file)},
          {"job",
           {{"dataset", job.dataset},
            {"network", job.network},
            {"optimizer", job.optimizer},
            {"target_metric", job.target_metric},
            {"max_epochs", job.max_epochs},
            {"default_batch_size", job.default_batch_size},
            {"default_batch_size_rule", default_batch_size_rule}}},
          {"batch_sizes", batch_sizes},
          {"max_power_w", max_power_w},
          {"recurrences", recurrences},
          {"attempts", attempts_json},
          {"power_limit_choices", jit_json},
          {"default", default_config.to_json()},
          {"final_choice", final_choice ? final_choice->to_json() : json(nullptr)},
          {"best_in_hindsight", hindsight_best.runs ? hindsight_best.to_json() : json(nullptr)},
          {"totals", {{"time_s", total_time_s}, {"energy_j", total_energy_j}, {"cost_j", total_cost_j}}},
          {"tuner", tuner},
          {"notes", notes}};
}

}  // namespace balerbench
