// report_figures.h: the figures of the HTML report, each a Vega-Lite specification (JSON) with its
// data inline, drawn in the page by the embedded plotting library (plot_library.h). Like the
// comparing tables, figures are made once per system and spec variant (table_slices.h), never
// mixing them, and each one's title names its system and the kind of its energy.
//
// The numbers are the tables': the ratios and their intervals are the precision table's cells, the
// codecs' the codecs table's, and the means of the others come from the same groups and
// summarize() as the tables' (the ± of a mean is its 95% confidence interval over the repeats).
// Warm-up trials are drawn apart (in no mean) and disturbed ones marked; failed and skipped trials
// have no figures, and each figure's caption counts them.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "harness/report/table_slices.h"
#include "harness/store/store.h"

namespace balerbench::report {

struct ReportFigure {
  std::string kind;     // time_energy | ratio_to_fp32 | power_limit | loss | phase_energy | codecs |
                        // fidelity | feature_residuals | feature_responses | feature_boxes
  std::string caption;  // how to read it: what the marks and bars are, what is left out and why
  nlohmann::json spec;  // Vega-Lite, its title naming the system and the energy's kind
  // The data marks the figure must draw, by Vega mark type ("symbol", "rule", "line", "rect",
  // "text"): at least this many items each (the browser test counts them in the SVG); "frontier":
  // exactly this many rings on the Pareto frontier (the layer named "frontier").
  nlohmann::json expected_marks = nlohmann::json::object();
};

struct ReportFigures {
  std::vector<ReportFigure> figures;
  std::vector<std::string> not_drawn;  // "power limit: one limit only", ... (one line each)
};

// Every figure the trials of one experiment give; `etas` as make_tables takes them.
ReportFigures make_figures(const std::vector<TrialRecord>& trials, const std::vector<double>& etas);

// The figures of one system and spec variant (make_figures' parts, one file each).
void add_time_energy_figure(ReportFigures& out, const Slice& s);
void add_ratio_figure(ReportFigures& out, const Slice& s, const std::vector<double>& etas);
void add_power_limit_figure(ReportFigures& out, const Slice& s);
void add_loss_figure(ReportFigures& out, const Slice& s);
void add_phase_energy_figure(ReportFigures& out, const Slice& s);
void add_codecs_figures(ReportFigures& out, const Slice& s, const std::vector<double>& etas);
void add_fidelity_figure(ReportFigures& out, const Slice& s);
void add_feature_figures(ReportFigures& out, const Slice& s);

}  // namespace balerbench::report
