// phase_energy_figure.cpp: the report's energy-per-phase figure (report_figures.h): the phases
// table's energy per Baler mode (train, compress, decompress) and configuration, as bars with the
// 95% confidence interval of each mean.
#include <string>
#include <vector>

#include "harness/report/figure_parts.h"
#include "harness/report/report_figures.h"
#include "harness/report/table_cells.h"

namespace balerbench::report {
namespace {

using nlohmann::json;
namespace fig = figure;

struct Mode {
  const char* name;
  std::optional<double> TrialRecord::*energy;
};
const Mode kModes[] = {{"train", &TrialRecord::train_energy_j},
                       {"compress", &TrialRecord::compress_energy_j},
                       {"decompress", &TrialRecord::decompress_energy_j}};

json phase_spec(const json& rows) {
  const json y = {{"field", "configuration"}, {"type", "nominal"}, {"title", nullptr}};
  const json x = fig::quantity("energy_j", "energy (J), mean over the repeats", {{"zero", true}});
  const json tooltip = json::array({{{"field", "configuration"}}, {{"field", "mode"}},
                                    {{"field", "energy_j"}, {"format", ".4g"}}, {{"field", "n"}, {"title", "repeats"}}});
  json bars = {{"mark", {{"type", "bar"}, {"color", "#6b8fb8"}, {"height", {{"band", 0.7}}}}},
               {"encoding", {{"x", x}, {"y", y}, {"tooltip", tooltip}}}};
  json rule = fig::interval_rule("x", "energy_j", y);
  return {{"data", {{"values", rows}}},
          {"facet", {{"column", {{"field", "mode"}, {"type", "nominal"}, {"title", nullptr},
                                 {"sort", {"train", "compress", "decompress"}}}}}},
          {"spec", {{"width", 220}, {"height", {{"step", 22}}}, {"layer", json::array({bars, rule})}}},
          {"resolve", {{"scale", {{"x", "independent"}}}}}};
}

}  // namespace

void add_phase_energy_figure(ReportFigures& out, const Slice& s) {
  const std::vector<Group> groups = finished(group_trials(s.trials));
  const Axes a = varying(groups);
  json rows = json::array();
  for (const auto& g : groups)
    for (const Mode& m : kModes) {
      const Summary e = g.stat([&](const TrialRecord& r) { return r.*(m.energy); });
      if (!e.n) continue;
      json row = {{"configuration", fig::configuration_label(g, a)}, {"mode", m.name},
                  {"n", static_cast<int64_t>(e.n)}};
      fig::put_mean(row, "energy_j", e);
      rows.push_back(row);
    }
  if (rows.empty()) {
    out.not_drawn.push_back("Energy per phase, on " + where_run(s.trials) + ": no finished trial has an energy.");
    return;
  }
  ReportFigure f;
  f.kind = "phase_energy";
  f.spec = phase_spec(rows);
  f.spec["title"] = fig::title("Energy per Baler mode and configuration (the phases table)", s, fig::energy_kinds(groups));
  f.caption = "Bars: each configuration's mean energy in each mode over its repeats (the phases table's energy_j: "
              "train = every epoch with its evaluation; compress and decompress = the whole dataset); lines: the "
              "95% confidence interval of the mean (cut at 0; none with one repeat). Each mode has its own scale." +
              (fig::not_finished_note(s).empty() ? std::string() : " " + fig::not_finished_note(s));
  f.expected_marks = {{"rect", static_cast<int64_t>(rows.size())}};
  out.figures.push_back(std::move(f));
}

}  // namespace balerbench::report
