// table_figures.cpp: the report's figures drawn from a table's own cells (report_figures.h): the
// ratio to FP32 of each precision with its 95% interval and verdict (the precision table), and the
// codecs' ratio against their max abs error with their cost per MB (the codecs table).
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/report/figure_parts.h"
#include "harness/report/report_figures.h"
#include "harness/report/table_cells.h"
#include "harness/report/table_renderer.h"
#include "harness/report/tables.h"
#include "harness/report/trial_groups.h"

namespace balerbench::report {
namespace {

using nlohmann::json;
namespace fig = figure;

// A table's cells by column name.
struct Cells {
  const Table& t;
  const std::vector<json>& row;
  json operator[](const std::string& column) const {
    const auto it = std::find(t.columns.begin(), t.columns.end(), column);
    const std::size_t i = it - t.columns.begin();
    return it == t.columns.end() || i >= row.size() ? json(nullptr) : row[i];
  }
};

constexpr char kBelow[] = "below 1: faster / less energy";
constexpr char kAbove[] = "above 1: slower / more energy";
constexpr char kUnresolved[] = "interval includes 1: not resolved";
constexpr char kNoInterval[] = "no interval";

std::string verdict_class(const json& verdict) {
  const std::string v = verdict.is_string() ? verdict.get<std::string>() : "";
  if (v == "faster" || v == "less energy") return kBelow;
  if (v == "slower" || v == "more energy") return kAbove;
  if (v.rfind("not resolved", 0) == 0) return kUnresolved;
  return kNoInterval;
}

// A precision row's configuration: its precision and the other axes the table shows.
std::string precision_label(const Cells& c) {
  std::string s = c["precision"].is_string() ? c["precision"].get<std::string>() : "?";
  if (const json b = c["batch_size"]; !b.is_null()) s += ", bs " + cell_text(b);
  if (const json e = c["engine"]; !e.is_null()) s += ", " + cell_text(e);
  if (const json l = c["power_limit"]; !l.is_null()) s += ", " + cell_text(l);
  if (const json e = c["epochs"]; !e.is_null()) s += ", " + cell_text(e) + " epochs";
  return s;
}

constexpr char kRatioAxis[] = "ratio to FP32 (log scale; 1 = as FP32)";

json with_axis(json channel, const json& axis) {
  channel["axis"] = axis;
  return channel;
}

json ratio_spec(const json& rows) {
  const json y = {{"field", "configuration"}, {"type", "nominal"}, {"title", nullptr}, {"sort", nullptr}};
  const json x_scale = {{"type", "log"}, {"zero", false}, {"nice", false}, {"padding", 12}};
  // Below the panels, its labels whole: at the side, a narrow page clipped them ("faster / less en...").
  const json color = {{"field", "verdict_class"}, {"type", "nominal"}, {"title", "verdict (95% interval)"},
                      {"scale", {{"domain", {kBelow, kAbove, kUnresolved, kNoInterval}},
                                 {"range", {"#1b7837", "#b2182b", "#777777", "#bbbbbb"}}}},
                      {"legend", {{"orient", "bottom"}, {"direction", "vertical"}, {"labelLimit", 0}}}};
  // A log axis labels every minor tick; neighbours that would touch ("0.60.7") are dropped.
  const json x_axis = {{"labelOverlap", "greedy"}, {"labelSeparation", 6}, {"format", "~g"}};
  const json tooltip = json::array({{{"field", "configuration"}}, {{"field", "ratio"}, {"format", ".4g"}},
                                    {{"field", "low"}, {"title", "95% low"}, {"format", ".4g"}},
                                    {{"field", "high"}, {"title", "95% high"}, {"format", ".4g"}},
                                    {{"field", "verdict"}}, {{"field", "n"}, {"title", "repeats"}}});
  json one = {{"mark", {{"type", "rule"}, {"strokeDash", {4, 3}}, {"color", "#555"}}},
              {"encoding", {{"x", {{"datum", 1}, {"type", "quantitative"}}}}}};
  json interval = {{"transform", json::array({{{"filter", "isValid(datum.low) && isValid(datum.high)"}}})},
                   {"mark", {{"type", "rule"}, {"strokeWidth", 2}}},
                   {"encoding", {{"y", y}, {"x", with_axis(fig::quantity("low", kRatioAxis, x_scale), x_axis)},
                                 {"x2", {{"field", "high"}}}, {"color", color}}}};
  json point = {{"mark", {{"type", "point"}, {"filled", true}, {"size", 70}}},
                {"encoding", {{"y", y}, {"x", with_axis(fig::quantity("ratio", kRatioAxis, x_scale), x_axis)},
                              {"color", color}, {"tooltip", tooltip}}}};
  return {{"data", {{"values", rows}}},
          {"facet", {{"column", {{"field", "quantity"}, {"type", "nominal"}, {"title", nullptr},
                                 {"sort", {"training time", "training energy"}}}}}},
          {"spec", {{"width", 300}, {"height", {{"step", 24}}}, {"layer", json::array({one, interval, point})}}}};
}

// The codecs table's cost column: "J/MB (compress + decompress)" or "s/MB (...)".
std::string cost_column(const Table& t) {
  for (const auto& c : t.columns)
    if (c.rfind("J/MB (", 0) == 0 || c.rfind("s/MB (", 0) == 0) return c;
  return "";
}

// The configurations make_codecs_tables makes a table for, in its order: those with a comparison.
std::vector<Group> codecs_groups(const std::vector<TrialRecord>& trials) {
  std::vector<Group> out;
  for (const Group& g : group_trials(trials))
    if (std::any_of(g.ok.begin(), g.ok.end(), [](const TrialRecord* t) { return t->result.contains("codecs"); }))
      out.push_back(g);
  return out;
}

// One configuration's codecs as points: ratio against max abs error, each labelled with its cost.
struct CodecPoints {
  json points = json::array();
  std::vector<std::string> infinite;  // codecs whose error is infinite (an overflowing downcast)
};

CodecPoints codec_points(const Table& t, const std::string& configuration) {
  CodecPoints out;
  const std::string cost = cost_column(t);
  const std::string unit = cost.substr(0, cost.find(' '));
  for (const auto& r : t.rows) {
    const Cells c{t, r};
    const json ratio = c["ratio"], error = c["max abs error"], per_mb = c[cost], pm = c["± J/MB"];
    const std::string codec = c["codec"].is_string() ? c["codec"].get<std::string>() : "?";
    if (!ratio.is_number() || !error.is_number()) {
      if (error == "inf") out.infinite.push_back(codec);
      continue;
    }
    const std::string cost_label = per_mb.is_number()
                                       ? cell_text(per_mb) + (pm.is_number() ? " ± " + cell_text(pm) : "") + " " + unit
                                       : "cost not known";
    out.points.push_back({{"configuration", configuration}, {"codec", codec}, {"ratio", ratio},
                          {"max_abs_error", error}, {"cost_label", cost_label},
                          {"label", codec + (error.get<double>() == 0 ? " (lossless)" : "") + ": " + cost_label}});
  }
  return out;
}

// Labels of points at about the same height and close on the x axis move apart vertically (a
// factor on the log axis); label_y is where each label sits.
void separate_labels(json& points) {
  constexpr double kNear = 0.08;  // decades
  for (auto& p : points) p["label_y"] = p["ratio"];
  for (std::size_t i = 0; i < points.size(); ++i)
    for (std::size_t j = i + 1; j < points.size(); ++j) {
      json &a = points[i], &b = points[j];
      if (a["configuration"] != b["configuration"] || a["label_side"] != b["label_side"]) continue;
      const double dy = std::log10(a["label_y"].get<double>() / b["label_y"].get<double>());
      const double dx = std::log10(a["x"].get<double>() / b["x"].get<double>());
      if (std::abs(dy) >= kNear || std::abs(dx) >= 2) continue;
      const bool a_up = a["ratio"].get<double>() >= b["ratio"].get<double>();
      (a_up ? a : b)["label_y"] = (a_up ? a : b)["label_y"].get<double>() * 1.2;
      (a_up ? b : a)["label_y"] = (a_up ? b : a)["label_y"].get<double>() / 1.2;
    }
}

// On a log axis a lossless codec (error 0) sits at a tenth of the smallest error, at the left
// edge; each label goes to the side of its point with more room (within its configuration's points).
void place_on_log_axis(json& points) {
  double smallest = 0;
  for (const auto& p : points)
    if (const double e = p["max_abs_error"].get<double>(); e > 0 && (smallest == 0 || e < smallest)) smallest = e;
  const double floor = smallest > 0 ? smallest / 10 : 1e-12;
  std::map<std::string, std::pair<double, double>> span;  // configuration -> log10 x range
  for (auto& p : points) {
    const double x = std::log10(std::max(p["max_abs_error"].get<double>(), floor));
    p["x"] = std::pow(10.0, x);
    auto [it, fresh] = span.try_emplace(p["configuration"].get<std::string>(), x, x);
    it->second = {std::min(it->second.first, x), std::max(it->second.second, x)};
  }
  for (auto& p : points) {
    const auto& [lo, hi] = span[p["configuration"].get<std::string>()];
    p["label_side"] = std::log10(p["x"].get<double>()) > (lo + hi) / 2 ? "left" : "right";
  }
  separate_labels(points);
}

json codecs_spec(const json& points, bool facet) {
  const json x = fig::quantity("x", "max abs error (log scale; lossless codecs at the left edge)", {{"type", "log"}});
  const json y = fig::quantity("ratio", "compression ratio (log scale)", {{"type", "log"}});
  const json color = {{"field", "codec"}, {"type", "nominal"}, {"legend", nullptr}};
  const json tooltip = json::array({{{"field", "configuration"}}, {{"field", "codec"}}, {{"field", "ratio"}, {"format", ".4g"}},
                                    {{"field", "max_abs_error"}, {"title", "max abs error"}, {"format", ".3g"}},
                                    {{"field", "cost_label"}, {"title", "cost"}}});
  json layers = json::array(
      {{{"mark", {{"type", "point"}, {"filled", true}, {"size", 80}}},
        {"encoding", {{"x", x}, {"y", y}, {"color", color}, {"tooltip", tooltip},
                      {"shape", {{"condition", {{"test", "datum.codec === 'baler'"}, {"value", "diamond"}}},
                                 {"value", "circle"}}}}}}});
  for (const char* side : {"right", "left"}) {
    const bool right = std::string(side) == "right";
    layers.push_back({{"transform", json::array({{{"filter", std::string("datum.label_side === '") + side + "'"}}})},
                      {"mark", {{"type", "text"}, {"align", right ? "left" : "right"}, {"dx", right ? 8 : -8},
                                {"fontSize", 10}}},
                      {"encoding", {{"x", x}, {"y", {{"field", "label_y"}, {"type", "quantitative"}}},
                                    {"color", color}, {"text", {{"field", "label"}}}}}});
  }
  json panel = {{"width", 440}, {"height", 260}, {"layer", layers}};
  if (!facet) {
    panel["data"] = {{"values", points}};
    return panel;
  }
  return {{"data", {{"values", points}}},
          {"facet", {{"field", "configuration"}, {"type", "nominal"}, {"title", nullptr}, {"sort", nullptr}}},
          {"columns", 2},
          {"spec", panel}};
}

}  // namespace

void add_ratio_figure(ReportFigures& out, const Slice& s, const std::vector<double>& etas) {
  for (const Table& t : make_tables(s.trials, "precision", etas)) {
    json rows = json::array();
    int64_t intervals = 0;
    std::vector<std::string> kinds;
    for (const auto& r : t.rows) {
      const Cells c{t, r};
      kinds.push_back(cell_text(c["energy"]));
      for (const bool energy : {false, true}) {
        const std::string p = energy ? "energy_vs_fp32" : "time_vs_fp32";
        const json verdict = c[energy ? "energy_verdict" : "time_verdict"];
        if (!c[p].is_number() || verdict == "baseline") continue;
        rows.push_back({{"configuration", precision_label(c)}, {"quantity", energy ? "training energy" : "training time"},
                        {"ratio", c[p]}, {"low", c[p + "_ci95_low"]}, {"high", c[p + "_ci95_high"]},
                        {"verdict", verdict}, {"verdict_class", verdict_class(verdict)}, {"n", c["n"]}});
        intervals += c[p + "_ci95_low"].is_number() && c[p + "_ci95_high"].is_number();
      }
    }
    if (rows.empty()) {
      out.not_drawn.push_back("Ratio to FP32, on " + where_run(s.trials) +
                              ": no configuration has an FP32 row with the same other settings to compare with.");
      continue;
    }
    ReportFigure f;
    f.kind = "ratio_to_fp32";
    f.spec = ratio_spec(rows);
    f.spec["title"] = fig::title("Ratio to FP32 per precision: training time and energy", s, fig::energy_kinds(kinds));
    f.caption = "Points: each configuration's mean over its repeats divided by the FP32 row with the same other "
                "settings (the precision table's *_vs_fp32); lines: its 95% interval (*_ci95_low to *_ci95_high); "
                "colour: the verdict, which says faster or slower only when the interval excludes 1 (dashed). The "
                "FP32 rows themselves are the 1.";
    f.expected_marks = {{"symbol", static_cast<int64_t>(rows.size())}, {"rule", intervals}};
    out.figures.push_back(std::move(f));
  }
}

void add_codecs_figures(ReportFigures& out, const Slice& s, const std::vector<double>& etas) {
  const std::vector<Table> tables = make_tables(s.trials, "codecs", etas);
  const std::vector<Group> groups = codecs_groups(s.trials);
  if (tables.size() != groups.size() || groups.empty()) return;  // no trial measured the codecs
  const Axes a = varying(finished(group_trials(s.trials)));
  json points = json::array();
  std::vector<std::string> infinite;
  std::string unit;
  for (std::size_t i = 0; i < tables.size(); ++i) {
    CodecPoints p = codec_points(tables[i], fig::configuration_label(groups[i], a));
    for (auto& x : p.points) points.push_back(std::move(x));
    infinite.insert(infinite.end(), p.infinite.begin(), p.infinite.end());
    if (unit.empty()) unit = cost_column(tables[i]).substr(0, cost_column(tables[i]).find(' '));
  }
  if (points.empty()) return;
  place_on_log_axis(points);
  ReportFigure f;
  f.kind = "codecs";
  f.spec = codecs_spec(points, tables.size() > 1);
  f.spec["title"] = fig::title("Compression ratio against max abs error per codec, with " + unit +
                                   (tables.size() > 1 ? ", per configuration" : ""),
                               s, unit == "J/MB" ? fig::energy_kinds(groups) : "");
  f.caption = "One point per codec (the codecs table's medians over the repeats; one table, and one panel, per "
              "configuration): ratio = the data's bytes over the codec's; labels: one compress and one decompress "
              "per MB, " +
              std::string(unit == "J/MB" ? "in joules with the meters' ±" : "in seconds (energy not measured)") +
              ". Up and left is better; Baler is the diamond." +
              (infinite.empty() ? "" : " Left out, their error being infinite (values overflow their range): " +
                                           distinct_joined(infinite) + ".");
  f.expected_marks = {{"symbol", static_cast<int64_t>(points.size())}, {"text", static_cast<int64_t>(points.size())}};
  out.figures.push_back(std::move(f));
}

}  // namespace balerbench::report
