// test_tables.cpp: the report tables (report/tables.h) from fixture trials: precision, phases and
// profile, cost and Pareto, complexity, datasets, cross-check, attribution, memory and trials
// tables, failed grid points left out, engines as an axis, and the four formats. No LibTorch headers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "common/error.h"
#include "harness/energy/energy_window.h"
#include "harness/report/table_cells.h"
#include "harness/report/table_renderer.h"
#include "harness/report/tables.h"
#include "harness/report/trial_identity.h"
#include "harness/store/store.h"
#include "tests/test_util.h"
#include "tests/unit/report/table_cell.h"
#include "tests/unit/trial_fixtures.h"

namespace balerbench {
namespace {

using nlohmann::json;

const Table& find_table(const std::vector<Table>& tables, const std::string& title_part) {
  for (const auto& t : tables)
    if (t.title.find(title_part) != std::string::npos) return t;
  ADD_FAILURE() << "no table titled ..." << title_part << "...";
  static Table none;
  return none;
}

TEST(ReportTables, PrecisionTableFromFixture) {
  const auto trials = fixture_trials();
  const auto tables = make_tables(trials, "precision", {});
  ASSERT_EQ(tables.size(), 1u);
  const Table& t = tables[0];
  ASSERT_EQ(t.rows.size(), 3u);  // fp32 first, then amp_fp16, then fp64
  EXPECT_EQ(cell(t, 0, "mode"), "normal training (FP32)");
  EXPECT_EQ(cell(t, 1, "mode"), "AMP with loss scaling (FP16 + GradScaler)");
  EXPECT_DOUBLE_EQ(cell(t, 0, "time_s").get<double>(), 11);
  EXPECT_DOUBLE_EQ(cell(t, 0, "time_median_s").get<double>(), 11);
  EXPECT_NEAR(cell(t, 0, "time_sd_s").get<double>(), std::sqrt(2.0), 1e-12);
  EXPECT_NEAR(cell(t, 0, "time_ci95_s").get<double>(), 12.706 * std::sqrt(2.0) / std::sqrt(2.0), 1e-9);
  EXPECT_DOUBLE_EQ(cell(t, 1, "time_vs_fp32").get<double>(), 8.0 / 11.0);
  EXPECT_DOUBLE_EQ(cell(t, 1, "energy_vs_fp32").get<double>(), 600.0 / 1100.0);
  EXPECT_DOUBLE_EQ(cell(t, 0, "energy_kwh").get<double>(), 1100 / 3.6e6);
  EXPECT_TRUE(cell(t, 2, "time_sd_s").is_null());  // one repeat: no spread
  EXPECT_EQ(cell(t, 0, "energy"), "estimated");
  EXPECT_NE(t.title.find("Test CPU"), std::string::npos);  // hardware named
}

// Grid points whose trials all failed have no row in the measured tables; a note counts them, and
// the trials table lists them. With no finished trial at all, the hardware comes from provenance.
TEST(ReportTables, FailedGridPointsAreLeftOutOfMeasuredTables) {
  auto trials = fixture_trials();
  TrialRecord failed = fixture_trial("k6", "amp_bf16", 512, 0, 0, 0);
  failed.status = TrialStatus::kFailed;
  failed.error = "CUDA error";
  trials.push_back(failed);
  for (const char* name : {"precision", "phases", "batch_size"}) {
    const Table t = make_tables(trials, name, {0.5})[0];
    for (std::size_t r = 0; r < t.rows.size(); ++r)
      for (const auto& v : t.rows[r]) EXPECT_NE(v, json("amp_bf16")) << name << " row " << r;
    bool noted = false;
    for (const auto& n : t.notes) noted |= n.find("1 failed and 0 skipped") != std::string::npos &&
                                           n.find("1 configuration(s) with no finished trial") != std::string::npos;
    EXPECT_TRUE(noted) << name;
  }
  EXPECT_EQ(make_tables(trials, "precision", {})[0].rows.size(), 3u);
  const Table listed = make_tables(trials, "trials", {})[0];
  EXPECT_EQ(listed.rows.size(), trials.size());

  TrialRecord only = failed;
  only.hardware.clear();
  only.provenance = {{"cpu_model", "Test CPU"}, {"logical_cpus", 2}, {"gpus", {{{"name", "NVIDIA H100 80GB HBM3"}}}}};
  const Table t = make_tables({only}, "precision", {})[0];
  EXPECT_TRUE(t.rows.empty());
  EXPECT_NE(t.title.find("GPU: NVIDIA H100 80GB HBM3; CPU: Test CPU (2 CPUs)"), std::string::npos) << t.title;
  EXPECT_EQ(t.title.find("unknown hardware"), std::string::npos) << t.title;
}

// A trial stored as ok by an earlier balerbench whose losses are not finite (lr 1e30: null in the
// database) is read as failed: out of the precision table's rows and ratios and the cost frontier,
// listed in the trials table with why. A time stored beyond the year 9999 prints as no date.
TEST(ReportTables, ADivergedTrialStoredAsOkIsCountedAsFailed) {
  auto trials = fixture_trials();
  TrialRecord diverged = fixture_trial("k6", "amp_bf16", 512, 0, 5, 300, 1, 10);
  diverged.result["final_train_loss"] = nullptr;  // NaN, as the database gives it back
  trials.push_back(diverged);
  TrialRecord fine = fixture_trial("k7", "amp_bf16", 256, 0, 5, 300, 1, 10);
  fine.result["final_train_loss"] = 0.01;
  EpochRow nan_epoch;
  nan_epoch.train_loss = nan_epoch.val_loss = std::nan("");
  TrialRecord nan_rows = fixture_trial("k8", "amp_bf16", 128, 0, 5, 300, 1, 10);
  nan_rows.epoch_rows = {nan_epoch};
  EXPECT_TRUE(training_diverged(diverged));
  EXPECT_FALSE(training_diverged(fine));
  EXPECT_TRUE(training_diverged(nan_rows));
  EXPECT_FALSE(training_diverged(fixture_trials()[0]));  // no losses recorded: nothing to judge
  fail_diverged_trials(trials);
  EXPECT_EQ(trials.back().status, TrialStatus::kFailed);
  EXPECT_NE(trials.back().error.find("training diverged"), std::string::npos);
  const Table precision = make_tables(trials, "precision", {})[0];
  EXPECT_EQ(precision.rows.size(), 3u);  // fp32, amp_fp16, fp64: no amp_bf16 row, so no ratio for it
  for (const auto& row : precision.rows)
    for (const auto& v : row) EXPECT_NE(v, json("amp_bf16"));
  const Table cost = make_tables(trials, "cost", {0.5})[0];
  for (const auto& row : cost.rows)
    for (const auto& v : row) EXPECT_NE(v, json("amp_bf16"));
  EXPECT_TRUE(report::utc_time(1e300).is_null());
  EXPECT_TRUE(report::utc_time(253402300800.0).is_null());
  EXPECT_EQ(report::utc_time(253402300799.0), "9999-12-31T23:59:59Z");
}

// A trial whose energy windows were flagged (a meter's failed reads) says so under the trials table.
TEST(ReportTables, TrialsTableNotesEnergyFlags) {
  auto trials = fixture_trials();
  trials[1].id = 2;
  trials[1].result["energy"] = {
      {"phases", {{{"phase", "train"}, {"flags", {"3 failed reads of rapl inside: its energy counts nothing"}}}}},
      {"total", {{"phase", "total"}, {"flags", {"3 failed reads of rapl inside: its energy counts nothing"}}}}};
  const Table t = make_tables(trials, "trials", {})[0];
  int flagged = 0;
  for (const auto& n : t.notes)
    if (n.find("energy flags") != std::string::npos) {
      ++flagged;
      EXPECT_NE(n.find("trial 2 energy flags: train: 3 failed reads of rapl"), std::string::npos) << n;
      EXPECT_NE(n.find("; total: 3 failed reads"), std::string::npos) << n;
    }
  EXPECT_EQ(flagged, 1);
}

// The same flag from each epoch's window of a phase is one line with its figure's range and count.
TEST(ReportTables, TrialsTableCondensesAFlagRepeatedAcrossWindows) {
  auto trials = fixture_trials();
  trials[1].id = 2;
  const auto short_flag = [](const char* d) {
    return std::string("shorter than rapl's update period (") + d + " s < 0.01 s): its energy may read low or zero";
  };
  trials[1].result["energy"] = {
      {"phases",
       {{{"phase", "evaluation"},
         {"flags", {short_flag("0.00721"), short_flag("0.0043"), short_flag("0.00959"), "1 failed read of rapl"}}},
        {{"phase", "train"}, {"flags", {short_flag("0.0081")}}}}}};
  const Table t = make_tables(trials, "trials", {})[0];
  std::string note;
  for (const auto& n : t.notes)
    if (n.find("energy flags") != std::string::npos) note = n;
  EXPECT_NE(note.find("evaluation: 1 failed read of rapl; evaluation: shorter than rapl's update period (0.0043 to "
                      "0.00959 s < 0.01 s): its energy may read low or zero (3 windows); train: " +
                      short_flag("0.0081")),
            std::string::npos)
      << note;
}

// report --table crosscheck: one row per trial window that holds a cross-check (WindowResult::to_json),
// in the table "all" only when some trial has one; asked for by name, it says why it is empty.
TEST(ReportTables, CrosscheckTableFromTheTrialsWindows) {
  auto trials = fixture_trials();
  EXPECT_EQ(make_tables(trials, "crosscheck", {})[0].rows.size(), 0u);
  EXPECT_NE(make_tables(trials, "crosscheck", {})[0].notes[0].find("no trial has both a wall meter"), std::string::npos);
  for (const auto& t : make_tables(trials, "all", {})) EXPECT_NE(t.name, "crosscheck");
  WindowResult w;
  w.name = "train";
  DomainEnergy rapl, wall;
  rapl.meter = "rapl";
  rapl.domain = "package-0";
  rapl.energy_j = 14107.4;
  rapl.edge_uncertainty_j = 5.0;
  wall.meter = "wattmeter";
  wall.domain = "wall";
  wall.category = DomainCategory::kWall;
  wall.in_total = false;
  wall.energy_j = 19181.3;
  wall.edge_uncertainty_j = 2.0;
  w.domains = {rapl, wall};
  WindowResult total = w;
  total.name = "total";
  trials[2].id = 3;
  trials[2].result["energy"] = {{"phases", {w.to_json()}}, {"total", total.to_json()}};
  trials[3].result["energy"] = {{"total", {{"phase", "total"}, {"crosscheck", "damaged"}}}};  // skipped
  const Table t = make_tables(trials, "crosscheck", {})[0];
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(cell(t, 0, "id"), 3);
  EXPECT_EQ(cell(t, 0, "window"), "train");
  EXPECT_EQ(cell(t, 1, "window"), "total");
  EXPECT_EQ(cell(t, 1, "components"), "rapl");
  EXPECT_NEAR(cell(t, 1, "ratio").get<double>(), 14107.4 / 19181.3, 1e-12);
  EXPECT_NEAR(cell(t, 1, "unseen_pct").get<double>(), 100 * 5073.9 / 19181.3, 1e-9);
  EXPECT_NEAR(cell(t, 1, "components_pm_j").get<double>(), 5.0, 1e-12);
  EXPECT_NE(cell(t, 1, "reading").get<std::string>().find("fans, disks"), std::string::npos);
  bool listed = false;
  for (const auto& table : make_tables(trials, "all", {})) listed |= table.name == "crosscheck";
  EXPECT_TRUE(listed);
  EXPECT_NE(render_tables({t}, "md").find("| 3 | amp_fp16 |"), std::string::npos) << render_tables({t}, "md");
}

// report --table attribution (T7): per trial window, each category's absolute energy beside its part
// attributable to the run's processes and their ±; listed under "all" only when a trial has one.
TEST(ReportTables, AttributionTableFromTheTrialsWindows) {
  auto trials = fixture_trials();
  EXPECT_EQ(make_tables(trials, "attribution", {})[0].rows.size(), 0u);
  for (const auto& t : make_tables(trials, "all", {})) EXPECT_NE(t.name, "attribution");
  WindowResult w;
  w.name = "train";
  DomainEnergy cpu, gpu;
  cpu.meter = "rapl";
  cpu.domain = "package-0";
  cpu.energy_j = 100;
  cpu.attributable_j = 40;
  cpu.attributable_uncertainty_j = 2;
  cpu.use_tree = 0.8;
  cpu.use_all = 2.0;
  gpu.meter = "nvml";
  gpu.domain = "gpu0";
  gpu.category = DomainCategory::kGpu;
  gpu.energy_j = 300;
  w.domains = {cpu, gpu};  // the GPU without per-process samples: no share
  trials[1].id = 2;
  trials[1].result["energy"] = {{"phases", {w.to_json()}}};
  const Table t = make_tables(trials, "attribution", {})[0];
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(cell(t, 0, "id"), 2);
  EXPECT_EQ(cell(t, 0, "window"), "train");
  EXPECT_NEAR(cell(t, 0, "cpu_j").get<double>(), 100, 1e-12);
  EXPECT_NEAR(cell(t, 0, "cpu_attributable_j").get<double>(), 40, 1e-12);
  EXPECT_NEAR(cell(t, 0, "cpu_attributable_pm_j").get<double>(), 2, 1e-12);
  EXPECT_NEAR(cell(t, 0, "cpu_share").get<double>(), 0.4, 1e-12);
  EXPECT_EQ(cell(t, 0, "gpu_attributable_j"), "-");
  bool listed = false;
  for (const auto& table : make_tables(trials, "all", {})) listed |= table.name == "attribution";
  EXPECT_TRUE(listed);
}

// Memory per phase (result.memory): the T4-shaped table's peak_rss_mib is the group's mean per phase,
// the trials table's the highest of the trial's phases; CUDA's '-' where no trial had it.
TEST(ReportTables, MemoryPerPhaseInTheT4AndTrialsTables) {
  auto trials = fixture_trials();
  const auto memory = [](double train, double compress, double decompress) {
    const auto m = [](double rss) { return json{{"host_peak_rss_mib", rss}, {"cuda_peak_reserved_mib", nullptr}}; };
    return json{{"train", m(train)}, {"compress", m(compress)}, {"decompress", m(decompress)}};
  };
  trials[0].result["memory"] = memory(400, 300, 350);  // fp32, repeat 0
  trials[1].result["memory"] = memory(500, 310, 330);  // fp32, repeat 1
  trials[1].result["memory"]["train"]["gpu_memory_used_peak_mib"] = 1536;  // NVML, one trial only
  const Table t4 = make_tables(trials, "phases", {})[0];
  bool found = false;
  for (std::size_t i = 0; i < t4.rows.size(); ++i) {
    if (cell(t4, i, "precision") != "fp32") continue;
    const std::string mode = cell(t4, i, "mode");
    const double want = mode == "train" ? 450 : mode == "compress" ? 305 : 340;
    EXPECT_NEAR(cell(t4, i, "peak_rss_mib").get<double>(), want, 1e-9) << mode;
    EXPECT_TRUE(cell(t4, i, "cuda_peak_mib").is_null());
    if (mode == "train") EXPECT_NEAR(cell(t4, i, "gpu_used_peak_mib").get<double>(), 1536, 1e-9);
    else EXPECT_TRUE(cell(t4, i, "gpu_used_peak_mib").is_null());
    found = true;
  }
  EXPECT_TRUE(found);
  const Table all = make_tables(trials, "trials", {})[0];
  EXPECT_NEAR(cell(all, 0, "peak_rss_mib").get<double>(), 400, 1e-9);
  EXPECT_NEAR(cell(all, 1, "peak_rss_mib").get<double>(), 500, 1e-9);
  EXPECT_EQ(cell(all, 2, "peak_rss_mib"), "-");  // no memory recorded
  EXPECT_EQ(cell(all, 0, "gpu_used_peak_mib"), "-");
  EXPECT_NEAR(cell(all, 1, "gpu_used_peak_mib").get<double>(), 1536, 1e-9);
}

// CSV: one table, the header on the first line (pandas and spreadsheets read it as it is).
// Engines are a grid axis: trials of different engines are never averaged together, the engine
// gets a column when it varies (else a note), and each engine's fp32 row is its own baseline.
TEST(ReportTables, EnginesAreAnAxisWithTheirOwnFp32Baseline) {
  std::vector<TrialRecord> trials;
  for (const char* engine : {"libtorch", "fused"})
    for (const char* precision : {"fp32", "fp64"}) {
      const double time_s = std::string(engine) == "fused" ? 6 : 10;
      TrialRecord t = fixture_trial(std::string(engine) + precision, precision, 512, 0,
                                    std::string(precision) == "fp64" ? 2 * time_s : time_s, 100);
      t.engine = engine;
      trials.push_back(t);
    }
  const Table t = make_tables(trials, "precision", {})[0];
  ASSERT_EQ(t.rows.size(), 4u);
  const auto col = [&](const std::string& name) {
    return static_cast<std::size_t>(std::find(t.columns.begin(), t.columns.end(), name) - t.columns.begin());
  };
  ASSERT_LT(col("engine"), t.columns.size());
  for (const auto& row : t.rows) {
    EXPECT_DOUBLE_EQ(row[col("time_vs_fp32")].get<double>(), row[col("precision")] == "fp64" ? 2.0 : 1.0)
        << row[col("engine")];
  }
  // auto runs fp32 on fused and amp_bf16 on libtorch: AMP's ratio is then to the fused fp32 row.
  TrialRecord bf16 = fixture_trial("bf16", "amp_bf16", 512, 0, 3, 50);
  bf16.engine = "libtorch";
  const Table mixed = make_tables({trials[2], bf16}, "precision", {})[0];
  ASSERT_EQ(mixed.rows.size(), 2u);
  const auto mixed_col = static_cast<std::size_t>(
      std::find(mixed.columns.begin(), mixed.columns.end(), "time_vs_fp32") - mixed.columns.begin());
  EXPECT_DOUBLE_EQ(mixed.rows[1][mixed_col].get<double>(), 0.5);  // 3 s against fused fp32's 6 s
  const Table trials_table = make_tables(trials, "trials", {})[0];
  EXPECT_EQ(trials_table.columns[5], "engine");
  EXPECT_EQ(trials_table.rows[2][5], "fused");
  // One engine: no column, a note instead.
  const Table one = make_tables({trials[2], trials[3]}, "precision", {})[0];
  EXPECT_EQ(std::find(one.columns.begin(), one.columns.end(), "engine"), one.columns.end());
  bool noted = false;
  for (const auto& n : one.notes) noted |= n.find("engine fused") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(ReportTables, CsvIsOneTableWithTheHeaderFirst) {
  const std::string csv = render_tables(make_tables(fixture_trials(), "precision", {}), "csv");
  EXPECT_EQ(csv.rfind("mode,precision,threads,n,time_s", 0), 0u) << csv;
  EXPECT_EQ(csv.find('#'), std::string::npos);
  expect_input_error([] { render_tables(make_tables(fixture_trials(), "all", {}), "csv"); }, "one table per file");
  // A header or cell with a comma or a quote is quoted (RFC 4180): every line has as many fields.
  Table t;
  t.columns = {"codec", "Baler J/MB, training over 10", "say \"hi\""};
  t.rows = {{"zstd", 1.5, "a,b"}};
  EXPECT_EQ(render_tables({t}, "csv"), "codec,\"Baler J/MB, training over 10\",\"say \"\"hi\"\"\"\nzstd,1.5,\"a,b\"\n");
}

TEST(ReportTables, CostAndParetoFromFixture) {
  const auto tables = make_tables(fixture_trials(), "cost", {0, 0.5, 1});
  const Table& best = find_table(tables, "Best configuration");
  ASSERT_EQ(best.rows.size(), 3u);
  // fp32: TTA 6 s, ETA 600 J; amp_fp16: TTA 5 s, ETA 400 J; fp64 never reached: not a candidate.
  // eta 0: 100 W x 5 s = 500 (amp); eta 1: 400 J (amp); eta 0.5: 0.5*400 + 0.5*500 = 450.
  EXPECT_DOUBLE_EQ(cell(best, 0, "cost_j").get<double>(), 500);
  EXPECT_DOUBLE_EQ(cell(best, 1, "cost_j").get<double>(), 450);
  EXPECT_DOUBLE_EQ(cell(best, 2, "cost_j").get<double>(), 400);
  EXPECT_NE(cell(best, 1, "best_configuration").get<std::string>().find("amp_fp16"), std::string::npos);
  EXPECT_EQ(cell(best, 1, "candidates"), 2);
  const Table& front = find_table(tables, "Pareto");
  ASSERT_EQ(front.rows.size(), 1u);  // amp_fp16 beats fp32 in both
  const auto bs = make_tables(fixture_trials(), "batch_size", {0.5});
  const Table& b = bs[0];
  ASSERT_EQ(b.rows.size(), 3u);
  EXPECT_EQ(cell(b, 2, "tta_s"), "not reached");
  EXPECT_EQ(cell(b, 2, "reached"), "0/1");
  EXPECT_EQ(cell(b, 2, "cost_eta_0.5"), "target not reached");
  EXPECT_DOUBLE_EQ(cell(b, 0, "cost_eta_0.5").get<double>(), 0.5 * 600 + 0.5 * 100 * 6);
}

TEST(ReportTables, PhasesComplexityDatasetsAndFormats) {
  const auto trials = fixture_trials();
  const auto phases = make_tables(trials, "phases", {});
  const Table& p = phases[0];
  ASSERT_EQ(p.rows.size(), 9u);  // 3 modes x 3 configurations
  EXPECT_EQ(cell(p, 1, "mode"), "compress");
  EXPECT_DOUBLE_EQ(cell(p, 1, "energy_j").get<double>(), 5);
  EXPECT_NEAR(cell(p, 1, "co2_kg").get<double>(), 5 / 3.6e6 * 100 / 1000, 1e-15);
  const Table c = make_tables(trials, "complexity", {})[0];
  EXPECT_EQ(cell(c, 0, "in_to_out"), "24 -> 200");
  EXPECT_EQ(cell(c, 0, "t1_operations_per_batch"), 2457800);
  EXPECT_EQ(cell(c, 0, "flops_per_sample"), 9600);
  const Table d = make_tables(trials, "datasets", {})[0];
  EXPECT_EQ(cell(d, 0, "shape"), "(1000, 24)");
  EXPECT_EQ(cell(d, 0, "trials"), 5);
  {  // A dataset stored without its dtype, label or shape, or with a shape of text: '-', '?', '()'
     // (a const json's operator[] on the missing dtype read freed memory).
    std::vector<TrialRecord> bare = trials;
    for (TrialRecord& r : bare) r.result["dataset"] = {{"shape", {"x", 3}}};
    const Table b = make_tables(bare, "datasets", {})[0];
    EXPECT_EQ(cell(b, 0, "dataset"), "?");
    EXPECT_EQ(cell(b, 0, "shape"), "(?, 3)");
    EXPECT_EQ(cell(b, 0, "dtype"), "-");
  }

  const auto all = make_tables(trials, "all", {0.5});
  const std::string md = render_tables(all, "md");
  EXPECT_NE(md.find("| normal training (FP32) |"), std::string::npos);
  EXPECT_NE(md.find("estimated"), std::string::npos);
  const json j = json::parse(render_tables(all, "json"));
  EXPECT_EQ(j["tables"][0]["table"], "precision");
  EXPECT_DOUBLE_EQ(j["tables"][0]["rows"][0]["time_s"].get<double>(), 11);
  const std::string csv = render_tables(make_tables(trials, "precision", {}), "csv");
  EXPECT_NE(csv.find("mode,precision,threads,n,time_s"), std::string::npos);
  EXPECT_NE(csv.find("normal training (FP32),fp32,-,2,11,11,"), std::string::npos);
  const std::string tex = render_tables(make_tables(trials, "precision", {}), "latex");
  EXPECT_NE(tex.find("\\begin{tabular}"), std::string::npos);
  EXPECT_NE(tex.find("time\\_s"), std::string::npos);
  // booktabs' rules, the packages named above the tables; fitted to the page on request.
  EXPECT_NE(tex.find("\\toprule"), std::string::npos) << tex;
  EXPECT_EQ(tex.find("\\hline"), std::string::npos) << tex;
  EXPECT_EQ(tex.rfind("% balerbench tables: \\usepackage{booktabs}", 0), 0u) << tex;
  const std::vector<Table> precision = make_tables(trials, "precision", {});
  const std::string resized = report::render_latex(precision, report::LatexFit::kResize);
  EXPECT_NE(resized.find("\\resizebox{\\textwidth}{!}{%\n\\begin{tabular}"), std::string::npos) << resized;
  EXPECT_NE(resized.find("\\end{tabular}}\n\\caption"), std::string::npos) << resized;
  const std::string landscape = report::render_latex(precision, report::LatexFit::kLandscape);
  EXPECT_NE(landscape.find("\\begin{landscape}\n\\begin{table}"), std::string::npos) << landscape;
  EXPECT_NE(landscape.find("pdflscape"), std::string::npos) << landscape;
  // The paper view: the decision columns, and a note saying --wide gives them all.
  const Table paper = paper_view(precision.front());
  EXPECT_LT(paper.columns.size(), precision.front().columns.size());
  EXPECT_NE(paper.notes.front().find("Paper view"), std::string::npos) << paper.notes.front();
  // < and > are math in LaTeX's OT1 encoding: as text they print as an inverted ! and ? (was: < raw).
  Table lt;
  lt.title = "a < b > c";
  lt.columns = {"x<y", "z"};
  lt.rows = {{"p < 0.05", "q > 1"}};
  const std::string ltex = render_tables({lt}, "latex");
  EXPECT_NE(ltex.find("x$<$y"), std::string::npos) << ltex;
  EXPECT_NE(ltex.find("p $<$ 0.05 & q $>$ 1"), std::string::npos) << ltex;
  EXPECT_NE(ltex.find("\\caption{a $<$ b $>$ c}"), std::string::npos) << ltex;
  lt.title = "x^2 {a} \\ b_c ~1 #2 $3 %4 &5";
  EXPECT_NE(render_tables({lt}, "latex").find("\\caption{x\\textasciicircum{}2 \\{a\\} \\textbackslash{} b\\_c "
                                              "\\textasciitilde{}1 \\#2 \\$3 \\%4 \\&5}"),
            std::string::npos)
      << render_tables({lt}, "latex");
  expect_input_error([&] { make_tables(trials, "speed", {}); }, "no such table");
  expect_input_error([&] { render_tables(all, "xlsx"); }, "unknown");
}

}  // namespace
}  // namespace balerbench
