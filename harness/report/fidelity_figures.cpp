// fidelity_figures.cpp: the report's figures of reconstruction quality (report_figures.h), from the
// per-feature figures every trial stores (run/feature_quality.h):
//   fidelity           each configuration's energy to train, compress and decompress against its worst
//                      feature's nrmse, coloured by compression ratio and shaped by model, with the
//                      95% intervals of both means (the fidelity_frontier table's figures);
//   feature_residuals  the residual per feature of a trial chosen in the page, in the feature's unit,
//                      as Baler's plot_1D draws it (histogram);
//   feature_responses  Baler's response per feature in %, over plot_1D's [-20 %, 20 %];
//   feature_boxes      every feature's residual as Baler's box plot draws it (no outliers).
// The trials to choose from: the finished ones, most recent first, at most kMaxTrials.
#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "harness/report/fidelity.h"
#include "harness/report/figure_parts.h"
#include "harness/report/report_figures.h"
#include "harness/report/table_cells.h"
#include "harness/report/trial_groups.h"

namespace balerbench::report {
namespace {

using nlohmann::json;
namespace fig = figure;

constexpr std::size_t kMaxTrials = 30;

std::string ratio_text(const Group& g) {
  const auto latent = g.latent();
  return "ratio " + ratio_label(g.compression_ratio) + (latent ? " (latent " + std::to_string(*latent) + ")" : "");
}

// One configuration's point: its worst feature's nrmse and its cycle's energy, each with its interval.
std::optional<json> fidelity_point(const Group& g, const Axes& a) {
  const auto worst = worst_feature_of(g);
  const Summary energy = g.stat(cycle_energy_j);
  if (!worst || energy.n != g.ok.size() || energy.n == 0) return std::nullopt;
  json row = {{"configuration", fig::configuration_label(g, a)}, {"ratio", ratio_text(g)}, {"model", g.model},
              {"worst_feature", worst->name}, {"n", static_cast<int64_t>(g.ok.size())}};
  fig::put_mean(row, "nrmse", worst->nrmse);
  fig::put_mean(row, "energy_j", energy);
  return row;
}

json fidelity_spec(const json& points) {
  const json x = fig::quantity("nrmse", "worst feature's nrmse (RMS residual / range)",
                               fig::points_domain(points, json::array(), "nrmse"));
  const json y = fig::quantity("energy_j", "energy to train, compress and decompress (J)",
                               fig::points_domain(points, json::array(), "energy_j"));
  json bars_x = fig::interval_rule("x", "nrmse", {{"field", "energy_j"}, {"type", "quantitative"}});
  json bars_y = fig::interval_rule("y", "energy_j", {{"field", "nrmse"}, {"type", "quantitative"}});
  bars_x["mark"]["clip"] = bars_y["mark"]["clip"] = true;
  const json tooltip = json::array({{{"field", "configuration"}}, {{"field", "worst_feature"}, {"title", "worst feature"}},
                                    {{"field", "nrmse"}, {"format", ".4g"}}, {{"field", "nrmse_lo"}, {"format", ".4g"}},
                                    {{"field", "nrmse_hi"}, {"format", ".4g"}}, {{"field", "energy_j"}, {"format", ".4g"}},
                                    {{"field", "energy_j_lo"}, {"format", ".4g"}},
                                    {{"field", "energy_j_hi"}, {"format", ".4g"}}, {{"field", "n"}, {"title", "repeats"}}});
  return {{"width", 520}, {"height", 340}, {"data", {{"values", points}}},
          {"layer", json::array({bars_x, bars_y,
                                 {{"mark", {{"type", "point"}, {"filled", true}, {"size", 110}, {"opacity", 1},
                                            {"stroke", "#222"}, {"strokeWidth", 0.6}}},
                                  {"encoding", {{"x", x}, {"y", y},
                                                {"color", fig::category("ratio", "compression ratio")},
                                                {"shape", fig::category("model", "model")},
                                                {"tooltip", tooltip}}}}})}};
}

// The finished trials with per-feature figures, most recent first, and each one's label in the page.
struct ChosenTrial {
  const TrialRecord* trial;
  std::string label;
};
std::vector<ChosenTrial> trials_to_choose(const Slice& s) {
  const std::vector<Group> groups = finished(group_trials(s.trials));
  const Axes a = varying(groups);
  std::vector<ChosenTrial> out;
  for (auto it = s.trials.rbegin(); it != s.trials.rend() && out.size() < kMaxTrials; ++it)
    if (it->status == TrialStatus::kOk && per_feature_of(*it))
      out.push_back({&*it, fig::configuration_label(configuration_of(*it), a) + " (trial " + std::to_string(it->id) +
                               (is_warmup(*it) ? ", warm-up" : "") + ")"});
  return out;
}

std::string feature_title(const json& f) {
  const std::string unit = f.value("unit", json()).is_string() ? f["unit"].get<std::string>() : "";
  return baler_feature_name(f.value("name", std::string("?"))) + (unit.empty() ? "" : " [" + unit + "]");
}

// The bins of one histogram ("residual_histogram" or "response_histogram") of every chosen trial's
// features, one row per bin that holds values.
json histogram_rows(const std::vector<ChosenTrial>& chosen, const char* key) {
  json rows = json::array();
  for (const auto& c : chosen)
    for (const json& f : *per_feature_of(*c.trial)) {
      const json& h = f.value(key, json());
      if (!h.is_object() || !h.contains("counts")) continue;
      const double low = h["low"].get<double>(), high = h["high"].get<double>();
      const auto& counts = h["counts"];
      const double width = (high - low) / static_cast<double>(counts.size());
      for (std::size_t i = 0; i < counts.size(); ++i)
        if (counts[i].get<int64_t>() > 0)
          rows.push_back({{"trial", c.label}, {"feature", feature_title(f)}, {"x0", low + width * i},
                          {"x1", low + width * (i + 1)}, {"count", counts[i]}});
    }
  return rows;
}

// A chooser of the trial in the page, and the filter that keeps its rows.
json trial_param(const std::vector<ChosenTrial>& chosen) {
  json options = json::array();
  for (const auto& c : chosen) options.push_back(c.label);
  return json::array({{{"name", "trial"}, {"value", chosen.front().label},
                       {"bind", {{"input", "select"}, {"options", options}, {"name", "trial: "}}}}});
}

// The features in the data's column order (the first trial's), for the panels' and the rows' order.
json feature_order(const std::vector<ChosenTrial>& chosen) {
  json order = json::array();
  for (const json& f : *per_feature_of(*chosen.front().trial)) order.push_back(feature_title(f));
  return order;
}

json histogram_spec(const std::vector<ChosenTrial>& chosen, const json& rows, const std::string& x_title) {
  return {{"params", trial_param(chosen)},
          {"data", {{"values", rows}}},
          {"transform", json::array({{{"filter", "datum.trial === trial"}}})},
          {"columns", 4},
          {"facet", {{"field", "feature"}, {"type", "nominal"}, {"title", nullptr}, {"sort", feature_order(chosen)}}},
          {"spec", {{"width", 190}, {"height", 110},
                    {"mark", {{"type", "rect"}, {"color", "#4c78a8"}}},
                    {"encoding", {{"x", {{"field", "x0"}, {"type", "quantitative"}, {"title", x_title}}},
                                  {"x2", {{"field", "x1"}}},
                                  {"y", {{"field", "count"}, {"type", "quantitative"}, {"title", "values"}}},
                                  {"tooltip", json::array({{{"field", "x0"}, {"format", ".4g"}},
                                                           {{"field", "x1"}, {"format", ".4g"}}, {{"field", "count"}}})}}}}},
          {"resolve", {{"scale", {{"x", "independent"}, {"y", "independent"}}}}}};
}

json box_rows(const std::vector<ChosenTrial>& chosen) {
  json rows = json::array();
  for (const auto& c : chosen)
    for (const json& f : *per_feature_of(*c.trial)) {
      const json& b = f.value("residual_box", json());
      if (!b.is_object()) continue;
      json row = b;
      row["trial"] = c.label;
      row["feature"] = feature_title(f);
      rows.push_back(row);
    }
  return rows;
}

json box_spec(const std::vector<ChosenTrial>& chosen, const json& rows) {
  const json y = {{"field", "feature"}, {"type", "nominal"}, {"title", nullptr}, {"sort", feature_order(chosen)},
                  {"axis", {{"labelLimit", 0}}}};  // whole names: "mChargedHadronMultiplicity [count]"
  const json x = {{"type", "quantitative"}, {"title", "residual (after - before), in each feature's unit"}};
  json whisker = x, box = x, median = x;
  whisker["field"] = "whisker_low";
  box["field"] = "q1";
  median["field"] = "median";
  return {{"params", trial_param(chosen)},
          {"data", {{"values", rows}}},
          {"transform", json::array({{{"filter", "datum.trial === trial"}}})},
          {"width", 520},
          {"height", {{"step", 16}}},
          {"layer", json::array({{{"mark", {{"type", "rule"}, {"color", "#555"}}},
                                  {"encoding", {{"y", y}, {"x", whisker}, {"x2", {{"field", "whisker_high"}}}}}},
                                 {{"mark", {{"type", "bar"}, {"color", "#9ecae9"}, {"stroke", "#4c78a8"}, {"size", 11}}},
                                  {"encoding", {{"y", y}, {"x", box}, {"x2", {{"field", "q3"}}}}}},
                                 {{"mark", {{"type", "tick"}, {"color", "#222"}, {"size", 11}}},
                                  {"encoding", {{"y", y}, {"x", median}}}}})}};
}

}  // namespace

void add_fidelity_figure(ReportFigures& out, const Slice& s) {
  const std::vector<Group> groups = finished(group_trials(s.trials));
  const Axes a = varying(groups);
  json points = json::array();
  std::vector<Group> drawn;
  int64_t intervals = 0;
  for (const Group& g : groups)
    if (auto p = fidelity_point(g, a)) {
      points.push_back(*p);
      drawn.push_back(g);
      intervals += g.ok.size() > 1 ? 2 : 0;
    }
  if (points.size() < 2) {
    if (points.size() == 1)
      out.not_drawn.push_back("Energy against fidelity, on " + where_run(s.trials) + ": one configuration only.");
    return;
  }
  ReportFigure f;
  f.kind = "fidelity";
  f.spec = fidelity_spec(points);
  f.spec["title"] = fig::title("Energy against fidelity per compression ratio and model", s, fig::energy_kinds(drawn));
  f.caption = "Points: each configuration's mean over its repeats of the energy to train, compress and decompress, "
              "against its worst feature's normalised RMS error (the feature with the highest mean; the fidelity "
              "table names it); colour: the compression ratio, shape: the model; bars: the 95% confidence interval "
              "of each mean (Student t, cut at 0; none with one repeat; the axes span the points, and a bar that reaches "
              "beyond them is cut at the plot's edge: the tooltip gives its ends). Lower and further left is better: the "
              "fidelity_frontier table marks the Pareto front. " + fig::not_finished_note(s);
  f.expected_marks = {{"symbol", static_cast<int64_t>(points.size())}, {"rule", intervals}};
  out.figures.push_back(std::move(f));
}

void add_feature_figures(ReportFigures& out, const Slice& s) {
  const std::vector<ChosenTrial> chosen = trials_to_choose(s);
  if (chosen.empty()) return;
  const std::string where = "Choose the trial in the list below the figure (the " + std::to_string(chosen.size()) +
                            " most recent finished trials; the most recent shown first).";
  const std::size_t features = per_feature_of(*chosen.front().trial)->size();
  struct Histogram {
    const char* kind;
    const char* key;
    const char* title;
    const char* x_title;
    const char* caption;
    const char* empty_reason;
  };
  for (const Histogram& h : std::initializer_list<Histogram>{
           {"feature_residuals", "residual_histogram", "Residual per feature, as Baler's plot_1D draws it",
            "residual (after - before)",
            "Bars: the values of each feature's residual (after - before, in the feature's unit) in 40 bins over "
            "+- its largest magnitude (Baler's plot_1D bins it over a fixed [-1, 1]); the axis spans the bins "
            "that hold values.",
            "every residual 0"},
           {"feature_responses", "response_histogram", "Response per feature in %, as Baler's plot_1D draws it",
            "response (%)",
            "Bars: Baler's response, (after - before) / before in %, in 0.5 % bins over plot_1D's [-20 %, 20 %]; "
            "values beyond it, and those whose before is 0, are counted in result.reconstruction.per_feature, "
            "not drawn.",
            "no value within +-20 %, or before 0 everywhere"}}) {
    const json rows = histogram_rows(chosen, h.key);
    if (rows.empty()) continue;
    ReportFigure f;
    f.kind = h.kind;
    f.spec = histogram_spec(chosen, rows, h.x_title);
    f.spec["title"] = fig::title(h.title, s, "");
    f.caption = std::string(h.caption) + " " + where;  // the features without a panel follow
    std::set<std::string> shown;  // the facets the first trial fills
    for (const json& r : rows)
      if (r["trial"] == chosen.front().label) shown.insert(r["feature"].get<std::string>());
    std::string without;
    for (const json& name : feature_order(chosen))
      if (!shown.count(name.get<std::string>())) without += (without.empty() ? "" : ", ") + name.get<std::string>();
    if (!without.empty())
      f.caption += " No panel, in the trial shown first: " + without + " (" + h.empty_reason + ").";
    f.expected_marks = {{"rect", static_cast<int64_t>(shown.size())}};
    out.figures.push_back(std::move(f));
  }
  const json boxes = box_rows(chosen);
  if (boxes.empty()) return;
  ReportFigure f;
  f.kind = "feature_boxes";
  f.spec = box_spec(chosen, boxes);
  f.spec["title"] = fig::title("Residual of every feature, as Baler's box plot draws it", s, "");
  f.caption = "Boxes: each feature's residual from its first to its third quartile, the tick at the median; "
              "whiskers: the most extreme values within 1.5 times the box's length of it (outliers not drawn, as "
              "in Baler's box plot). Each feature in its own unit. " + where;
  f.expected_marks = {{"rect", static_cast<int64_t>(features)}, {"rule", static_cast<int64_t>(features)}};
  out.figures.push_back(std::move(f));
}

}  // namespace balerbench::report
