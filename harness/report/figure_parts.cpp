// figure_parts.cpp: see figure_parts.h.
#include "harness/report/figure_parts.h"

#include <algorithm>
#include <cmath>

#include "harness/report/table_cells.h"

namespace balerbench::report::figure {

using nlohmann::json;

std::string energy_kinds(const std::vector<std::string>& kinds) {
  const std::string s = distinct_joined(kinds);
  return s == "-" ? "" : s;
}

std::string energy_kinds(const std::vector<Group>& groups) {
  std::vector<std::string> kinds;
  for (const auto& g : groups) kinds.push_back(g.energy_kind());
  return energy_kinds(kinds);
}

json title(const std::string& text, const Slice& s, const std::string& kinds, const std::string& extra_line) {
  json subtitle = json::array({"on " + where_run(s.trials)});
  if (!kinds.empty()) {
    std::string line = "energy: " + kinds;
    if (kinds.find("estimated") != std::string::npos) line += " (power models, not a measurement)";
    if (kinds.find("simulated") != std::string::npos) line += " (SIMULATED: balerbench's GPU model)";
    subtitle.push_back(line);
  }
  if (!extra_line.empty()) subtitle.push_back(extra_line);
  return {{"text", text}, {"subtitle", subtitle}, {"anchor", "start"}, {"subtitleColor", "#444"}};
}

json points_domain(const json& configs, const json& trials, const char* field) {
  double lo = INFINITY, hi = -INFINITY;
  for (const json* rows : {&configs, &trials})
    for (const auto& r : *rows)
      if (r.contains(field) && r[field].is_number()) {
        lo = std::min(lo, r[field].get<double>());
        hi = std::max(hi, r[field].get<double>());
      }
  if (!(lo <= hi)) return json(nullptr);
  const double pad = std::max(0.08 * (hi - lo), 0.02 * std::max(std::fabs(hi), 1e-12));
  return {{"zero", false}, {"nice", false}, {"domain", {std::max(0.0, lo - pad), hi + pad}}};
}

json quantity(const std::string& field, const std::string& title, const json& scale) {
  json c = {{"field", field}, {"type", "quantitative"}, {"title", title}};
  c["scale"] = scale.is_null() ? json{{"zero", false}} : scale;
  return c;
}

json category(const std::string& field, const std::string& title) {
  return {{"field", field}, {"type", "nominal"}, {"title", title}};
}

void put_mean(json& row, const std::string& prefix, const Summary& s) {
  row[prefix] = s.n ? num(s.mean) : json(nullptr);
  const bool interval = s.n > 1;
  row[prefix + "_lo"] = interval ? num(std::max(0.0, s.mean - s.ci95_half_width)) : json(nullptr);
  row[prefix + "_hi"] = interval ? num(s.mean + s.ci95_half_width) : json(nullptr);
}

json interval_rule(const std::string& along, const std::string& field, const json& at) {
  const std::string other = along == "x" ? "y" : "x";
  json enc = {{along, {{"field", field + "_lo"}, {"type", "quantitative"}}},
              {along + "2", {{"field", field + "_hi"}}},
              {other, at}};
  return {{"transform", json::array({{{"filter", "isValid(datum['" + field + "_lo']) && isValid(datum['" + field +
                                                     "_hi'])"}}})},
          {"mark", {{"type", "rule"}, {"color", "#333"}, {"strokeWidth", 1.2}}},
          {"encoding", enc}};
}

std::string configuration_label(const Group& g, const Axes& a) {
  std::string s = g.precision;
  if (a.model) s += ", " + g.model;
  if (a.ratio) s += ", ratio " + ratio_label(g.compression_ratio);
  if (a.batch) s += ", bs " + std::to_string(g.batch_size);
  if (a.engine) s += ", " + g.engine;
  if (a.limit) s += ", " + watts_label(g.power_limit_w);
  if (a.epochs) s += ", " + std::to_string(g.epochs) + " epochs";
  return s;
}

std::string not_finished_note(const Slice& s) {
  int failed = 0, skipped = 0;
  for (const auto& t : s.trials) {
    failed += t.status == TrialStatus::kFailed;
    skipped += t.status == TrialStatus::kSkipped;
  }
  if (!failed && !skipped) return "";
  std::string what;
  if (failed) what = std::to_string(failed) + " failed";
  if (skipped) what += (what.empty() ? "" : " and ") + std::to_string(skipped) + " skipped";
  return what + (failed + skipped == 1 ? " trial has" : " trials have") +
         " no figures: the trials table lists them with their errors.";
}

json with_config(json spec) {
  spec["config"] = {{"font", "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif"},
                    {"view", {{"stroke", "#ccc"}}},
                    // Labels that would touch are dropped (log axes label their minor ticks: "0.60.7").
                    {"axis", {{"labelFontSize", 11}, {"titleFontSize", 12}, {"gridColor", "#eee"},
                              {"labelOverlap", "greedy"}, {"labelSeparation", 4}}},
                    {"legend", {{"labelFontSize", 11}, {"titleFontSize", 12}, {"labelLimit", 320}}},
                    {"title", {{"fontSize", 14}, {"subtitleFontSize", 11}}}};
  return spec;
}

}  // namespace balerbench::report::figure
