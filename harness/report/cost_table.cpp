// cost_table.cpp: --table cost: Zeus's cost (eta x ETA + (1 - eta) x MaxPower x TTA) picks the best
// configuration at each eta; and the time-energy Pareto frontier (cost_pareto), the configurations
// that no other beats in both.
#include <cmath>
#include <vector>

#include "harness/base/pareto.h"
#include "harness/base/zeus_cost.h"
#include "harness/report/group_cost.h"
#include "harness/report/table_cells.h"
#include "harness/report/table_notes.h"
#include "harness/report/trial_groups.h"

namespace balerbench::report {
namespace {

using nlohmann::json;

// The row of the cheapest configuration at `eta` among those with a cost.
std::vector<json> best_row(double eta, const std::vector<Group>& groups, const std::vector<CostInputs>& inputs) {
  int best_i = -1;
  double best_cost = INFINITY;
  int64_t candidates = 0;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    if (!inputs[i].ok) continue;
    ++candidates;
    const double c = zeus_cost(eta, inputs[i].energy_j, inputs[i].time_s, inputs[i].max_power_w);
    if (c < best_cost) {
      best_cost = c;
      best_i = static_cast<int>(i);
    }
  }
  if (best_i < 0)
    return {eta, "none (no configuration reached the target with energy and MaxPower)", nullptr, nullptr,
            nullptr, nullptr, "-", candidates, "-"};
  const CostInputs& ci = inputs[best_i];
  return {eta, groups[best_i].label(), num(best_cost), num(ci.time_s), num(ci.energy_j),
          num(ci.max_power_w), ci.max_power_source, candidates, groups[best_i].energy_kind()};
}

// Why no configuration has a cost, when that is for want of MaxPower (not of the target).
void no_max_power_note(Table& t, const std::vector<Group>& groups, bool target) {
  int64_t missing = 0;
  for (const auto& g : groups)
    if (!g.ok.empty() && cost_inputs(g, target).why.rfind("no MaxPower", 0) == 0) ++missing;
  if (missing)
    t.notes.push_back(std::to_string(missing) + " configuration(s) have no MaxPower: no NVML GPU, no simulated GPU and "
                      "no cost.max_power_w (set it in the experiment's cost section to rank them).");
}

Table best_table(const std::vector<TrialRecord>& trials, const std::vector<Group>& groups,
                 const std::vector<double>& etas, bool target) {
  Table best;
  best.name = "cost";
  best.title = "Best configuration per eta (Zeus cost) on " + where_run(trials);
  best.columns = {"eta",         "best_configuration", "cost_j",     "time_s",
                  "energy_j",    "max_power_w",        "max_power_source", "candidates", "energy"};
  std::vector<CostInputs> inputs;
  for (const auto& g : groups) inputs.push_back(cost_inputs(g, target));
  for (double eta : etas) best.rows.push_back(best_row(eta, groups, inputs));
  best.notes.push_back(target ? "time and energy are mean TTA and ETA to the target (" + target_text(trials) +
                                    "); configurations where any repeat missed it are not candidates. " +
                                    kTtaIncludesNote
                              : "No target in the experiment: time and energy of the whole training.");
  best.notes.push_back("Zeus cost = eta x ETA + (1 - eta) x MaxPower x TTA; eta = 0 minimises time, eta = 1 energy. "
                       "MaxPower is read with each trial: cost.max_power_w when the experiment sets it, else the "
                       "GPUs' maximum power limit from NVML (read only, summed over the GPUs), else the simulated "
                       "GPU's; max_power_source says which.");
  no_max_power_note(best, groups, target);
  const Axes a = varying(finished(groups));
  if ((a.model || a.ratio) && !target)
    best.notes.push_back("The configurations differ in model or compression ratio, and with no target they are ranked "
                         "by time and energy alone, whatever their reconstruction: set a target (relative_error) so "
                         "that each is measured to the same quality, or compare them in the fidelity table.");
  best.notes.push_back(energy_kind_note());
  run_notes(best, groups);
  return best;
}

Table pareto_table(const std::vector<TrialRecord>& trials, const std::vector<Group>& groups, bool target) {
  Table front;
  front.name = "cost_pareto";
  front.title = "Time-energy Pareto frontier on " + where_run(trials);
  front.columns = {"configuration", "time_s", "energy_j", "energy"};
  const std::vector<ParetoPoint> points = pareto_candidates(groups, target);
  for (const auto& p : pareto_frontier(points))
    front.rows.push_back({groups[p.id].label(), num(p.time_s), num(p.energy_j), groups[p.id].energy_kind()});
  front.notes.push_back("Configurations no other beats in both time and energy (" + std::to_string(front.rows.size()) +
                        " of " + std::to_string(points.size()) + "), fastest first.");
  run_notes(front, groups);
  return front;
}

}  // namespace

std::vector<Table> make_cost_tables(const std::vector<TrialRecord>& trials, const TableOptions& o) {
  const std::vector<double>& etas = o.etas;
  const std::vector<Group> groups = group_trials(trials);
  const bool target = has_target(trials);
  return {best_table(trials, groups, etas, target), pareto_table(trials, groups, target)};
}

}  // namespace balerbench::report
