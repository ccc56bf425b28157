// group_figures.cpp: the report's figures drawn from the configurations' repeats (report_figures.h):
// time against energy with the Pareto frontier, time and energy against the power limit, training and
// validation loss against epoch, and energy per Baler mode. Each mean is over a configuration's
// finished repeats (warm-ups in none, as in the tables); its bars are the 95% confidence interval.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/text.h"
#include "harness/report/figure_parts.h"
#include "harness/report/group_cost.h"
#include "harness/report/report_figures.h"
#include "harness/report/table_cells.h"
#include "harness/report/trial_groups.h"

namespace balerbench::report {
namespace {

using nlohmann::json;
namespace fig = figure;

constexpr char kRepeat[] = "repeat";
constexpr char kDisturbed[] = "repeat on a disturbed machine";
constexpr char kWarmup[] = "warm-up (in no mean)";

std::string trial_kind(const TrialRecord& r) {
  if (is_warmup(r)) return kWarmup;
  return disturbance_of(r).disturbed ? kDisturbed : kRepeat;
}

// A caption's sentences, those that apply.
std::string caption(const std::vector<std::string>& sentences) { return joined(sentences, " ", true); }

// Every finished trial of the slice with a time and an energy, warm-ups included and marked.
json trial_points(const Slice& s, const Axes& a, bool target) {
  json points = json::array();
  for (const auto& r : s.trials) {
    const auto t = pareto_time_s(r, target), e = pareto_energy_j(r, target);
    if (r.status != TrialStatus::kOk || !t || !e) continue;
    points.push_back({{"trial", r.id}, {"configuration", fig::configuration_label(configuration_of(r), a)}, {"time_s", *t}, {"energy_j", *e},
                      {"trial_kind", trial_kind(r)}});
  }
  return points;
}

json time_energy_spec(const json& configs, const json& trials, const json& frontier, bool target) {
  const json x = fig::quantity("time_s", target ? "time to target, TTA (s)" : "training time (s)",
                               fig::points_domain(configs, trials, "time_s"));
  const json y = fig::quantity("energy_j", target ? "energy to target, ETA (J)" : "training energy (J)",
                               fig::points_domain(configs, trials, "energy_j"));
  const json color = {{"field", "configuration"}, {"type", "nominal"}, {"title", "configuration"},
                      {"scale", {{"scheme", "tableau20"}}}};
  const json tooltip = json::array({{{"field", "configuration"}}, {{"field", "n"}, {"title", "repeats"}},
                                    {{"field", "time_s"}, {"format", ".4g"}}, {{"field", "energy_j"}, {"format", ".4g"}},
                                    {{"field", "pareto"}, {"title", "on the frontier"}}});
  json layers = json::array();
  layers.push_back({{"data", {{"values", trials}}},
                    {"mark", {{"type", "point"}, {"filled", false}, {"size", 36}, {"opacity", 0.75}}},
                    {"encoding",
                     {{"x", x}, {"y", y}, {"color", color},
                      {"shape", {{"field", "trial_kind"}, {"type", "nominal"}, {"title", "single trials"},
                                 {"scale", {{"domain", {kRepeat, kDisturbed, kWarmup}},
                                            {"range", {"circle", "cross", "triangle-up"}}}}}},
                      {"tooltip", json::array({{{"field", "trial"}}, {{"field", "configuration"}},
                                               {{"field", "trial_kind"}, {"title", "kind"}},
                                               {{"field", "time_s"}, {"format", ".4g"}},
                                               {{"field", "energy_j"}, {"format", ".4g"}}})}}}});
  json bars_x = fig::interval_rule("x", "time_s", {{"field", "energy_j"}, {"type", "quantitative"}});
  json bars_y = fig::interval_rule("y", "energy_j", {{"field", "time_s"}, {"type", "quantitative"}});
  bars_x["data"] = bars_y["data"] = {{"values", configs}};
  bars_x["mark"]["clip"] = bars_y["mark"]["clip"] = true;  // cut at the plot's edge, not the axes stretched
  layers.push_back(bars_x);
  layers.push_back(bars_y);
  layers.push_back({{"data", {{"values", configs}}},
                    {"mark", {{"type", "point"}, {"filled", true}, {"shape", "diamond"}, {"size", 110},
                              {"opacity", 1}, {"stroke", "#222"}, {"strokeWidth", 0.6}}},
                    {"encoding", {{"x", x}, {"y", y}, {"color", color}, {"tooltip", tooltip}}}});
  // A ring around each configuration on the frontier, which a frontier of one has no line to show.
  layers.push_back({{"name", "frontier"},
                    {"data", {{"values", configs}}},
                    {"transform", json::array({{{"filter", "datum.pareto === 'yes'"}}})},
                    {"mark", {{"type", "point"}, {"shape", "circle"}, {"filled", false}, {"size", 420},
                              {"stroke", "#111"}, {"strokeWidth", 1.4}}},
                    {"encoding", {{"x", x}, {"y", y}}}});
  if (frontier.size() >= 2)
    layers.push_back({{"data", {{"values", frontier}}},
                      {"mark", {{"type", "line"}, {"color", "#222"}, {"strokeDash", {5, 4}}, {"strokeWidth", 1.2}}},
                      {"encoding", {{"x", x}, {"y", y}, {"order", {{"field", "time_s"}, {"type", "quantitative"}}}}}});
  return {{"width", 520}, {"height", 340}, {"layer", layers}};
}

// A configuration's mean time and energy at its power limit, one row each (none without a value).
json power_limit_rows(const Group& g, const std::string& label) {
  json rows = json::array();
  for (const bool energy : {false, true}) {
    json row = {{"power_limit_w", *g.power_limit_w}, {"configuration", label},
                {"quantity", energy ? "training energy (J)" : "training time (s)"},
                {"n", static_cast<int64_t>(g.ok.size())}};
    fig::put_mean(row, "value", energy ? g.stat([](const TrialRecord& r) { return r.train_energy_j; })
                                       : g.stat([](const TrialRecord& r) { return r.train_s; }));
    if (!row["value"].is_null()) rows.push_back(row);
  }
  return rows;
}

json power_limit_spec(const json& rows) {
  const json x = fig::quantity("power_limit_w", "GPU power limit (W)");
  const json y = fig::quantity("value", "mean over the repeats");
  const json color = fig::category("configuration", "configuration");
  const json tooltip = json::array({{{"field", "configuration"}}, {{"field", "power_limit_w"}, {"title", "limit (W)"}},
                                    {{"field", "quantity"}}, {{"field", "value"}, {"format", ".4g"}},
                                    {{"field", "n"}, {"title", "repeats"}}});
  const json layers = json::array(
      {{{"mark", {{"type", "line"}, {"point", false}}}, {"encoding", {{"x", x}, {"y", y}, {"color", color}}}},
       fig::interval_rule("y", "value", {{"field", "power_limit_w"}, {"type", "quantitative"}}),
       {{"mark", {{"type", "point"}, {"filled", true}, {"size", 60}}},
        {"encoding", {{"x", x}, {"y", y}, {"color", color}, {"tooltip", tooltip}}}}});
  return {{"data", {{"values", rows}}},
          {"facet", {{"column", {{"field", "quantity"}, {"type", "nominal"}, {"title", nullptr},
                                 {"sort", {"training time (s)", "training energy (J)"}}}}}},
          {"spec", {{"width", 300}, {"height", 240}, {"layer", layers}}},
          {"resolve", {{"scale", {{"y", "independent"}}}}}};
}

}  // namespace

void add_time_energy_figure(ReportFigures& out, const Slice& s) {
  const std::vector<Group> groups = group_trials(s.trials);
  const bool target = has_target(s.trials);
  const std::vector<ParetoPoint> points = pareto_candidates(groups, target);
  if (points.empty()) {
    out.not_drawn.push_back("Time against energy, on " + where_run(s.trials) + ": no configuration has a time and " +
                            "an energy" + (target ? " to the target" : "") + " for every repeat.");
    return;
  }
  const std::vector<ParetoPoint> front = pareto_frontier(points);
  const Axes a = varying(finished(groups));
  json configs = json::array(), frontier = json::array();
  std::vector<Group> drawn;
  int64_t intervals = 0;
  for (const auto& p : points) {
    const Group& g = groups[p.id];
    const bool on_front = std::any_of(front.begin(), front.end(), [&](const ParetoPoint& f) { return f.id == p.id; });
    json row = {{"configuration", fig::configuration_label(g, a)}, {"n", static_cast<int64_t>(g.ok.size())},
                {"pareto", on_front ? "yes" : "no"}};
    fig::put_mean(row, "time_s", g.stat([&](const TrialRecord& r) { return pareto_time_s(r, target); }));
    fig::put_mean(row, "energy_j", g.stat([&](const TrialRecord& r) { return pareto_energy_j(r, target); }));
    intervals += g.ok.size() > 1 ? 2 : 0;
    configs.push_back(row);
    drawn.push_back(g);
  }
  for (const auto& f : front) frontier.push_back({{"time_s", f.time_s}, {"energy_j", f.energy_j}});
  const json trials = trial_points(s, a, target);
  ReportFigure f;
  f.kind = "time_energy";
  f.spec = time_energy_spec(configs, trials, frontier, target);
  f.spec["title"] = fig::title(target ? "Time and energy to the target per configuration, with the Pareto frontier"
                                      : "Training time against energy per configuration, with the Pareto frontier",
                               s, fig::energy_kinds(drawn), target ? "target: " + target_text(s.trials) : "");
  const std::size_t left_out = finished(groups).size() - points.size();
  f.caption = caption(
      {"Diamonds: each configuration's mean over its repeats; bars: the 95% confidence interval of each mean "
       "(Student t, cut at 0; none with one repeat; the axes span the points, and a bar that reaches beyond them "
       "is cut at the plot's edge). Hollow marks: the single trials (circle: a repeat; cross: a "
       "repeat on a disturbed machine, kept in the mean; triangle: a warm-up, in no mean). Black rings, joined by "
       "a dashed line: the time-energy Pareto frontier, the configurations no other beats in both (the "
       "cost_pareto table).",
       left_out ? std::to_string(left_out) + " configuration(s) left out: a repeat has no time or energy" +
                      (target ? " to the target (it missed it)." : ".")
                : "",
       fig::not_finished_note(s)});
  f.expected_marks = {{"symbol", static_cast<int64_t>(configs.size() + trials.size() + front.size())},
                      {"rule", intervals}, {"frontier", static_cast<int64_t>(front.size())}};
  if (frontier.size() >= 2) f.expected_marks["line"] = 1;
  out.figures.push_back(std::move(f));
}


void add_power_limit_figure(ReportFigures& out, const Slice& s) {
  const std::vector<Group> groups = finished(group_trials(s.trials));
  std::set<double> limits;
  for (const auto& g : groups)
    if (g.power_limit_w) limits.insert(*g.power_limit_w);
  if (limits.size() < 2) {
    if (limits.size() == 1)
      out.not_drawn.push_back("Time and energy against the power limit, on " + where_run(s.trials) +
                              ": one power limit only.");
    return;
  }
  Axes a = varying(groups);
  a.limit = false;  // the x axis
  json rows = json::array();
  std::vector<Group> drawn;
  std::set<std::string> series;
  for (const auto& g : groups) {
    if (!g.power_limit_w) continue;
    drawn.push_back(g);
    series.insert(fig::configuration_label(g, a));
    for (json& row : power_limit_rows(g, fig::configuration_label(g, a))) rows.push_back(std::move(row));
  }
  ReportFigure f;
  f.kind = "power_limit";
  f.spec = power_limit_spec(rows);
  f.spec["title"] = fig::title("Training time and energy against the GPU power limit", s, fig::energy_kinds(drawn));
  f.caption = caption({"Points: each configuration's mean over its repeats at each limit; bars: the 95% confidence "
                      "interval of the mean (cut at 0; none with one repeat). The power_limit table has the same means.",
                      groups.size() > drawn.size()
                          ? std::to_string(groups.size() - drawn.size()) +
                                " configuration(s) ran without a limit (as found): not on this axis."
                          : "",
                      fig::not_finished_note(s)});
  f.expected_marks = {{"symbol", static_cast<int64_t>(rows.size())},
                      {"line", static_cast<int64_t>(2 * series.size())}};
  out.figures.push_back(std::move(f));
}

}  // namespace balerbench::report
