// replay.cpp: see replay.h. replay_job reads as: the job resolved against the traces
// (resolved_job.h), then the recurrences (each attempt planned by the tuner, its power limit profiled
// just in time through the power-limit optimiser on a GPU made of trace rows (trace_gpu.h), its run
// sampled from the train trace), then the expected figures of the default, the final choice and the
// best in hindsight.
#include "harness/tuning/replay.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "common/error.h"
#include "harness/base/analysis.h"
#include "harness/tuning/replay_text.h"
#include "harness/tuning/resolved_job.h"
#include "harness/tuning/seeded_random.h"
#include "harness/tuning/trace_gpu.h"

namespace balerbench {
namespace {

using nlohmann::json;

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

}  // namespace

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

ReplayResult replay_job(const TrainTrace& train, const PowerTrace& power, const ReplayJob& job,
                        const ReplayOptions& options) {
  if (!(options.eta >= 0 && options.eta <= 1)) throw InputError("--eta must be in [0, 1]");
  if (!(options.beta > 1))
    throw InputError("--beta must be greater than 1", "Zeus's default is 2; inf turns the early stop off");
  if (options.recurrences && *options.recurrences < 1) throw InputError("--recurrences must be at least 1");
  const ResolvedJob rv = resolve_job(train, power, job);
  ReplayResult out;
  out.train_file = train.file;
  out.power_file = power.file;
  out.job = {rv.dataset, rv.network, rv.optimizer, rv.target, rv.max_epochs, rv.default_bs};
  out.default_batch_size_rule = rv.default_rule;
  out.batch_sizes = rv.batch_sizes;
  out.power = rv.power;
  out.max_power_w = rv.max_power_w;
  out.options = options;
  out.notes = rv.notes;
  out.recurrences = options.recurrences.value_or(2 * static_cast<int64_t>(rv.batch_sizes.size()) *
                                                 static_cast<int64_t>(rv.limits.size()));
  for (const auto& [bs, points] : rv.power)
    for (const PowerPoint& p : points) out.any_interpolated = out.any_interpolated || p.interpolated;

  TunerOptions to;
  to.eta = options.eta;
  to.beta = options.beta;
  to.max_power_w = rv.max_power_w;
  to.max_attempts = options.max_attempts;
  to.batch_size_optimizer.seed = options.seed;
  RecurrenceTuner tuner(rv.batch_sizes, rv.default_bs, to);
  // The runs are sampled from a stream of their own, so that the bandit's draws and the runs drawn
  // do not move together.
  const uint64_t path_seed = options.seed ^ 0x9E3779B97F4A7C15ULL;
  SeededRandom paths(path_seed);
  std::map<int64_t, Profile> profiles;
  while (tuner.recurrences_done() < out.recurrences) {
    ReplayAttempt a;
    a.plan = tuner.next();
    const int64_t bs = a.plan.batch_size;
    const std::vector<PowerPoint>& points = rv.power.at(bs);
    if (a.plan.profile_power_limit) {
      // As Zeus's simulator, the limits are profiled (and the choice kept) before the bound is
      // checked: the chosen limit's epoch cost is what the bound is checked against.
      const Profile p = profile_limits(points, options.eta);
      profiles[bs] = p;
      tuner.set_power_limit(bs, p.chosen_w);
      out.jit.push_back({bs, a.plan.recurrence, p.chosen_w, trace_optimum(points, options.eta), p.optimizer});
      a.profiled = true;
    }
    a.power_limit_w = *tuner.power_limit(bs);
    const PowerPoint& row = point_at(points, a.power_limit_w);
    a.interpolated = row.interpolated;
    const std::vector<RunPath>& runs = rv.runs.at(bs);
    const RunPath& path = runs[paths.below(runs.size())];
    a.run = path.run;
    a.target_epoch = path.target_epoch;
    a.train_line = path.line;
    a.epochs_allowed = rv.max_epochs;
    if (a.plan.cost_bound_j) {
      // The most whole epochs whose cost stays within the bound (MaxPower: this batch size's
      // highest limit, as Zeus's simulator has it here).
      const double epoch_cost =
          options.eta * row.energy_per_epoch_j() + (1 - options.eta) * points.front().limit_w * row.time_per_epoch_s;
      const double fit = std::floor(*a.plan.cost_bound_j / epoch_cost);
      a.epochs_allowed =
          fit < static_cast<double>(rv.max_epochs) ? static_cast<int64_t>(std::max(0.0, fit)) : rv.max_epochs;
    }
    AttemptOutcome o;
    const std::string at = "batch size " + std::to_string(bs) + " at " + num_text(a.power_limit_w) + " W (" +
                           power.file + " " + row.source + ")";
    if (a.epochs_allowed == 0) {
      o.ran = false;
      a.ran = false;
      a.how = "not run: one epoch at " + at + " would pass the cost bound";
    } else {
      a.reached = path.target_epoch && *path.target_epoch <= a.epochs_allowed;
      a.epochs = a.reached ? *path.target_epoch : a.epochs_allowed;
      const std::string run_text =
          "run " + std::to_string(path.run) + " (" + train.file + " line " + std::to_string(path.line) + ")";
      const std::string epochs_text =
          a.reached ? std::to_string(a.epochs) + " epochs to target, " + run_text
                    : std::to_string(a.epochs) + " epochs, stopped " +
                          (a.epochs < rv.max_epochs ? std::string("at the cost bound") : std::string("at max_epochs")) +
                          " (" + run_text +
                          (path.target_epoch ? " reaches it at epoch " + std::to_string(*path.target_epoch)
                                             : std::string(" never reaches it")) +
                          ")";
      if (a.profiled) {
        const Profile& p = profiles.at(bs);
        o.time_s = p.epoch_time_s + static_cast<double>(a.epochs - 1) * row.time_per_epoch_s;
        o.energy_j = p.epoch_energy_j + static_cast<double>(a.epochs - 1) * row.energy_per_epoch_j();
        a.how = epochs_text + "; epoch 1 profiled the " + std::to_string(points.size()) +
                " limits (the mean of their rows), the rest at " + at;
      } else {
        o.time_s = static_cast<double>(a.epochs) * row.time_per_epoch_s;
        o.energy_j = static_cast<double>(a.epochs) * row.energy_per_epoch_j();
        a.how = epochs_text + " x " + at;
      }
      o.reached = a.reached;
      a.time_s = o.time_s;
      a.energy_j = o.energy_j;
    }
    a.result = tuner.finish(a.plan, o);
    out.total_time_s += a.time_s;
    out.total_energy_j += a.energy_j;
    out.total_cost_j += a.result.cost_j;
    out.attempts.push_back(std::move(a));
  }
  out.tuner = tuner.to_json();
  out.tuner["path_seed"] = path_seed;
  out.tuner["path_random_draws"] = paths.draws();

  // The default, the final choice, the best in hindsight.
  out.default_config = expected_of(rv, rv.default_bs, rv.power.at(rv.default_bs).front().limit_w, options.eta);
  if (out.default_config.runs_reached < out.default_config.runs)
    out.notes.push_back("the default configuration reaches the target in " +
                        std::to_string(out.default_config.runs_reached) + " of its " +
                        std::to_string(out.default_config.runs) + " runs; its figures are over those");
  for (auto it = out.attempts.rbegin(); it != out.attempts.rend(); ++it)
    if (it->reached) {
      out.final_choice = expected_of(rv, it->plan.batch_size, it->power_limit_w, options.eta);
      break;
    }
  std::optional<Expected> best;
  std::vector<std::string> incomplete;
  for (int64_t bs : rv.batch_sizes)
    for (const PowerPoint& p : rv.power.at(bs)) {
      const Expected e = expected_of(rv, bs, p.limit_w, options.eta);
      if (e.runs_reached < e.runs) {
        if (p.limit_w == rv.power.at(bs).front().limit_w) incomplete.push_back(std::to_string(bs));
        continue;
      }
      if (!best || e.cost_j < best->cost_j) best = e;
    }
  if (!incomplete.empty())
    out.notes.push_back(
        "best in hindsight: batch sizes where a run misses the target within max_epochs are left "
        "out of it (" +
        [&] {
          std::string s;
          for (const auto& x : incomplete) s += (s.empty() ? "" : ", ") + x;
          return s;
        }() +
        ")");
  if (best) out.hindsight_best = *best;
  for (const JitChoice& j : out.jit)
    if (j.chosen_w != j.trace_optimum_w)
      out.notes.push_back("batch size " + std::to_string(j.batch_size) + ": the optimiser chose " +
                          num_text(j.chosen_w) + " W, the rows' cheapest epoch is at " + num_text(j.trace_optimum_w) +
                          " W");
  return out;
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

namespace {

std::string config_text(const Expected& e) {
  return std::to_string(e.batch_size) + " @ " + num_text(e.power_limit_w) + " W";
}

}  // namespace

std::vector<Table> replay_tables(const ReplayResult& r) {
  const std::string gpu = gpu_of(r.power_file);
  const std::string workload = workload_name(r.job.dataset, r.job.network, r.job.optimizer);
  const double n = static_cast<double>(r.recurrences);
  const Expected& d = r.default_config;
  Table summary;
  summary.name = "replay";
  summary.title = "Replay of " + workload + " on " + gpu + " (Zeus's traces): target " + num_text(r.job.target_metric) +
                  ", eta " + num_text(r.options.eta) + ", beta " + num_text(r.options.beta) + ", " +
                  std::to_string(r.recurrences) + " recurrences, seed " + std::to_string(r.options.seed);
  summary.columns = {"configuration", "batch_size",        "power_limit_w",   "tta_s",  "eta_j",
                     "cost_j",        "energy_saving_pct", "time_saving_pct", "figures"};
  const std::string source = r.any_interpolated ? "trace, some interpolated" : "trace";
  auto expected_row = [&](const std::string& what, const Expected& e) {
    return std::vector<json>{what,
                             e.batch_size,
                             e.power_limit_w,
                             num(e.tta_s),
                             num(e.eta_j),
                             num(e.cost_j),
                             saving(e.eta_j, d.eta_j),
                             saving(e.tta_s, d.tta_s),
                             std::string(e.interpolated ? "interpolated" : "trace") + ", mean of " +
                                 std::to_string(e.runs_reached) + " runs"};
  };
  summary.rows.push_back(expected_row("default (default batch size, highest limit)", d));
  summary.rows.push_back({"balerbench's choices, mean per recurrence (all " + std::to_string(r.recurrences) +
                              " recurrences, exploration included)",
                          nullptr, nullptr, num(r.total_time_s / n), num(r.total_energy_j / n), num(r.total_cost_j / n),
                          saving(r.total_energy_j / n, d.eta_j), saving(r.total_time_s / n, d.tta_s),
                          source + ", " + std::to_string(r.attempts.size()) + " attempts"});
  if (r.final_choice) summary.rows.push_back(expected_row("final choice (the last recurrence's)", *r.final_choice));
  if (r.hindsight_best.runs) summary.rows.push_back(expected_row("best in hindsight", r.hindsight_best));
  summary.notes = {
      "traces: " + r.train_file + " and " + r.power_file +
          "; every figure is a trace row or a combination of rows "
          "(the figures column says which; docs: Choosing batch size and power limit)",
      "job: " + workload + ", target_metric " + num_text(r.job.target_metric) + ", max_epochs " +
          std::to_string(r.job.max_epochs) + ", default batch size " + std::to_string(r.job.default_batch_size) + " (" +
          r.default_batch_size_rule + "); batch sizes " + list_text(r.batch_sizes),
      "cost = eta x energy + (1 - eta) x MaxPower x time, MaxPower " + num_text(r.max_power_w) +
          " W (the power trace's largest limit, as Zeus's simulator)",
      "savings are against the default: 100 x (1 - figure / default's)",
      "seeds: batch-size optimiser " + std::to_string(r.options.seed) + ", sampled runs " +
          r.tuner.value("path_seed", json(nullptr)).dump(),
  };
  if (r.hindsight_best.runs && r.hindsight_best.cost_j > 0) {
    const double regret = r.total_cost_j - n * r.hindsight_best.cost_j;
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "cost over all recurrences: %.0f J; at the best in hindsight every time %.0f J "
                  "(regret %.0f J, %.1f%%)",
                  r.total_cost_j, n * r.hindsight_best.cost_j, regret, 100 * regret / (n * r.hindsight_best.cost_j));
    summary.notes.push_back(buf);
  }
  for (const std::string& note : r.notes) summary.notes.push_back(note);

  Table attempts;
  attempts.name = "replay_attempts";
  attempts.title = "Every attempt of the replay of " + workload + " on " + gpu;
  attempts.columns = {"recurrence", "attempt",      "stage",          "batch_size", "power_limit_w", "profiled",
                      "run",        "target_epoch", "epochs_allowed", "epochs",     "reached",       "time_s",
                      "energy_j",   "cost_j",       "cost_bound_j",   "figures"};
  for (const ReplayAttempt& a : r.attempts)
    attempts.rows.push_back({a.plan.recurrence + 1, a.plan.attempt, a.plan.stage, a.plan.batch_size, a.power_limit_w,
                             a.profiled, a.run, a.target_epoch ? json(*a.target_epoch) : json(nullptr),
                             a.epochs_allowed, a.epochs, a.reached, num(a.time_s), num(a.energy_j),
                             num(a.result.cost_j), a.plan.cost_bound_j ? num(*a.plan.cost_bound_j) : json(nullptr),
                             a.how});
  attempts.notes = {
      "recurrences are numbered from 1; an attempt that could not run one epoch under the cost bound "
      "costs nothing, and the optimiser observes 100 x the bound for it (Zeus's simulator)",
      "stage: pruning (each round walks down from the start, then up) or thompson (Gaussian Thompson "
      "sampling over the survivors)"};

  Table limits;
  limits.name = "replay_power_limits";
  limits.title = "Power limits profiled just in time in the replay of " + workload + " on " + gpu;
  limits.columns = {"batch_size", "recurrence", "power_limit_w", "time_s", "energy_j",
                    "cost_j",     "chosen",     "cheapest_row",  "row"};
  for (const JitChoice& j : r.jit) {
    const std::vector<PowerPoint>& points = r.power.at(j.batch_size);
    for (const json& p : j.optimizer["profiles"]) {
      const double w = p["limit_w"].get<double>();
      limits.rows.push_back({j.batch_size, j.recurrence + 1, w, p["time_s"], p["energy_j"], p["cost_j"],
                             w == j.chosen_w, w == j.trace_optimum_w, point_at(points, w).source});
    }
  }
  limits.notes = {
      "each batch size's first attempt profiles every limit for an equal share of its first epoch "
      "(the power-limit optimiser, fed the rows instead of meter readings); cost at eta " +
      num_text(r.options.eta) +
      " with that batch size's highest limit as MaxPower, as Zeus's "
      "simulator profiles it"};
  return {summary, attempts, limits};
}

std::vector<Table> reproduction_tables(const Reproduction& rep) {
  Table t;
  t.name = "reproduction";
  t.title =
      "Zeus's headline result replayed: energy and time saved against the default configuration (the "
      "default batch size at the highest limit)";
  t.columns = {"gpu",
               "workload",
               "default",
               "recurrences",
               "seeds",
               "energy_saving_pct",
               "time_saving_pct",
               "final_choice",
               "final_energy_saving_pct",
               "final_time_saving_pct",
               "best_in_hindsight",
               "best_energy_saving_pct",
               "best_time_saving_pct"};
  auto mean = [](const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return v.empty() ? NAN : s / static_cast<double>(v.size());
  };
  struct Range {
    double lo = INFINITY, hi = -INFINITY;
    int64_t n = 0;
    void add(double v) {
      if (!std::isfinite(v)) return;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      ++n;
    }
    json text() const {
      if (n == 0) return nullptr;
      std::ostringstream s;
      s.setf(std::ios::fixed);
      s.precision(1);
      s << lo << "%-" << hi << "%";
      return s.str();
    }
  };
  std::map<std::string, std::array<Range, 4>> ranges;  // gpu -> all-recurrence energy, time; final energy; best energy
  std::vector<std::string> gpus;
  for (const Reproduction::Row& row : rep.rows) {
    if (row.runs.empty()) continue;
    const ReplayResult& first = row.runs.front();
    std::vector<double> e_all, t_all, e_final, t_final;
    std::map<std::string, int> finals;
    for (const ReplayResult& r : row.runs) {
      const double n = static_cast<double>(r.recurrences);
      const Expected& d = r.default_config;
      e_all.push_back(100 * (1 - r.total_energy_j / n / d.eta_j));
      t_all.push_back(100 * (1 - r.total_time_s / n / d.tta_s));
      if (r.final_choice) {
        e_final.push_back(100 * (1 - r.final_choice->eta_j / d.eta_j));
        t_final.push_back(100 * (1 - r.final_choice->tta_s / d.tta_s));
        ++finals[config_text(*r.final_choice)];
      }
    }
    // The final choices, the most frequent first.
    std::vector<std::pair<int, std::string>> by_count;
    for (const auto& [c, k] : finals) by_count.push_back({-k, c});
    std::sort(by_count.begin(), by_count.end());
    std::string final_text;
    for (const auto& [k, c] : by_count)
      final_text +=
          (final_text.empty() ? "" : ", ") + c + (row.runs.size() > 1 ? " (" + std::to_string(-k) + "x)" : "");
    const Expected& d = first.default_config;
    const Expected& b = first.hindsight_best;
    t.rows.push_back({row.gpu, first.job.dataset, config_text(d), first.recurrences,
                      static_cast<int64_t>(row.runs.size()), num(mean(e_all)), num(mean(t_all)), final_text,
                      num(mean(e_final)), num(mean(t_final)), b.runs ? json(config_text(b)) : json(nullptr),
                      b.runs ? saving(b.eta_j, d.eta_j) : json(nullptr),
                      b.runs ? saving(b.tta_s, d.tta_s) : json(nullptr)});
    if (!ranges.count(row.gpu)) gpus.push_back(row.gpu);
    auto& g = ranges[row.gpu];
    g[0].add(mean(e_all));
    g[1].add(mean(t_all));
    g[2].add(mean(e_final));
    if (b.runs) g[3].add(100 * (1 - b.eta_j / d.eta_j));
  }
  t.notes = {
      "made by: " + rep.command,
      "energy_saving_pct / time_saving_pct: the mean per recurrence over all recurrences (exploration, "
      "early-stopped attempts and profiling included) against the default's expected ETA / TTA; final_*: the "
      "expected ETA / TTA of the configuration of the last recurrence; best_*: the cheapest configuration in "
      "hindsight (mean over the trace's runs); means over the seeds",
      "eta 0.5, beta 2, recurrences 2 x |batch sizes| x |power limits|, default batch sizes from Zeus's "
      "example scripts (run_alibaba.py); why the figures differ from the paper's: docs/batch_size_and_power_limit.md"};
  Table r;
  r.name = "reproduction_ranges";
  r.title = "The ranges over the workloads beside the paper's";
  r.columns = {"gpu",
               "workloads",
               "energy_saving_pct",
               "time_saving_pct",
               "final_energy_saving_pct",
               "best_energy_saving_pct",
               "paper_energy_saving_pct",
               "paper_time_saving_pct"};
  for (const std::string& gpu : gpus) {
    const auto& g = ranges.at(gpu);
    int64_t workloads = 0;
    for (const Reproduction::Row& row : rep.rows) workloads += row.gpu == gpu && !row.runs.empty();
    r.rows.push_back({gpu, workloads, g[0].text(), g[1].text(), g[2].text(), g[3].text(),
                      std::string(kZeusPaperEnergyRange), std::string(kZeusPaperTimeSaving)});
  }
  r.notes = {"paper (You, Chung, Chowdhury, NSDI'23): energy " + std::string(kZeusPaperEnergyRange) +
             " and training "
             "time " +
             kZeusPaperTimeSaving +
             " less across its six workloads; the ranges here are over the workloads "
             "replayed on each GPU"};
  return {t, r};
}

}  // namespace balerbench
