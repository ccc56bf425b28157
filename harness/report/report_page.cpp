// report_page.cpp: report_page (report_page.h): the document around the tables' sections and the
// figures, with the plotting library and the page's script inside.
#include "harness/report/report_page.h"

#include <sstream>

#include "harness/report/html_text.h"
#include "harness/report/report_figures.h"
#include "harness/report/table_renderer.h"
#include "harness/version.h"

namespace balerbench::report {
namespace {

using nlohmann::json;

// An experiment's tables, the systems table first (the page opens with it).
std::vector<Table> systems_first(const std::vector<Table>& tables) {
  std::vector<Table> out;
  for (const auto& t : tables)
    if (t.name == "systems") out.push_back(t);
  for (const auto& t : tables)
    if (t.name != "systems") out.push_back(t);
  return out;
}

void render_toc(std::ostream& o, const ReportPageInput& in, const std::vector<ReportFigures>& figures) {
  if (in.experiments.empty()) return;
  o << "<nav class=\"bb-toc\"><ul>\n";
  for (std::size_t i = 0; i < in.experiments.size(); ++i) {
    const std::string x = "x" + std::to_string(i + 1);
    const ExperimentReport& e = in.experiments[i];
    o << "<li><a href=\"#" << x << "\">Experiment " << html_escape(e.name) << "</a>: <a href=\"#" << x
      << "-figures\">figures (" << figures[i].figures.size() << ")</a>; tables:";
    for (const auto& t : systems_first(e.tables))
      o << " <a href=\"#" << x << "-table-" << html_id(t.name) << "\">" << html_escape(t.name) << "</a>";
    o << "</li>\n";
  }
  o << "</ul></nav>\n";
}

void render_figures(std::ostream& o, const std::string& x, const ReportFigures& f, json& specs) {
  o << "<section class=\"bb-figures\" id=\"" << x << "-figures\">\n<h3>Figures</h3>\n";
  if (f.figures.empty()) o << "<p class=\"bb-empty\">No figure: no trial of this experiment finished.</p>\n";
  for (std::size_t k = 0; k < f.figures.size(); ++k) {
    const ReportFigure& fig = f.figures[k];
    const std::string id = x + "-fig-" + std::to_string(k + 1);
    const std::string title = fig.spec.contains("title") ? fig.spec["title"].value("text", "") : "";
    o << "<figure class=\"bb-figure\" id=\"" << id << "\" data-kind=\"" << html_escape(fig.kind)
      << "\" data-expect=\"" << html_escape(json_for_script(fig.expected_marks)) << "\">\n"
      << "<div class=\"bb-plot\" role=\"img\" aria-label=\"" << html_escape(title) << "\"></div>\n"
      << "<figcaption>" << html_escape(fig.caption) << " <span class=\"bb-save\"></span></figcaption>\n</figure>\n";
    specs.push_back({{"id", id}, {"spec", fig.spec}});
  }
  if (!f.not_drawn.empty()) {
    o << "<ul class=\"bb-not-drawn\">\n";
    for (const auto& n : f.not_drawn) o << "<li>Not drawn: " << html_escape(n) << "</li>\n";
    o << "</ul>\n";
  }
  o << "</section>\n";
}

void render_experiment(std::ostream& o, std::size_t i, const ExperimentReport& e, const ReportFigures& f,
                       json& specs) {
  const std::string x = "x" + std::to_string(i + 1);
  o << "<section class=\"bb-experiment\" id=\"" << x << "\" data-experiment=\"" << html_escape(e.name) << "\">\n"
    << "<h2>Experiment " << html_escape(e.name) << "</h2>\n"
    << "<p class=\"bb-summary\" id=\"" << x << "-summary\">" << experiment_summary(e) << "</p>\n";
  const std::vector<Table> tables = systems_first(e.tables);
  const bool systems = !tables.empty() && tables.front().name == "systems";
  if (systems) o << html_tables({tables.front()}, x + "-table-");
  render_figures(o, x, f, specs);
  o << "<section class=\"bb-tables\" id=\"" << x << "-tables\">\n<h3>Tables</h3>\n"
    << "<p class=\"bb-hint\">A click on a column's name sorts by it (again: the other way). Each table's notes say "
       "what its columns hold; the numbers are those of <code>balerbench report</code>'s other formats.</p>\n"
    << html_tables(std::vector<Table>(tables.begin() + (systems ? 1 : 0), tables.end()), x + "-table-")
    << "</section>\n</section>\n";
}

void render_library(std::ostream& o, const PlotLibrary& library) {
  for (const auto& part : library.parts) {
    std::string script = part.script;
    // No "</script" may end the element early; inside a string or a regular expression, "<\/" is "</".
    for (std::size_t at = script.find("</script"); at != std::string::npos; at = script.find("</script", at + 2))
      script.replace(at, 2, "<\\/");
    o << "<script>/* " << part.name << " " << part.version << ": its licence is at the end of this page */\n"
      << script << "\n</script>\n";
  }
}

void render_footer(std::ostream& o, const PlotLibrary& library) {
  o << "<footer>\n<p>Made by balerbench " << kVersion << " (" << html_escape(git_revision())
    << "). The figures are drawn in the browser by " << html_escape(library.versions())
    << ", embedded in this file (so it needs no network).</p>\n";
  for (const auto& part : library.parts)
    o << "<details class=\"bb-licence\"><summary>Licence of " << html_escape(part.name) << " " << html_escape(part.version)
      << "</summary><pre>" << html_escape(part.license) << "</pre></details>\n";
  o << "</footer>\n";
}

}  // namespace

std::string report_page(const ReportPageInput& in, const PlotLibrary& library) {
  std::vector<ReportFigures> figures;
  std::size_t n_figures = 0;
  for (const auto& e : in.experiments) {
    figures.push_back(make_figures(e.trials, e.etas));
    n_figures += figures.back().figures.size();
  }
  std::string names;
  for (const auto& e : in.experiments) names += (names.empty() ? "" : ", ") + e.name;
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
    << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
    << "<meta name=\"generator\" content=\"balerbench " << kVersion << "\">\n"
    << "<title>balerbench results: " << html_escape(names.empty() ? "no trials" : names) << "</title>\n"
    << "<style>\n" << page_stylesheet() << "</style>\n</head>\n<body>\n<header>\n"
    << "<h1>balerbench results" << (names.empty() ? "" : ": " + html_escape(names)) << "</h1>\n"
    << "<p class=\"bb-meta\">From the results database <code>" << html_escape(in.database) << "</code>, made "
    << html_escape(in.made_utc) << ".</p>\n";
  render_toc(o, in, figures);
  o << "</header>\n<main>\n";
  if (in.experiments.empty())
    o << "<p class=\"bb-empty bb-no-trials\">The database <code>" << html_escape(in.database)
      << "</code> holds no trials yet: there is nothing to report. Run an experiment into it first: "
      << "<code>balerbench run EXPERIMENT.json --db " << html_escape(in.database) << "</code>.</p>\n";
  json specs = json::array();
  for (std::size_t i = 0; i < in.experiments.size(); ++i) render_experiment(o, i, in.experiments[i], figures[i], specs);
  o << "</main>\n";
  render_footer(o, library);
  o << "<script type=\"application/json\" id=\"bb-figures\">" << json_for_script(specs) << "</script>\n";
  if (n_figures) render_library(o, library);
  o << "<script>\n" << page_script() << "</script>\n</body>\n</html>\n";
  return o.str();
}

}  // namespace balerbench::report
