// report_page.h: the HTML report: one self-contained page per database (balerbench report --format
// html, run --html), which opens offline in any browser and can be mailed or attached to a paper's
// supplement. For each experiment: a one-paragraph summary of what was run, the systems table, the
// figures (report_figures.h) and every other table (html_renderer.cpp: sortable, notes folded). The
// plotting library (plot_library.h), the page's own script and stylesheet (harness/report/html/
// page.js, page.css, compiled in) and the figures' data are all inside the file.
#pragma once

#include <string>
#include <vector>

#include "harness/report/plot_library.h"
#include "harness/report/tables.h"
#include "harness/store/store.h"

namespace balerbench::report {

struct ExperimentReport {
  std::string name;
  std::vector<TrialRecord> trials;  // every stored trial, with its epochs (Store::trials(name, true, false))
  std::vector<Table> tables;        // the tables the page lists, as make_tables made them
  std::vector<double> etas;         // the cost weights (the figures' tables are made with them)
};

struct ReportPageInput {
  std::string database;  // the database's path, as given
  std::vector<ExperimentReport> experiments;  // none: the database holds no trial, and the page says so
  std::string made_utc;  // when the page was made ("2025-01-31T12:00:00Z")
};

std::string report_page(const ReportPageInput& in, const PlotLibrary& library);

// The paragraph that opens an experiment's section: its trials (finished, failed, skipped, warm-up,
// disturbed), systems, grid, repeats, energy kinds, target and dates, as HTML.
std::string experiment_summary(const ExperimentReport& e);

// The page's own stylesheet and script (harness/report/html/page.css and page.js, compiled in by
// harness/CMakeLists.txt).
const char* page_stylesheet();
const char* page_script();

}  // namespace balerbench::report
