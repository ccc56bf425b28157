// tables.h: the report tables, made from the results database only, and
// rendered as Markdown, CSV, LaTeX, JSON or HTML (the HTML page with its figures: report_page.h).
//
// The tables are listed once, in table_registry.cpp (one file each: precision_table.cpp, ...), and
// the formats in table_renderer.cpp (one renderer each). Trials are grouped by configuration (batch
// size, precision, engine, power limit, epochs) within one system (trial_identity.h's fingerprint)
// and one spec variant; repeats give mean, spread and a 95% confidence interval, and ratios an
// interval and a verdict. A comparing table is made once per system and variant when the trials
// hold several, never mixing them. Warm-up trials are listed but in no statistic. Every table with
// energy says which kind it is (measured, estimated, simulated) in an "energy" column, and names
// the system.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "harness/store/store.h"

namespace balerbench {

struct Table {
  std::string name;  // unique within one experiment's tables: precision, phases, phases_profile, cost, cost_pareto, ...
                     // (+ "_<fingerprint>" per system, "_v<variant>" per spec variant, when there are several)
  std::string title;
  std::vector<std::string> columns;
  std::vector<std::vector<nlohmann::json>> rows;  // numbers, strings or null ("-")
  std::vector<std::string> notes;
  // The columns a reader decides by (configuration, n, time, energy, each ratio with its interval and
  // verdict, the energy kind), for the terminal view (terminal_view); empty: every column is one.
  std::vector<std::string> decision_columns;
};

// The table as a terminal shows it by default (report and run without --wide): only its decision
// columns, each ratio's *_ci95_low and *_ci95_high pair as one "95% interval" cell "[low, high]", and
// a note saying how many columns are left out and where they are. Every file format keeps them all.
Table terminal_view(const Table& t);
// The same view for a paper (report --format latex without --wide): its note says that --wide gives
// every column.
Table paper_view(const Table& t);

// What shapes the tables beyond the trials: the cost weights, and the smallest difference that
// matters (pyperf's compare_to --min-speed): a ratio whose 95% interval lies inside 1 +- min_effect
// is "no meaningful difference" even when the interval excludes 1. 0: every resolved difference counts.
struct TableOptions {
  std::vector<double> etas;  // {0, 0.5, 1} when empty (make_tables fills it in)
  double min_effect = 0;     // a fraction: 0.02 for 2%
  // --table projection: the dataset to project to (bytes, or events: rows of the data's first axis;
  // neither: no projection) and how many trainings it takes (1: trained once for all of it).
  double dataset_bytes = 0, dataset_events = 0;
  int64_t trainings = 1;
  // --table fidelity: the largest nrmse of any feature a configuration may have (its 95% upper bound
  // over the repeats) to be a candidate for the cheapest; 0: no bound.
  double max_nrmse = 0;
};

const std::vector<std::string>& report_table_names();  // precision, phases, batch_size, ..., systems, across, trials
const std::vector<std::string>& report_format_names();  // InputError listing the valid names unless `table` is one of report_table_names() or "all";
// `option` names where it came from.
void check_table_name(const std::string& table, const std::string& option = "--table");

// `table`: a name from report_table_names(), or "all". `etas`: the cost
// weights (from the experiment; {0, 0.5, 1} when empty). `min_effect`: TableOptions::min_effect.
std::vector<Table> make_tables(const std::vector<TrialRecord>& trials, const std::string& table,
                               const std::vector<double>& etas, double min_effect = 0);
// The same, with every option (--table projection's dataset among them).
std::vector<Table> make_tables_with(const std::vector<TrialRecord>& trials, const std::string& table,
                                    TableOptions options);

// The codecs table (codecs_table.cpp) of one `balerbench codecs` comparison (run/codec_comparison.h),
// or of several repeats of one configuration (figures: their medians).
Table codecs_table(const nlohmann::json& comparison, const std::string& title);
Table codecs_table(const std::vector<const nlohmann::json*>& comparisons, const std::string& title);

// format: md | csv | latex | json | html. CSV takes exactly one table (header first, no title line: it
// opens as it is in pandas and spreadsheets); more throw InputError. HTML gives the tables' sections
// of a page (report_page.h makes the whole page, with its figures).
std::string render_tables(const std::vector<Table>& tables, const std::string& format);

}  // namespace balerbench
