// replay_tables.cpp: replay_tables (replay.h): the tables of one replay, each from the replay's own
// figures: the summary (the default, balerbench's choices over all recurrences, the final choice,
// the best in hindsight), every attempt, and the power limits profiled just in time.
#include <cstdio>

#include "harness/tuning/replay.h"
#include "harness/tuning/replay_text.h"
#include "harness/tuning/resolved_job.h"

namespace balerbench {
namespace {

using nlohmann::json;

// A configuration's expected figures, its savings against the default `d`.
std::vector<json> expected_row(const std::string& what, const Expected& e, const Expected& d) {
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
}

// Balerbench's choices: the mean per recurrence over every attempt.
std::vector<json> choices_row(const ReplayResult& r) {
  const double n = static_cast<double>(r.recurrences);
  const Expected& d = r.default_config;
  const std::string source = r.any_interpolated ? "trace, some interpolated" : "trace";
  return {"balerbench's choices, mean per recurrence (all " + std::to_string(r.recurrences) +
              " recurrences, exploration included)",
          nullptr,
          nullptr,
          num(r.total_time_s / n),
          num(r.total_energy_j / n),
          num(r.total_cost_j / n),
          saving(r.total_energy_j / n, d.eta_j),
          saving(r.total_time_s / n, d.tta_s),
          source + ", " + std::to_string(r.attempts.size()) + " attempts"};
}

std::vector<std::string> summary_notes(const ReplayResult& r, const std::string& workload) {
  std::vector<std::string> notes = {
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
    const double n = static_cast<double>(r.recurrences);
    const double regret = r.total_cost_j - n * r.hindsight_best.cost_j;
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "cost over all recurrences: %.0f J; at the best in hindsight every time %.0f J "
                  "(regret %.0f J, %.1f%%)",
                  r.total_cost_j, n * r.hindsight_best.cost_j, regret, 100 * regret / (n * r.hindsight_best.cost_j));
    notes.push_back(buf);
  }
  for (const std::string& note : r.notes) notes.push_back(note);
  return notes;
}

Table summary_table(const ReplayResult& r, const std::string& gpu, const std::string& workload) {
  Table summary;
  summary.name = "replay";
  summary.title = "Replay of " + workload + " on " + gpu + " (Zeus's traces): target " + num_text(r.job.target_metric) +
                  ", eta " + num_text(r.options.eta) + ", beta " + num_text(r.options.beta) + ", " +
                  std::to_string(r.recurrences) + " recurrences, seed " + std::to_string(r.options.seed);
  summary.columns = {"configuration", "batch_size",        "power_limit_w",   "tta_s",  "eta_j",
                     "cost_j",        "energy_saving_pct", "time_saving_pct", "figures"};
  const Expected& d = r.default_config;
  summary.rows.push_back(expected_row("default (default batch size, highest limit)", d, d));
  summary.rows.push_back(choices_row(r));
  if (r.final_choice)
    summary.rows.push_back(expected_row("final choice (the last recurrence's)", *r.final_choice, d));
  if (r.hindsight_best.runs) summary.rows.push_back(expected_row("best in hindsight", r.hindsight_best, d));
  summary.notes = summary_notes(r, workload);
  return summary;
}

Table attempts_table(const ReplayResult& r, const std::string& gpu, const std::string& workload) {
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
  return attempts;
}

Table power_limits_table(const ReplayResult& r, const std::string& gpu, const std::string& workload) {
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
  return limits;
}

}  // namespace

std::vector<Table> replay_tables(const ReplayResult& r) {
  const std::string gpu = gpu_of(r.power_file);
  const std::string workload = workload_name(r.job.dataset, r.job.network, r.job.optimizer);
  return {summary_table(r, gpu, workload), attempts_table(r, gpu, workload), power_limits_table(r, gpu, workload)};
}

}  // namespace balerbench
