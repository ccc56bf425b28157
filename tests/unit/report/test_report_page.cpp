// test_report_page.cpp: the HTML report's parts from fixture trials (report/report_page.h): the
// terminal view's columns, the tables' HTML (values, escaping, marked rows), the figures' Vega-Lite
// specifications and their numbers against the tables', the summary, the page around them, and
// the plotting library's error when it is missing. The page in a real browser:
// tests/integration/report_page_test.py. No LibTorch headers.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "common/error.h"
#include "harness/report/html_text.h"
#include "harness/report/plot_library.h"
#include "harness/report/report_figures.h"
#include "harness/report/report_page.h"
#include "harness/report/table_renderer.h"
#include "harness/report/tables.h"
#include "tests/test_util.h"
#include "tests/unit/trial_fixtures.h"

namespace balerbench {
namespace {

using nlohmann::json;

std::size_t count(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

const report::ReportFigure* figure_of(const report::ReportFigures& f, const std::string& kind) {
  for (const auto& x : f.figures)
    if (x.kind == kind) return &x;
  return nullptr;
}

// The fixture with a failed trial, a warm-up and a disturbed repeat.
std::vector<TrialRecord> marked_trials() {
  std::vector<TrialRecord> trials = fixture_trials();
  TrialRecord failed = fixture_trial("k6", "amp_bf16", 512, 0, 1, 1);
  failed.status = TrialStatus::kFailed;
  failed.error = "amp_bf16: <no> such device";
  failed.train_s = failed.train_energy_j = std::nullopt;
  trials.push_back(failed);
  TrialRecord warmup = fixture_trial("k7", "fp32", 512, 0, 30, 3000);
  warmup.result["run_design"] = {{"warmup", true}};
  trials.push_back(warmup);
  trials[1].result["disturbance"] = {{"disturbed", true}, {"reason", "another process used 90% of a CPU"}};
  for (std::size_t i = 0; i < trials.size(); ++i) trials[i].id = static_cast<int64_t>(i + 1);
  return trials;
}

TEST(TerminalView, KeepsTheDecisionColumnsAndJoinsEachIntervalInOneCell) {
  const Table t = make_tables(fixture_trials(), "precision", {}).at(0);
  const Table v = terminal_view(t);
  EXPECT_LT(v.columns.size(), t.columns.size());
  EXPECT_EQ(std::count(v.columns.begin(), v.columns.end(), "95% interval"), 2);
  for (const char* gone : {"mode", "time_median_s", "time_sd_s", "energy_kwh", "time_vs_fp32_ci95_low"})
    EXPECT_EQ(std::find(v.columns.begin(), v.columns.end(), gone), v.columns.end()) << gone;
  const auto col = [&](const std::string& name) {
    return static_cast<std::size_t>(std::find(v.columns.begin(), v.columns.end(), name) - v.columns.begin());
  };
  const auto tcol = [&](const std::string& name) {
    return static_cast<std::size_t>(std::find(t.columns.begin(), t.columns.end(), name) - t.columns.begin());
  };
  ASSERT_EQ(v.rows.size(), t.rows.size());
  // The amp_fp16 row: its ratio as the table has it, its interval from the table's two ends.
  EXPECT_EQ(v.rows[1][col("time_vs_fp32")], t.rows[1][tcol("time_vs_fp32")]);
  EXPECT_EQ(v.rows[1][col("time_vs_fp32") + 1],
            "[" + report::cell_text(t.rows[1][tcol("time_vs_fp32_ci95_low")]) + ", " +
                report::cell_text(t.rows[1][tcol("time_vs_fp32_ci95_high")]) + "]");
  EXPECT_TRUE(v.rows[0][col("time_vs_fp32") + 1].is_null());  // the baseline has no interval
  EXPECT_NE(v.notes.at(0).find("--wide"), std::string::npos);
  EXPECT_EQ(v.notes.size(), t.notes.size() + 1);
  // A narrow table is shown whole, without the note.
  const Table cost = make_tables(fixture_trials(), "cost", {}).at(0);
  EXPECT_EQ(terminal_view(cost).columns, cost.columns);
  EXPECT_EQ(terminal_view(cost).notes, cost.notes);
}

TEST(HtmlTables, EveryCellWithItsValueEscapedAndTrialRowsMarked) {
  const std::vector<Table> tables = make_tables(marked_trials(), "trials", {});
  const std::string html = render_tables(tables, "html");
  EXPECT_EQ(count(html, "<tr class=\"bb-failed\">"), 1u) << html;
  EXPECT_EQ(count(html, "<tr class=\"bb-warmup\">"), 1u);
  EXPECT_EQ(count(html, "<tr class=\"bb-disturbed\">"), 1u);
  EXPECT_NE(html.find("1 failed (the error column says why)"), std::string::npos);
  EXPECT_NE(html.find("amp_bf16: &lt;no&gt; such device"), std::string::npos);  // escaped
  EXPECT_EQ(html.find("<no>"), std::string::npos);
  EXPECT_EQ(count(html, "<tr"), tables[0].rows.size() + 1);  // the header and one per trial
  EXPECT_NE(html.find("data-v=\"10\">10</td>"), std::string::npos);
  EXPECT_NE(html.find("<details class=\"bb-notes\"><summary>Notes ("), std::string::npos);
}

TEST(HtmlText, JsonForScriptCannotCloseTheElement) {
  const std::string s = report::json_for_script(json{{"x", "</script><!-- a < b"}});
  EXPECT_EQ(s.find('<'), std::string::npos) << s;
  EXPECT_EQ(json::parse(s)["x"], "</script><!-- a < b");
  EXPECT_EQ(report::html_escape("a<b & \"c\" 'd'"), "a&lt;b &amp; &quot;c&quot; &#39;d&#39;");
}

TEST(ReportFigures, EachFigureFromTheTablesNumbers) {
  const std::vector<TrialRecord> trials = marked_trials();
  const report::ReportFigures f = report::make_figures(trials, {});
  const report::ReportFigure* ratio = figure_of(f, "ratio_to_fp32");
  ASSERT_NE(ratio, nullptr);
  const Table precision = make_tables(trials, "precision", {}).at(0);
  // amp_fp16's time and energy ratios, and fp64's (one repeat: no interval); the FP32 row is the 1.
  const json& rows = ratio->spec["data"]["values"];
  ASSERT_EQ(rows.size(), 4u) << rows.dump();
  EXPECT_EQ(rows[0]["ratio"], precision.rows[1][std::find(precision.columns.begin(), precision.columns.end(),
                                                          "time_vs_fp32") - precision.columns.begin()]);
  EXPECT_EQ(ratio->expected_marks["symbol"], 4);
  EXPECT_EQ(ratio->spec["title"]["subtitle"][0].get<std::string>().find("on "), 0u);
  EXPECT_NE(ratio->spec["title"]["subtitle"][1].get<std::string>().find("estimated"), std::string::npos);

  const report::ReportFigure* te = figure_of(f, "time_energy");
  ASSERT_NE(te, nullptr);
  // Configurations whose every repeat reached the target: fp32 and amp_fp16 (fp64 missed it);
  // their means as the cost_pareto table gives them, and the trials (the warm-up marked) around them.
  const json& configs = te->spec["layer"][3]["data"]["values"];
  ASSERT_EQ(configs.size(), 2u);
  EXPECT_DOUBLE_EQ(configs[0]["time_s"].get<double>(), 6);  // fp32's TTA: 5 and 7
  const json& single = te->spec["layer"][0]["data"]["values"];
  EXPECT_TRUE(std::any_of(single.begin(), single.end(), [](const json& p) {
    return p["trial_kind"] == "repeat on a disturbed machine";
  }));
  const Table pareto = make_tables(trials, "cost", {}).at(1);
  ASSERT_EQ(pareto.name, "cost_pareto");
  EXPECT_EQ(te->expected_marks["frontier"], pareto.rows.size());  // a ring on each
  EXPECT_EQ(te->expected_marks.value("line", 0), pareto.rows.size() >= 2 ? 1 : 0);

  for (const char* kind : {"loss", "phase_energy"}) EXPECT_NE(figure_of(f, kind), nullptr) << kind;
  EXPECT_EQ(figure_of(f, "power_limit"), nullptr);  // no power limits in the fixture
  EXPECT_EQ(figure_of(f, "codecs"), nullptr);       // nor codecs
  const report::ReportFigure* phases = figure_of(f, "phase_energy");
  EXPECT_EQ(phases->expected_marks["rect"], 9);  // 3 configurations x 3 modes
  EXPECT_NE(phases->caption.find("1 failed trial has no figures"), std::string::npos) << phases->caption;
}

// A feature's stored figures as run/feature_quality.h writes them, its residual histogram with
// `filled` non-empty bins.
json stored_feature(const std::string& name, double nrmse, int filled) {
  std::vector<int64_t> counts(40, 0);
  for (int i = 0; i < filled; ++i) counts[10 + i] = 3;
  return {{"name", name}, {"unit", "GeV"}, {"nrmse", nrmse},
          {"residual_box", {{"q1", -1}, {"median", 0}, {"q3", 1}, {"whisker_low", -2}, {"whisker_high", 2}}},
          {"residual_histogram", {{"low", -4}, {"high", 4}, {"counts", counts}, {"below", 0}, {"above", 0}}},
          {"response_histogram", nullptr}};
}

TEST(ReportFigures, FidelityAndBalersPerFeatureFiguresFromTheStoredFigures) {
  std::vector<TrialRecord> trials;
  for (const double ratio : {2.0, 4.0})
    for (int repeat = 0; repeat < 2; ++repeat) {
      TrialRecord t = with_model(fixture_trial("r" + std::to_string(ratio) + std::to_string(repeat), "fp32", 512,
                                               repeat, 10, 100 * ratio + repeat),
                                 "AE", ratio, static_cast<int64_t>(24 / ratio), 9000);
      t.result["reconstruction"]["per_feature"] =
          json::array({stored_feature("obj.pt_", 0.01 * ratio + 0.001 * repeat, 2), stored_feature("obj.eta_", 0.001, 1)});
      trials.push_back(t);
    }
  for (std::size_t i = 0; i < trials.size(); ++i) trials[i].id = static_cast<int64_t>(i + 1);
  const report::ReportFigures f = report::make_figures(trials, {});
  const report::ReportFigure* fidelity = figure_of(f, "fidelity");
  ASSERT_NE(fidelity, nullptr);
  const json& points = fidelity->spec["data"]["values"];
  ASSERT_EQ(points.size(), 2u) << points.dump();
  // Ratio 2: pt_ is the worst feature, its nrmse 0.020 and 0.021 (mean 0.0205); the cycle's energy
  // 200 + 7.5 and 201 + 7.5 J.
  EXPECT_EQ(points[0]["worst_feature"], "pt_");
  EXPECT_NEAR(points[0]["nrmse"].get<double>(), 0.0205, 1e-12);
  EXPECT_NEAR(points[0]["energy_j"].get<double>(), 208.0, 1e-9);
  EXPECT_TRUE(points[0]["energy_j_lo"].is_number());  // two repeats: an interval
  EXPECT_NE(points[0]["ratio"].get<std::string>().find("latent 12"), std::string::npos) << points[0]["ratio"];
  EXPECT_EQ(fidelity->expected_marks["symbol"], 2);
  EXPECT_EQ(fidelity->expected_marks["rule"], 4);
  EXPECT_NE(fidelity->spec["title"]["subtitle"][1].get<std::string>().find("estimated"), std::string::npos);

  // The residuals of the most recent trial first in the chooser, one panel per feature in its unit.
  const report::ReportFigure* residuals = figure_of(f, "feature_residuals");
  ASSERT_NE(residuals, nullptr);
  const json& options = residuals->spec["params"][0]["bind"]["options"];
  ASSERT_EQ(options.size(), 4u);
  EXPECT_EQ(residuals->spec["params"][0]["value"], options[0]);
  EXPECT_NE(options[0].get<std::string>().find("trial 4"), std::string::npos) << options[0];
  const json& bins = residuals->spec["data"]["values"];
  EXPECT_EQ(bins.size(), 4u * (2 + 1));  // the non-empty bins: 2 of pt_ and 1 of eta_ per trial
  EXPECT_EQ(bins[0]["feature"], "pt_ [GeV]");
  EXPECT_DOUBLE_EQ(bins[0]["x0"].get<double>(), -4 + 10 * 0.2);
  EXPECT_DOUBLE_EQ(bins[0]["x1"].get<double>(), -4 + 11 * 0.2);
  EXPECT_EQ(residuals->expected_marks["rect"], 2);
  EXPECT_EQ(figure_of(f, "feature_responses"), nullptr);  // no response stored
  const report::ReportFigure* boxes = figure_of(f, "feature_boxes");
  ASSERT_NE(boxes, nullptr);
  EXPECT_EQ(boxes->spec["data"]["values"].size(), 8u);
  EXPECT_EQ(boxes->expected_marks["rule"], 2);
}

TEST(ReportFigures, NoFidelityFiguresWithoutStoredFeatures) {
  const report::ReportFigures f = report::make_figures(fixture_trials(), {});
  for (const char* kind : {"fidelity", "feature_residuals", "feature_responses", "feature_boxes"})
    EXPECT_EQ(figure_of(f, kind), nullptr) << kind;
}

TEST(ReportFigures, NoneWhenNoTrialFinished) {
  std::vector<TrialRecord> trials = {fixture_trial("k1", "fp32", 512, 0, 1, 1)};
  trials[0].status = TrialStatus::kFailed;
  const report::ReportFigures f = report::make_figures(trials, {});
  EXPECT_TRUE(f.figures.empty());
  ASSERT_EQ(f.not_drawn.size(), 1u);
  EXPECT_NE(f.not_drawn[0].find("none of them finished"), std::string::npos);
}

report::PlotLibrary fake_library() {
  return {{{"vega", "6.0.0", "LICENCE TEXT", "var vega = {}; // </script> inside"},
           {"vega-lite", "6.0.0", "LICENCE", "var vegaLite = {};"}}};
}

TEST(ReportPage, SummarySystemsFirstFiguresAndTheLibraryInside) {
  const std::vector<TrialRecord> trials = marked_trials();
  report::ExperimentReport e{"fixture", trials, make_tables(trials, "all", {}), {}};
  const std::string page = report::report_page({"r.sqlite", {e}, "2025-01-01T00:00:00Z"}, fake_library());
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(page.find("7 trials stored: 5 finished"), std::string::npos);
  EXPECT_NE(page.find("1 failed"), std::string::npos);
  EXPECT_NE(page.find("1 warm-up"), std::string::npos);
  // The systems table comes before the figures, and the figures before the other tables.
  const std::size_t systems = page.find("data-table=\"systems\""), figures = page.find("<h3>Figures</h3>"),
                    precision = page.find("data-table=\"precision\"");
  EXPECT_LT(systems, figures);
  EXPECT_LT(figures, precision);
  EXPECT_EQ(count(page, "data-table=\"systems\""), 1u);
  EXPECT_EQ(page.find("</script> inside"), std::string::npos);  // the library cannot end its element early
  EXPECT_NE(page.find("<\\/script> inside"), std::string::npos);
  EXPECT_NE(page.find("LICENCE TEXT"), std::string::npos);
  EXPECT_NE(page.find("id=\"bb-figures\""), std::string::npos);
  EXPECT_NE(page.find(report::page_script()), std::string::npos);
  EXPECT_EQ(count(page, "<figure class=\"bb-figure\""), report::make_figures(trials, {}).figures.size());
}

TEST(ReportPage, AnEmptyDatabaseSaysSo) {
  const std::string page = report::report_page({"empty.sqlite", {}, "2025-01-01T00:00:00Z"}, fake_library());
  EXPECT_NE(page.find("holds no trials yet"), std::string::npos);
  EXPECT_EQ(page.find("var vega"), std::string::npos);  // nothing to draw: no library
}

TEST(PlotLibrary, MissingIsAnInputErrorWithTheFixAndTheEnvironmentOverrides) {
  TempDir dir;
  ::setenv("BALERBENCH_REPORT_JS_DIR", dir.root().c_str(), 1);
  EXPECT_EQ(report::plot_library_dir(), dir.root());
  expect_input_error([] { report::check_plot_library(); }, "vega/build/vega.min.js is missing");
  expect_input_error([] { report::load_plot_library(); }, "run scripts/setup.sh");
  for (const char* part : {"vega", "vega-lite"}) {
    const std::string base = dir.path(part);
    std::filesystem::create_directories(base + "/build");
    write_text(base + "/build/" + std::string(part) + ".min.js", "var x;");
    write_text(base + "/LICENSE", "BSD");
    write_text(base + "/package.json", "{\"version\": \"9.9.9\"}");
  }
  const report::PlotLibrary lib = report::load_plot_library();
  EXPECT_EQ(lib.versions(), "Vega 9.9.9, Vega-Lite 9.9.9");
  ::unsetenv("BALERBENCH_REPORT_JS_DIR");
}

}  // namespace
}  // namespace balerbench
