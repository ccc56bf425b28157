// axis_tables.cpp: --table batch_size and --table power_limit: time, energy, time and energy to the
// target, and Zeus's cost at each eta, per batch size or GPU power limit (as the Zeus papers show
// them). With --table all, each is made only where its axis varies.
#include <algorithm>
#include <string>
#include <vector>

#include "harness/base/statistics.h"
#include "harness/base/zeus_cost.h"
#include "harness/report/group_cost.h"
#include "harness/report/group_checks.h"
#include "harness/report/ratio_comparison.h"
#include "harness/report/table_cells.h"
#include "harness/report/table_notes.h"
#include "harness/report/trial_groups.h"

namespace balerbench::report {
namespace {

using nlohmann::json;

std::vector<Group> sorted_by_axis(std::vector<Group> groups, bool by_batch) {
  std::stable_sort(groups.begin(), groups.end(), [&](const Group& x, const Group& y) {
    if (!same_model(x, y)) return model_before(x, y);
    const double kx = by_batch ? static_cast<double>(x.batch_size) : x.power_limit_w.value_or(-1);
    const double ky = by_batch ? static_cast<double>(y.batch_size) : y.power_limit_w.value_or(-1);
    if (kx != ky) return kx < ky;
    return precision_rank(x.precision) < precision_rank(y.precision);
  });
  return groups;
}

std::vector<json> axis_row(const Group& g, const Axes& a, bool by_batch, bool target, const std::vector<double>& etas) {
  const Summary time = g.stat([](const TrialRecord& r) { return r.train_s; });
  const Summary energy = g.stat([](const TrialRecord& r) { return r.train_energy_j; });
  const Summary tta = g.stat([](const TrialRecord& r) { return r.target_reached ? r.tta_s : std::nullopt; });
  const Summary eta_j = g.stat([](const TrialRecord& r) { return r.target_reached ? r.eta_j : std::nullopt; });
  const Summary energy_pm = g.stat([](const TrialRecord& r) { return uncertainty_of(r, "train_j"); });
  const Summary eta_pm =
      g.stat([](const TrialRecord& r) { return r.target_reached ? uncertainty_of(r, "eta_j") : std::nullopt; });
  std::vector<json> row;
  axis_cells(row, g, a);
  row.push_back(static_cast<int64_t>(g.ok.size()));
  row.push_back(mean_or_null(time));
  row.push_back(mean_or_null(energy));
  row.push_back(energy_pm.n ? num(energy_pm.mean) : json("-"));
  row.push_back(target ? json(std::to_string(tta.n) + "/" + std::to_string(g.ok.size())) : json("no target"));
  row.push_back(tta.n ? num(tta.mean) : json(target ? "not reached" : "-"));
  row.push_back(eta_j.n ? num(eta_j.mean) : json(target ? "not reached" : "-"));
  row.push_back(eta_pm.n ? num(eta_pm.mean) : json("-"));
  row.push_back(updates_cell(g, "eta"));
  row.push_back(window_cell(g, "eta"));
  if (!by_batch) {
    const Summary enf = g.stat([](const TrialRecord& r) { return r.enforced_power_limit_w; });
    row.push_back(enf.n ? num(enf.mean) : json(nullptr));
  }
  const CostInputs ci = cost_inputs(g, target);
  for (double eta : etas)
    row.push_back(ci.ok ? num(zeus_cost(eta, ci.energy_j, ci.time_s, ci.max_power_w)) : json(ci.why));
  row.push_back(g.energy_kind());
  return row;
}

void axis_notes(Table& t, const std::vector<TrialRecord>& trials, bool target) {
  t.notes.push_back(target ? "TTA/ETA: time and energy from the start of training to the end of the first epoch "
                             "(evaluation included) that met the target (" +
                                 target_text(trials) +
                                 "); \"reached\" counts repeats that met it. " + kTtaIncludesNote +
                                 " Cost uses mean ETA and TTA."
                           : "No target in the experiment: cost uses the whole training's time and energy.");
  t.notes.push_back("Zeus cost = eta x ETA + (1 - eta) x MaxPower x TTA (J); MaxPower is stored with each trial.");
  t.notes.push_back(kUncertaintyNote);
  t.notes.push_back("eta_updates: the fewest meter updates inside a repeat's ETA window; eta_window: short when below "
                    "the trial's threshold ('-': estimated energy, or no target reached).");
  t.notes.push_back(energy_kind_note());
}

// `which`: batch_size or power_limit.
Table axis_table(const std::vector<TrialRecord>& trials, const std::string& which, const std::vector<double>& etas) {
  const std::vector<Group> all = group_trials(trials);
  const bool by_batch = which == "batch_size";
  const std::vector<Group> groups = sorted_by_axis(finished(all), by_batch);
  Axes a = varying(groups);
  (by_batch ? a.batch : a.limit) = true;
  const bool target = has_target(trials);
  Table t;
  t.name = which;
  t.title = std::string("Time, energy, TTA, ETA and Zeus cost per ") + (by_batch ? "batch size" : "GPU power limit") +
            " on " + where_run(trials);
  axis_columns(t, a);
  for (const char* c : {"n", "time_s", "energy_j", "energy_pm_j", "reached", "tta_s", "eta_j", "eta_pm_j",
                        "eta_updates", "eta_window"})
    t.columns.push_back(c);
  if (!by_batch) t.columns.push_back("enforced_limit_w");
  for (double eta : etas) t.columns.push_back(eta_label(eta));
  t.columns.push_back("energy");
  for (const auto& g : groups) t.rows.push_back(axis_row(g, a, by_batch, target, etas));
  t.decision_columns = {"model", "compression_ratio", "latent", "parameters", "batch_size", "precision", "engine", "power_limit", "epochs", "n",
                        "time_s",     "energy_j",  "tta_s",  "eta_j",       "energy"};
  if (any_short_window(groups, "eta")) t.decision_columns.insert(t.decision_columns.end() - 1, "eta_window");
  if (auto n = constant_axes_note(groups, a); !n.empty()) t.notes.push_back(n);
  axis_notes(t, trials, target);
  outlier_notes(t, groups, kTta.get, "time to target");
  outlier_notes(t, groups, kEta.get, "energy to target");
  short_window_note(t, groups, "eta", "the energy to target (ETA)");
  failures_note(t, all);
  run_notes(t, all);
  return t;
}

}  // namespace

std::vector<Table> make_batch_size_tables(const std::vector<TrialRecord>& trials, const TableOptions& o) {
  const std::vector<double>& etas = o.etas;
  return {axis_table(trials, "batch_size", etas)};
}

std::vector<Table> make_power_limit_tables(const std::vector<TrialRecord>& trials, const TableOptions& o) {
  const std::vector<double>& etas = o.etas;
  return {axis_table(trials, "power_limit", etas)};
}

bool batch_size_varies(const std::vector<TrialRecord>& trials) { return varying(finished(group_trials(trials))).batch; }

bool power_limit_varies(const std::vector<TrialRecord>& trials) { return varying(finished(group_trials(trials))).limit; }

}  // namespace balerbench::report
