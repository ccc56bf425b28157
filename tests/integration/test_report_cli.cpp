// test_report_cli.cpp: `balerbench report` and `run` as a reader meets them: the terminal view of a
// wide table (the columns to decide by; --wide and files keep all), the HTML page from the real
// binary (its tables and figures; the page in a browser: report_page_test.py), a clear error
// before any work when the page's plotting library is missing, and scripts/plot.py's line when
// matplotlib is.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "tests/test_util.h"

namespace balerbench {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

class ReportCli : public ::testing::Test {
 protected:
  void SetUp() override {
    const json ex = json::parse(R"({
      "schema_version": 1, "name": "tiny",
      "dataset": {"generator": {"kind": "cms", "rows": 2000, "seed": 1}},
      "model": {"name": "AE", "compression_ratio": 1.6},
      "training": {"test_size": 0.2},
      "sweep": {"batch_size": [256], "precision": ["fp32", "fp64"], "epochs": [2], "repeats": 2},
      "energy": {"meters": ["cpu_estimate", "ram_estimate"], "sample_hz": 20, "cpu_tdp_w": 100}
    })");
    write_text(dir_.path("exp.json"), ex.dump());
  }
  CommandResult bb(const std::string& args, const std::string& env = "") {
    return run_command("cd " + dir_.root() + " && " + env + " " + balerbench_binary() + " " + args);
  }
  // The header line of the first Markdown table in `text`.
  static std::string first_header(const std::string& text) {
    const std::size_t at = text.find("\n| ");
    return at == std::string::npos ? "" : text.substr(at + 1, text.find('\n', at + 1) - at - 1);
  }
  TempDir dir_;
};

TEST_F(ReportCli, TheTerminalShowsTheColumnsToDecideByAndWideAndFilesShowAll) {
  const auto run = bb("run exp.json --db db.sqlite --progress none --tables precision");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const std::string compact = first_header(run.out);
  EXPECT_NE(compact.find("| time_vs_fp32 | 95% interval | time_verdict |"), std::string::npos) << compact;
  EXPECT_EQ(compact.find("time_median_s"), std::string::npos) << compact;
  EXPECT_NE(run.out.find("Terminal view: the columns to decide by"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("--table NAME [--wide]"), std::string::npos) << run.out;

  const auto terminal = bb("report --db db.sqlite --table precision");
  ASSERT_EQ(terminal.exit_code, 0) << terminal.out;
  EXPECT_EQ(first_header(terminal.out), compact);
  const auto wide = bb("report --db db.sqlite --table precision --wide");
  ASSERT_EQ(wide.exit_code, 0) << wide.out;
  const std::string all = first_header(wide.out);
  for (const char* c : {"time_median_s", "time_vs_fp32_ci95_low", "time_vs_fp32_ci95_high", "energy_kwh"})
    EXPECT_NE(all.find(std::string("| ") + c + " |"), std::string::npos) << c << ": " << all;
  EXPECT_EQ(wide.out.find("Terminal view"), std::string::npos);
  // A file keeps every column, as the other formats do.
  ASSERT_EQ(bb("report --db db.sqlite --table precision --out p.md").exit_code, 0);
  EXPECT_EQ(first_header(read_text(dir_.path("p.md"))), all);
  const json j = json::parse(bb("report --db db.sqlite --table precision --format json").out);
  EXPECT_EQ(j["tables"][0]["columns"].size(), static_cast<std::size_t>(std::count(all.begin(), all.end(), '|') - 1));
}

// A whole dataset's cost from the stored trials, and energy against fidelity; their options refused
// where they shape nothing, before any work.
TEST_F(ReportCli, ProjectionAndFidelityFrontierFromTheStoredTrials) {
  ASSERT_EQ(bb("run exp.json --db db.sqlite --progress none --tables none").exit_code, 0);
  const json p = json::parse(
      bb("report --db db.sqlite --table projection --dataset-bytes 2.5TB --trainings 4 --format json").out);
  ASSERT_EQ(p["tables"].size(), 1u);  // no codecs measured
  EXPECT_NE(p["tables"][0]["title"].get<std::string>().find("Compressing 2.5 TB with Baler, training 4 times"),
            std::string::npos);
  ASSERT_EQ(p["tables"][0]["rows"].size(), 2u);
  for (const json& row : p["tables"][0]["rows"]) {
    EXPECT_GT(row["compress_h"].get<double>(), 0) << row.dump();
    EXPECT_GT(row["total_kwh"].get<double>(), row["train_kwh"].get<double>()) << row.dump();
    EXPECT_LE(row["total_kwh_ci95_low"].get<double>(), row["total_kwh"].get<double>()) << row.dump();
  }
  const json f = json::parse(bb("report --db db.sqlite --table fidelity --max-nrmse 1 --format json").out);
  ASSERT_EQ(f["tables"].size(), 2u);
  EXPECT_EQ(f["tables"][1]["table"], "fidelity_frontier");
  // Both within the bound; without a MaxPower (the experiment sets no cost.max_power_w) none has a cost.
  for (const json& row : f["tables"][1]["rows"]) {
    EXPECT_EQ(row["meets_nrmse"], "yes") << row.dump();
    EXPECT_EQ(row["cheapest_at_eta"], "-") << row.dump();
  }
  EXPECT_NE(f["tables"][1]["notes"].dump().find("no configuration meets the bound (with a MaxPower"), std::string::npos);
  for (const char* bad : {"--table projection", "--table projection --dataset-bytes 0", "--table projection "
                          "--dataset-bytes 10XB", "--table precision --dataset-bytes 1TB", "--table precision "
                          "--max-nrmse 0.1", "--table projection --dataset-bytes 1TB --dataset-events 5"}) {
    const auto r = bb(std::string("report --db db.sqlite ") + bad);
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.out;
    EXPECT_NE(r.out.find("balerbench: error: "), std::string::npos) << bad << ": " << r.out;
  }
  EXPECT_EQ(bb("run exp.json --db db.sqlite --tables projection").exit_code, 2);
}

TEST_F(ReportCli, TheHtmlPageHoldsEveryTableAndTheFigures) {
  ASSERT_EQ(bb("run exp.json --db db.sqlite --progress none --tables none --html run.html").exit_code, 0);
  const auto r = bb("report --db db.sqlite --format html --out page.html");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("wrote page.html"), std::string::npos) << r.out;
  const std::string page = read_text(dir_.path("page.html"));
  const json report = json::parse(bb("report --db db.sqlite --format json").out);
  for (const auto& t : report["tables"])
    EXPECT_NE(page.find("data-table=\"" + t["table"].get<std::string>() + "\""), std::string::npos) << t["table"];
  for (const char* kind : {"time_energy", "ratio_to_fp32", "loss", "phase_energy"})
    EXPECT_NE(page.find(std::string("data-kind=\"") + kind + "\""), std::string::npos) << kind;
  EXPECT_NE(page.find("vegaLite"), std::string::npos);  // the library is inside
  // run --html writes the same page, but for the time it was made (the line that says so).
  const auto without_time = [](std::string html) {
    const std::size_t at = html.find("<p class=\"bb-meta\">");
    return at == std::string::npos ? html : html.erase(at, html.find("</p>", at) - at);
  };
  EXPECT_EQ(without_time(read_text(dir_.path("run.html"))), without_time(page));
}

TEST_F(ReportCli, WithoutThePlottingLibraryHtmlStopsBeforeAnyWorkWithTheFix) {
  const std::string no_library = "BALERBENCH_REPORT_JS_DIR=" + dir_.path("nowhere");
  auto r = bb("run exp.json --db db.sqlite --progress none --html page.html", no_library);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("plotting library is not installed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("hint: run scripts/setup.sh"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir_.path("db.sqlite")));  // no trial ran
  r = bb("run exp.json --db db.sqlite --progress none --html ./db.sqlite");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("--html ./db.sqlite: is the results database itself"), std::string::npos) << r.out;
  ASSERT_EQ(bb("run exp.json --db db.sqlite --progress none --tables none").exit_code, 0);
  r = bb("report --db db.sqlite --format html --out page.html", no_library);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("vega/build/vega.min.js is missing"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir_.path("page.html")));
}

TEST_F(ReportCli, PlotScriptSaysWhatToInstallWithoutMatplotlib) {
  // A matplotlib that cannot be imported stands first on the path.
  fs::create_directories(dir_.path("fake/matplotlib"));
  write_text(dir_.path("fake/matplotlib/__init__.py"), "raise ImportError('no matplotlib here')\n");
  const auto r = run_command("PYTHONPATH=" + dir_.path("fake") + " " + python_binary() + " " + source_dir() +
                             "/scripts/plot.py --db db.sqlite --out " + dir_.path("plots"));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("plot.py: error: matplotlib is missing (hint: apt-get install python3-matplotlib"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;  // one line
}

}  // namespace
}  // namespace balerbench
