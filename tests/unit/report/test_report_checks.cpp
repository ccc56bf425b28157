// test_report_checks.cpp: what the tables say beyond mean and interval (issue 39): the convergence
// table and its one-sided test against FP32, median and MAD with hyperfine's outlier rule,
// --min-effect's "no meaningful difference", short energy windows, MaxPower's source in the cost
// table, and trials disturbed by a hot or throttled GPU. From fixture trials; no LibTorch headers.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "harness/report/tables.h"
#include "tests/unit/report/table_cell.h"
#include "tests/unit/trial_fixtures.h"

namespace balerbench {
namespace {

using nlohmann::json;

bool has_note(const Table& t, const std::string& part) {
  return std::any_of(t.notes.begin(), t.notes.end(), [&](const std::string& n) { return n.find(part) != std::string::npos; });
}

std::string notes_of(const Table& t) {
  std::string s;
  for (const auto& n : t.notes) s += "\n  " + n;
  return s;
}

// A finished trial that reached the target at epoch `epochs_to_target` (none: never), with its final losses.
TrialRecord converging(const std::string& precision, int64_t repeat, std::optional<int64_t> epochs_to_target,
                       double final_val_loss) {
  TrialRecord t = fixture_trial(precision + std::to_string(repeat), precision, 512, repeat, 10, 1000,
                                epochs_to_target ? std::optional<double>(1.0 * *epochs_to_target) : std::nullopt,
                                epochs_to_target ? std::optional<double>(100.0 * *epochs_to_target) : std::nullopt);
  t.id = static_cast<int64_t>(repeat) + (precision == "fp32" ? 1 : 101);
  t.epochs_to_target = epochs_to_target;
  t.result["epochs_run"] = 10;
  t.result["final_train_loss"] = final_val_loss / 2;
  t.result["final_val_loss"] = final_val_loss;
  return t;
}

// FP32 reaches the target at epochs 3, 3, 4; AMP at 6, 7 and never (counted as 11, a lower bound):
// Welch's t on {6, 7, 11} against {3, 3, 4} is 2.985 with p = 0.04315 (SciPy 1.10: ttest_ind(..., equal_var=False,
// alternative="greater")), so AMP needs more epochs.
TEST(ReportChecks, ConvergenceTableTestsWhetherAPrecisionNeedsMoreEpochsThanFp32) {
  std::vector<TrialRecord> trials = {converging("fp32", 0, 3, 0.10), converging("fp32", 1, 3, 0.12),
                                     converging("fp32", 2, 4, 0.11), converging("amp_fp16", 0, 6, 0.2),
                                     converging("amp_fp16", 1, 7, 0.3), converging("amp_fp16", 2, std::nullopt, 0.4)};
  const std::vector<Table> tables = make_tables(trials, "convergence", {});
  ASSERT_EQ(tables.size(), 1u);
  const Table& t = tables[0];
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(cell(t, 0, "precision"), "fp32");
  EXPECT_EQ(cell(t, 0, "reached"), "3/3");
  EXPECT_EQ(cell(t, 0, "never"), 0);
  EXPECT_NEAR(cell(t, 0, "epochs_to_target").get<double>(), 10.0 / 3, 1e-12);
  EXPECT_EQ(cell(t, 0, "vs_fp32"), "baseline");
  EXPECT_EQ(cell(t, 1, "reached"), "2/3");
  EXPECT_EQ(cell(t, 1, "never"), 1);
  EXPECT_DOUBLE_EQ(cell(t, 1, "epochs_to_target").get<double>(), 6.5);  // over the repeats that reached it
  EXPECT_DOUBLE_EQ(cell(t, 1, "epochs_to_target_min").get<double>(), 6);
  EXPECT_DOUBLE_EQ(cell(t, 1, "epochs_to_target_max").get<double>(), 7);
  EXPECT_NEAR(cell(t, 1, "final_val_loss").get<double>(), 0.3, 1e-12);
  EXPECT_NEAR(cell(t, 1, "final_train_loss").get<double>(), 0.15, 1e-12);
  EXPECT_NEAR(cell(t, 1, "extra_epochs_vs_fp32").get<double>(), 8.0 - 10.0 / 3, 1e-12);
  EXPECT_NEAR(cell(t, 1, "more_epochs_p").get<double>(), 0.04315210312304678, 1e-10);
  EXPECT_EQ(cell(t, 1, "vs_fp32").get<std::string>().rfind("needs more epochs (p = 0.043", 0), 0u) << cell(t, 1, "vs_fp32");
  EXPECT_TRUE(has_note(t, "training.seed + r")) << notes_of(t);
  EXPECT_TRUE(has_note(t, "reference convergence points")) << notes_of(t);

  // The same epochs on both sides: no evidence; one repeat a side: no test.
  std::vector<TrialRecord> same = {converging("fp32", 0, 3, 0.1), converging("fp32", 1, 4, 0.1),
                                   converging("amp_bf16", 0, 4, 0.1), converging("amp_bf16", 1, 3, 0.1)};
  const Table s = make_tables(same, "convergence", {})[0];
  EXPECT_EQ(cell(s, 1, "vs_fp32").get<std::string>().rfind("no evidence of more epochs (p = 0.500", 0), 0u)
      << cell(s, 1, "vs_fp32");
  // engine auto: fp32 on the fused engine, amp_bf16 on libtorch; FP32 is still the baseline.
  for (auto& t : same) t.engine = t.precision == "fp32" ? "fused" : "libtorch";
  EXPECT_EQ(cell(make_tables(same, "convergence", {})[0], 1, "vs_fp32").get<std::string>().rfind("no evidence", 0), 0u);
  const Table one = make_tables({converging("fp32", 0, 3, 0.1), converging("amp_bf16", 0, 9, 0.1)}, "convergence", {})[0];
  EXPECT_EQ(cell(one, 1, "vs_fp32").get<std::string>().rfind("n=1: no test", 0), 0u) << cell(one, 1, "vs_fp32");
}

// A ratio resolved at 1.01 reads "slower"; with --min-effect 2% its interval lies inside 1 +- 2%, and
// it is no meaningful difference. An interval reaching past 2% keeps its verdict.
TEST(ReportChecks, MinEffectCallsADifferenceInsideTheBandNotMeaningful) {
  std::vector<TrialRecord> trials = {fixture_trial("a", "fp32", 512, 0, 10.00, 1000),
                                     fixture_trial("b", "fp32", 512, 1, 10.01, 1000),
                                     fixture_trial("c", "fp32", 512, 2, 9.99, 1000),
                                     fixture_trial("d", "amp_bf16", 512, 0, 10.10, 1000),
                                     fixture_trial("e", "amp_bf16", 512, 1, 10.11, 1000),
                                     fixture_trial("f", "amp_bf16", 512, 2, 10.09, 1000)};
  const Table plain = make_tables(trials, "precision", {})[0];
  EXPECT_EQ(cell(plain, 1, "time_verdict"), "slower");
  EXPECT_FALSE(has_note(plain, "--min-effect"));
  const Table banded = make_tables(trials, "precision", {}, 0.02)[0];
  EXPECT_EQ(cell(banded, 1, "time_verdict"), "no meaningful difference (within +-2%)");
  EXPECT_TRUE(has_note(banded, "--min-effect 2%")) << notes_of(banded);
  const Table narrow = make_tables(trials, "precision", {}, 0.005)[0];
  EXPECT_EQ(cell(narrow, 1, "time_verdict"), "slower");
}

// Five repeats, one of them 20 s among 10 s ones: median 10, MAD 0.1, so 100 MADs out.
TEST(ReportChecks, MedianMadAndOutliersByHyperfinesRule) {
  std::vector<TrialRecord> trials;
  const double times[] = {10.0, 10.1, 9.9, 10.0, 20.0};
  for (int i = 0; i < 5; ++i) {
    trials.push_back(fixture_trial("k" + std::to_string(i), "fp32", 512, i, times[i], 1000 + i));
    trials.back().id = i + 1;
  }
  const Table p = make_tables(trials, "precision", {})[0];
  EXPECT_DOUBLE_EQ(cell(p, 0, "time_median_s").get<double>(), 10.0);
  EXPECT_NEAR(cell(p, 0, "time_mad_s").get<double>(), 0.1, 1e-12);
  EXPECT_NEAR(cell(p, 0, "energy_mad_j").get<double>(), 1, 1e-12);
  EXPECT_TRUE(has_note(p, "trial 5 (bs 512, fp32")) << notes_of(p);
  EXPECT_TRUE(has_note(p, "is an outlier in training time: |x - median| / MAD = 100.0")) << notes_of(p);
  EXPECT_FALSE(has_note(p, "outlier in training energy")) << notes_of(p);
  const Table t = make_tables(trials, "trials", {})[0];
  EXPECT_EQ(cell(t, 4, "outlier"), "time");
  EXPECT_EQ(cell(t, 0, "outlier"), "no");
}

// Training energy whose window held 4 updates of NVML's 0.1 s counter against a threshold of 60.
TEST(ReportChecks, ShortWindowsAreFlaggedInTheTables) {
  std::vector<TrialRecord> trials = fixture_trials();
  trials[0].id = 7;
  trials[0].result["meter_updates"] = {{"train", 4}, {"eta", 2}, {"compress", 1}, {"decompress", 1},
                                       {"min", 60}, {"meter", "nvml"}, {"period_s", 0.1}};
  trials[1].result["meter_updates"] = {{"train", 120}, {"eta", 70}, {"compress", 61}, {"decompress", 61},
                                       {"min", 60}, {"meter", "nvml"}, {"period_s", 0.1}};
  const Table p = make_tables(trials, "precision", {})[0];
  EXPECT_EQ(cell(p, 0, "energy_updates"), 4);
  EXPECT_EQ(cell(p, 0, "energy_window"), "short (1 of 2 repeats < 60 updates)");
  EXPECT_EQ(cell(p, 1, "energy_window"), "-");  // estimated energy: nothing counted
  EXPECT_NE(std::find(p.decision_columns.begin(), p.decision_columns.end(), "energy_window"), p.decision_columns.end());
  EXPECT_TRUE(has_note(p, "Short windows: the training energy of 1 trial(s) (id 7) held fewer than 60 updates of nvml"))
      << notes_of(p);
  const Table b = make_tables(trials, "batch_size", {})[0];
  EXPECT_EQ(cell(b, 0, "eta_window"), "short (1 of 2 repeats < 60 updates)");
  const Table t = make_tables(trials, "trials", {})[0];
  EXPECT_EQ(cell(t, 0, "short_windows"), "train, eta, compress, decompress");
  EXPECT_EQ(cell(t, 1, "short_windows"), "no");
  EXPECT_EQ(cell(t, 2, "short_windows"), "-");
  // Nothing short: the column stays out of the terminal's view and no note is added.
  const Table quiet = make_tables({trials[1], trials[2]}, "precision", {})[0];
  EXPECT_EQ(std::find(quiet.decision_columns.begin(), quiet.decision_columns.end(), "energy_window"),
            quiet.decision_columns.end());
  EXPECT_FALSE(has_note(quiet, "Short windows"));
}

TEST(ReportChecks, CostTableSaysWhereMaxPowerCameFrom) {
  std::vector<TrialRecord> trials = fixture_trials();
  for (auto& t : trials) t.result["max_power"] = {{"w", 100}, {"source", "gpu_max_limit"}, {"gpus", 1}};
  const Table c = make_tables(trials, "cost", {0.5})[0];
  ASSERT_EQ(c.name, "cost");
  EXPECT_EQ(cell(c, 0, "max_power_source"), "the GPU's maximum power limit (NVML)");
  for (auto& t : trials) t.result["max_power"]["source"] = "cost.max_power_w";
  EXPECT_EQ(cell(make_tables(trials, "cost", {0.5})[0], 0, "max_power_source"), "cost.max_power_w");
  for (auto& t : trials) t.result.erase("max_power");  // a trial from before the source was recorded
  EXPECT_EQ(cell(make_tables(trials, "cost", {0.5})[0], 0, "max_power_source"), "-");
  // No MaxPower at all: the note says how to give one.
  for (auto& t : trials) t.max_power_w.reset();
  EXPECT_TRUE(has_note(make_tables(trials, "cost", {0.5})[0], "have no MaxPower"));
}

// A GPU that throttled for power during training: disturbed (thermal), apart from a busy CPU.
TEST(ReportChecks, ThermalDisturbanceIsNotedApartFromTheCpus) {
  std::vector<TrialRecord> trials = fixture_trials();
  for (std::size_t i = 0; i < trials.size(); ++i) {
    trials[i].id = static_cast<int64_t>(i) + 1;
    trials[i].result["disturbance"] = {{"disturbed", false}, {"reason", nullptr}};
  }
  trials[0].result["disturbance"]["thermal"] = {{"disturbed", true}, {"reason", "throttled during train: sw_power_cap"}};
  trials[0].result["thermal"] = {{"start", {{{"index", 0}, {"temperature_c", 71}, {"throttle_reasons", json::array()}}}},
                                 {"windows", {{"train", {{"throttle_reasons", {"sw_power_cap"}}}}}}};
  trials[1].result["disturbance"] = {{"disturbed", true}, {"reason", "other processes used 1.2 CPUs on average"}};
  const Table t = make_tables(trials, "trials", {})[0];
  EXPECT_EQ(cell(t, 0, "disturbed"), "yes");
  EXPECT_EQ(cell(t, 0, "start_temp_c"), 71);
  EXPECT_EQ(cell(t, 0, "throttle"), "sw_power_cap");
  EXPECT_EQ(cell(t, 2, "throttle"), "-");
  EXPECT_TRUE(has_note(t, "trial 1 disturbed: throttled during train: sw_power_cap")) << notes_of(t);
  const Table p = make_tables(trials, "precision", {})[0];
  EXPECT_TRUE(has_note(p, "1 trial here (id 1) started with a hot GPU or throttled")) << notes_of(p);
  EXPECT_TRUE(has_note(p, "1 trial here ran on a disturbed machine (id 2)")) << notes_of(p);
}

// Each row says its threads; a row trained on other threads than its FP32 row says so in its cell
// and in a note, and amp_bf16 on a CPU without bfloat16 instructions is called emulated.
TEST(ReportChecks, PrecisionTableShowsThreadsAndMarksUnfairComparisons) {
  const auto threads_of = [](const Table& t, const std::string& precision) {
    for (std::size_t r = 0; r < t.rows.size(); ++r)
      if (cell(t, r, "precision") == precision) return cell(t, r, "threads").get<std::string>();
    return std::string("no row");
  };
  std::vector<TrialRecord> trials;
  for (int64_t r = 0; r < 2; ++r) {
    trials.push_back(fixture_trial("f" + std::to_string(r), "fp32", 512, r, 10 + r, 1000 + 100 * r));
    trials.push_back(fixture_trial("b" + std::to_string(r), "amp_bf16", 512, r, 6 + r, 600 + 60 * r));
  }
  for (TrialRecord& t : trials) {
    t.provenance["threads"] = t.precision == "fp32" ? 2 : 1;
    t.provenance["system"] = {{"cpu", {{"model_name", "CPU"}, {"isa", {"avx2", "fma", "avx512f"}}}}};
  }
  const Table t = make_tables(trials, "precision", {}).front();
  EXPECT_EQ(threads_of(t, "fp32"), "2");
  EXPECT_EQ(threads_of(t, "amp_bf16"), "1 (fp32: 2)");
  EXPECT_TRUE(has_note(t, "UNEQUAL THREADS: bs 512, amp_bf16")) << notes_of(t);
  EXPECT_TRUE(has_note(t, "(the threads column: '1 (fp32: 2)')")) << notes_of(t);
  {  // The note's example is the row's own cell (it once said '1 (fp32: 2)' whatever the table held).
    std::vector<TrialRecord> flipped = trials;
    for (TrialRecord& r : flipped) r.provenance["threads"] = r.precision == "fp32" ? 1 : 2;
    EXPECT_TRUE(has_note(make_tables(flipped, "precision", {}).front(), "(the threads column: '2 (fp32: 1)')"));
  }
  EXPECT_TRUE(has_note(t, "bfloat16 emulated: no bf16 instructions on this CPU: bs 512, amp_bf16")) << notes_of(t);
  // Equal threads, and a CPU with AVX512-BF16: neither note.
  for (TrialRecord& r : trials) {
    r.provenance["threads"] = 2;
    r.provenance["system"]["cpu"]["isa"].push_back("avx512_bf16");
  }
  const Table fair = make_tables(trials, "precision", {}).front();
  EXPECT_EQ(threads_of(fair, "amp_bf16"), "2");
  EXPECT_FALSE(has_note(fair, "UNEQUAL THREADS")) << notes_of(fair);
  EXPECT_FALSE(has_note(fair, "MIXED THREADS")) << notes_of(fair);
  EXPECT_FALSE(has_note(fair, "emulated")) << notes_of(fair);
  // One row's own repeats on different counts (a resumed run chose again): listed and noted.
  trials[0].provenance["threads"] = 1;  // fp32, repeat 0
  const Table mixed = make_tables(trials, "precision", {}).front();
  EXPECT_EQ(threads_of(mixed, "fp32"), "1, 2");
  EXPECT_TRUE(has_note(mixed, "MIXED THREADS: bs 512, fp32")) << notes_of(mixed);
  // The trials table gives each trial's count and where it came from.
  trials[0].result["threads"] = {{"threads", 1}, {"source", "calibrated"}};
  trials[1].result["threads"] = {{"threads", 2}, {"source", "earlier in this run"}};
  const Table each = make_tables(trials, "trials", {})[0];
  EXPECT_EQ(cell(each, 0, "threads"), "1 (calibrated)");
  EXPECT_EQ(cell(each, 1, "threads"), "2 (earlier in this run)");
  EXPECT_EQ(cell(each, 2, "threads"), "2");
}

// --table fidelity: per configuration the worst and the median feature by nrmse over the repeats,
// with the interval, the residual in the feature's unit and Baler's response.
TEST(ReportChecks, FidelityTableGivesTheWorstAndTheMedianFeature) {
  std::vector<TrialRecord> trials;
  const auto feature = [](const std::string& name, const char* unit, double nrmse) {
    return json{{"name", "recoPFJets_ak5PFJets__RECO.obj." + name}, {"unit", unit}, {"nrmse", nrmse},
                {"residual", {{"rms", 10 * nrmse}}}, {"response_pct", {{"rms", 100 * nrmse}}}, {"psnr_db", 40}};
  };
  for (int64_t r = 0; r < 2; ++r) {
    TrialRecord t = fixture_trial("q" + std::to_string(r), "fp32", 512, r, 10, 1000);
    t.compress_energy_j = 5;
    t.decompress_energy_j = 5;
    t.result["reconstruction"]["per_feature"] =
        json::array({feature("pt_", "GeV", 0.01 + 0.002 * r), feature("eta_", "", 0.05 + 0.01 * r),
                     feature("phi_", "rad", 0.02)});
    trials.push_back(t);
  }
  const Table t = make_tables(trials, "fidelity", {}).front();
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(cell(t, 0, "features"), 3);
  EXPECT_EQ(cell(t, 0, "worst_feature"), "eta_");
  EXPECT_EQ(cell(t, 0, "worst_unit"), "-");
  EXPECT_DOUBLE_EQ(cell(t, 0, "worst_nrmse").get<double>(), 0.055);
  EXPECT_LT(cell(t, 0, "worst_nrmse_ci95_low").get<double>(), 0.055);
  EXPECT_GT(cell(t, 0, "worst_nrmse_ci95_high").get<double>(), 0.055);
  EXPECT_DOUBLE_EQ(cell(t, 0, "worst_residual_rms").get<double>(), 0.55);
  EXPECT_EQ(cell(t, 0, "median_feature"), "phi_");
  EXPECT_EQ(cell(t, 0, "median_unit"), "rad");
  EXPECT_DOUBLE_EQ(cell(t, 0, "energy_j").get<double>(), 1010);  // train 1000, compress 5, decompress 5
  // The second table: energy against fidelity, one configuration alone on the front.
  const std::vector<Table> both = make_tables(trials, "fidelity", {});
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(both[1].name, "fidelity_frontier");
  EXPECT_EQ(cell(both[1], 0, "pareto"), nullptr);  // the fixtures store no latent space: not placed
  // Trials from before the figures were kept: no fidelity table in "all".
  for (TrialRecord& r : trials) r.result.erase("reconstruction");
  for (const Table& any : make_tables(trials, "all", {})) EXPECT_NE(any.name, "fidelity");
}

// Energy against fidelity: the front over (energy, worst nrmse, size), and the cheapest within a bound.
TEST(ReportChecks, FidelityFrontierMarksTheFrontAndTheCheapestWithinTheBound) {
  std::vector<TrialRecord> trials;
  // The cycle's energy (training + the fixtures' 5 J compress and 2.5 J decompress) and worst nrmse: fp32
  // 1007.5 J, 0.01; amp_bf16 607.5 J, 0.03; fp64 2007.5 J, 0.02, which fp32 beats in both.
  const auto add = [&](const std::string& precision, double train_j, double nrmse) {
    for (int64_t r = 0; r < 2; ++r) {
      TrialRecord t = fixture_trial(precision + std::to_string(r), precision, 512, r, 10, train_j);
      t.max_power_w = 100;
      t.result["latent_shape"] = {1000, 10};
      t.result["latent_dtype"] = "float32";
      t.result["reconstruction"]["per_feature"] = json::array({{{"name", "pt_"}, {"nrmse", nrmse}}});
      trials.push_back(t);
    }
  };
  add("fp32", 1000, 0.01);
  add("amp_bf16", 600, 0.03);
  add("fp64", 2000, 0.02);
  TableOptions o;
  o.etas = {1.0};
  o.max_nrmse = 0.02;
  const Table f = make_tables_with(trials, "fidelity", o).at(1);
  ASSERT_EQ(f.rows.size(), 3u);
  const auto row_of = [&](const std::string& p) {
    for (std::size_t i = 0; i < f.rows.size(); ++i)
      if (cell(f, i, "precision") == p) return i;
    ADD_FAILURE() << "no row " << p;
    return std::size_t{0};
  };
  EXPECT_EQ(cell(f, row_of("fp32"), "pareto"), "yes");
  EXPECT_EQ(cell(f, row_of("amp_bf16"), "pareto"), "yes");  // less energy, more error
  EXPECT_EQ(cell(f, row_of("fp64"), "pareto"), "no");       // fp32 has less of both
  EXPECT_DOUBLE_EQ(cell(f, row_of("fp32"), "latent_mb").get<double>(), 0.04);
  EXPECT_EQ(cell(f, row_of("amp_bf16"), "meets_nrmse"), "no");
  EXPECT_EQ(cell(f, row_of("fp64"), "meets_nrmse"), "yes");
  EXPECT_EQ(cell(f, row_of("fp32"), "cheapest_at_eta"), "1");  // at eta 1 the cost is the energy
  EXPECT_DOUBLE_EQ(cell(f, row_of("fp32"), "cost_j_eta_1").get<double>(), 1007.5);
  EXPECT_EQ(cell(f, row_of("amp_bf16"), "cost_j_eta_1"), nullptr);
  EXPECT_EQ(cell(f, row_of("fp64"), "cheapest_at_eta"), "-");
}

}  // namespace
}  // namespace balerbench
