// fidelity_frontier.cpp: --table fidelity's second table, energy against fidelity (fidelity.h). Per
// configuration: the energy and time to train, compress and decompress (means over the repeats),
// the worst feature's nrmse with its 95% upper bound, and the latent space's size; whether no other
// configuration is at least as good in all three and better in one (the Pareto front); and, with a
// bound on the nrmse (report --max-nrmse), Zeus's cost at each eta among the configurations whose
// upper bound meets it, the cheapest marked. The cost is the cost table's, of the whole cycle.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "harness/base/pareto.h"
#include "harness/base/zeus_cost.h"
#include "harness/report/fidelity.h"
#include "harness/report/group_cost.h"
#include "harness/report/table_cells.h"
#include "harness/report/table_notes.h"

namespace balerbench::report {
namespace {

using nlohmann::json;

// One configuration's figures for the frontier; `complete` when every one is known.
struct Point {
  const Group* group = nullptr;
  std::optional<WorstFeature> worst;
  double energy_j = NAN, time_s = NAN, latent_mb = NAN, max_power_w = NAN;
  bool complete() const { return worst && std::isfinite(energy_j) && std::isfinite(latent_mb); }
  // The nrmse a bound is checked against: the 95% upper bound, or the one value of a single repeat.
  double nrmse_bound() const { return worst->nrmse.mean + worst->nrmse.ci95_half_width; }
};

Point point_of(const Group& g) {
  Point p;
  p.group = &g;
  p.worst = worst_feature_of(g);
  const Summary e = g.stat(cycle_energy_j);
  const Summary t = g.stat([](const TrialRecord& r) -> std::optional<double> {
    if (!r.train_s || !r.compress_s || !r.decompress_s) return std::nullopt;
    return *r.train_s + *r.compress_s + *r.decompress_s;
  });
  const Summary latent = g.stat([](const TrialRecord& r) { return latent_bytes_of(r); });
  if (e.n == g.ok.size() && e.n > 0) p.energy_j = e.mean;
  if (t.n == g.ok.size() && t.n > 0) p.time_s = t.mean;
  if (latent.n == g.ok.size() && latent.n > 0) p.latent_mb = latent.mean / 1e6;
  const CostInputs c = cost_inputs(g, false);
  if (c.ok) p.max_power_w = c.max_power_w;
  return p;
}

std::string eta_column(double eta) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "cost_j_eta_%g", eta);
  return buf;
}

// Per eta, the index of the cheapest point that meets the bound (none: nothing meets it).
std::vector<std::optional<std::size_t>> cheapest(const std::vector<Point>& points, const TableOptions& o) {
  std::vector<std::optional<std::size_t>> best(o.etas.size());
  for (std::size_t e = 0; e < o.etas.size(); ++e) {
    double low = INFINITY;
    for (std::size_t i = 0; i < points.size(); ++i) {
      const Point& p = points[i];
      if (!p.complete() || !std::isfinite(p.max_power_w) || !std::isfinite(p.time_s) || p.nrmse_bound() > o.max_nrmse)
        continue;
      const double cost = zeus_cost(o.etas[e], p.energy_j, p.time_s, p.max_power_w);
      if (cost < low) {
        low = cost;
        best[e] = i;
      }
    }
  }
  return best;
}

std::vector<json> frontier_row(const Point& p, const Axes& a, bool on_front, const TableOptions& o,
                               const std::vector<std::optional<std::size_t>>& best, std::size_t index) {
  std::vector<json> row = {p.group->precision};
  axis_cells(row, *p.group, a, false);
  row.push_back(static_cast<int64_t>(p.group->ok.size()));
  row.push_back(p.worst ? json(p.worst->name) : json(nullptr));
  row.push_back(p.worst ? num(p.worst->nrmse.mean) : json(nullptr));
  row.push_back(p.worst && p.worst->nrmse.n > 1 ? num(p.nrmse_bound()) : json(nullptr));
  row.push_back(num(p.energy_j));
  row.push_back(num(p.time_s));
  row.push_back(num(p.latent_mb));
  row.push_back(p.complete() ? json(on_front ? "yes" : "no") : json(nullptr));
  if (o.max_nrmse > 0) {
    row.push_back(p.worst ? json(p.nrmse_bound() <= o.max_nrmse ? "yes" : "no") : json(nullptr));
    std::string cheapest_at;
    for (std::size_t e = 0; e < o.etas.size(); ++e) {
      const bool meets = p.complete() && std::isfinite(p.max_power_w) && std::isfinite(p.time_s) &&
                         p.nrmse_bound() <= o.max_nrmse;
      row.push_back(meets ? num(zeus_cost(o.etas[e], p.energy_j, p.time_s, p.max_power_w)) : json(nullptr));
      if (best[e] == index) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%s%g", cheapest_at.empty() ? "" : ", ", o.etas[e]);
        cheapest_at += buf;
      }
    }
    row.push_back(cheapest_at.empty() ? json("-") : json(cheapest_at));
  }
  row.push_back(p.group->energy_kind());
  return row;
}

void add_columns(Table& t, const Axes& a, const TableOptions& o) {
  t.columns = {"precision"};
  axis_columns(t, a, false);
  for (const char* c : {"n", "worst_feature", "worst_nrmse", "worst_nrmse_ci95_high", "energy_j", "time_s",
                        "latent_mb", "pareto"})
    t.columns.push_back(c);
  if (o.max_nrmse > 0) {
    t.columns.push_back("meets_nrmse");
    for (double eta : o.etas) t.columns.push_back(eta_column(eta));
    t.columns.push_back("cheapest_at_eta");
  }
  t.columns.push_back("energy");
  t.decision_columns = {"precision", "model", "compression_ratio", "latent", "parameters",
                        "batch_size", "engine", "power_limit", "epochs", "n", "worst_nrmse",
                        "worst_nrmse_ci95_high", "energy_j", "latent_mb", "pareto"};
  if (o.max_nrmse > 0) t.decision_columns.insert(t.decision_columns.end(), {"meets_nrmse", "cheapest_at_eta"});
  t.decision_columns.push_back("energy");
}

}  // namespace

Table fidelity_frontier_table(const std::vector<TrialRecord>& trials, const std::vector<Group>& all,
                              const std::vector<Group>& groups, const TableOptions& o) {
  Table t;
  t.name = "fidelity_frontier";
  t.title = "Energy against fidelity: the cycle's energy, the worst feature's nrmse and the compressed size per "
            "configuration, on " + where_run(trials);
  const Axes a = varying(groups);
  add_columns(t, a, o);
  std::vector<Point> points;
  for (const Group& g : groups) points.push_back(point_of(g));
  std::vector<std::vector<double>> figures;
  std::vector<std::size_t> complete;
  for (std::size_t i = 0; i < points.size(); ++i)
    if (points[i].complete()) {
      figures.push_back({points[i].energy_j, points[i].worst->nrmse.mean, points[i].latent_mb});
      complete.push_back(i);
    }
  std::vector<bool> on_front(points.size(), false);
  for (std::size_t k : pareto_front(figures)) on_front[complete[k]] = true;
  const auto best = o.max_nrmse > 0 ? cheapest(points, o) : std::vector<std::optional<std::size_t>>{};
  for (std::size_t i = 0; i < points.size(); ++i) t.rows.push_back(frontier_row(points[i], a, on_front[i], o, best, i));
  t.notes.push_back("energy_j and time_s: training, compression and decompression together, means over the repeats; "
                    "latent_mb: the compressed data's size (the latent space as stored). pareto: no other "
                    "configuration has at most its energy, worst nrmse and size and less of one.");
  if (o.max_nrmse > 0) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "meets_nrmse: the worst feature's nrmse, its 95%% upper bound over the repeats "
                  "(one repeat: its value), is at most %g (--max-nrmse).", o.max_nrmse);
    t.notes.push_back(std::string(buf) + " cost_j_eta_*: Zeus's cost eta x energy + (1 - eta) x MaxPower x time of "
                      "the cycle, for those that meet it; cheapest_at_eta: the etas at which it is the cheapest.");
    std::string none;
    for (std::size_t e = 0; e < o.etas.size(); ++e)
      if (!best[e]) none += (none.empty() ? "" : ", ") + json(o.etas[e]).dump();
    if (!none.empty())
      t.notes.push_back("at eta " + none + " no configuration meets the bound (with a MaxPower and every figure)");
  } else {
    t.notes.push_back("report --max-nrmse X adds Zeus's cost at each eta among the configurations whose worst "
                      "feature's nrmse stays within X, and the cheapest of them.");
  }
  failures_note(t, all);
  return t;
}

}  // namespace balerbench::report
