// test_report_systems.cpp: the report tables never compare trials of different systems or spec
// variants; the systems and across tables; the ratio intervals and verdicts against hand-computed
// values; warm-up trials left out of the statistics and disturbed trials flagged. Trials are built
// in memory; nothing here reads the clock. No LibTorch headers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "harness/base/statistics.h"
#include "harness/report/tables.h"
#include "harness/report/trial_identity.h"
#include "harness/store/store.h"
#include "tests/unit/report/table_cell.h"

namespace balerbench {
namespace {

using nlohmann::json;

// A finished trial of `precision` at batch 512, 10 epochs, on the system `fingerprint` (empty: a
// trial recorded before system fingerprints, on "Test CPU").
TrialRecord trial(int64_t id, const std::string& precision, double time_s, double energy_j,
                  const std::string& fingerprint = "aaaaaaaaaaaa", int64_t repeat = 0) {
  TrialRecord t;
  t.id = id;
  t.key = "k" + std::to_string(id);
  t.experiment = "e";
  t.batch_size = 512;
  t.epochs = 10;
  t.precision = precision;
  t.repeat = repeat;
  t.train_s = time_s;
  t.train_energy_j = energy_j;
  t.max_power_w = 100;
  t.energy_kind = "measured";
  t.hardware = "CPU: Test CPU (2 CPUs)";
  t.spec = {{"experiment", "e"},
            {"dataset", {{"generator", "cms"}, {"rows", 1000}}},
            {"run_config", {{"batch_size", 512}, {"epochs", 10}, {"precision", precision}, {"engine", "libtorch"},
                            {"seed", 42 + repeat}, {"lr", 0.001}}},
            {"power_limit_w", nullptr},
            {"repeat", repeat},
            {"target", nullptr}};
  t.result = json::object();
  t.provenance = {{"host", "h1"}, {"cpu_model", "Test CPU"}, {"logical_cpus", 2}};
  if (!fingerprint.empty()) {
    t.provenance["system_fingerprint"] = fingerprint;
    t.provenance["system_label"] = "System " + fingerprint.substr(0, 1);
  }
  return t;
}

std::vector<TrialRecord> repeats(int64_t first_id, const std::string& precision, const std::vector<double>& times_s,
                                 const std::string& fingerprint = "aaaaaaaaaaaa") {
  std::vector<TrialRecord> out;
  for (std::size_t i = 0; i < times_s.size(); ++i)
    out.push_back(trial(first_id + static_cast<int64_t>(i), precision, times_s[i], 100 * times_s[i], fingerprint,
                        static_cast<int64_t>(i)));
  return out;
}

void append(std::vector<TrialRecord>& to, const std::vector<TrialRecord>& more) {
  to.insert(to.end(), more.begin(), more.end());
}

std::size_t row_of(const Table& t, const std::string& column, const json& value) {
  for (std::size_t r = 0; r < t.rows.size(); ++r)
    if (cell(t, r, column) == value) return r;
  ADD_FAILURE() << "no row with " << column << " = " << value << " in " << t.name;
  return 0;
}

bool has_note(const Table& t, const std::string& part) {
  return std::any_of(t.notes.begin(), t.notes.end(),
                     [&](const std::string& n) { return n.find(part) != std::string::npos; });
}

// The sample variance of the logs of `v` over n: one side's share of the log ratio's variance.
double log_variance_of_mean(const std::vector<double>& v) {
  double mean = 0;
  for (double x : v) mean += std::log(x) / static_cast<double>(v.size());
  double ss = 0;
  for (double x : v) ss += (std::log(x) - mean) * (std::log(x) - mean);
  return ss / static_cast<double>(v.size() - 1) / static_cast<double>(v.size());
}

TEST(ReportSystems, TwoSystemsNeverShareARowAndGiveTwoTables) {
  std::vector<TrialRecord> trials;
  append(trials, repeats(1, "fp32", {10, 10}, "aaaaaaaaaaaa"));
  append(trials, repeats(3, "amp_bf16", {5, 5}, "aaaaaaaaaaaa"));
  append(trials, repeats(5, "fp32", {4, 4}, "bbbbbbbbbbbb"));
  append(trials, repeats(7, "amp_bf16", {8, 8}, "bbbbbbbbbbbb"));
  const auto tables = make_tables(trials, "precision", {});
  ASSERT_EQ(tables.size(), 2u);
  EXPECT_EQ(tables[0].name, "precision_aaaaaaaaaaaa");
  EXPECT_EQ(tables[1].name, "precision_bbbbbbbbbbbb");
  EXPECT_NE(tables[0].title.find("System a (system aaaaaaaaaaaa)"), std::string::npos) << tables[0].title;
  EXPECT_NE(tables[1].title.find("System b (system bbbbbbbbbbbb)"), std::string::npos) << tables[1].title;
  for (const Table& t : tables) {
    ASSERT_EQ(t.rows.size(), 2u);
    EXPECT_EQ(cell(t, 0, "n"), 2);  // never 4: the systems' trials are not pooled
    EXPECT_TRUE(has_note(t, "ran on 2 systems: one table per system"));
  }
  EXPECT_DOUBLE_EQ(cell(tables[0], row_of(tables[0], "precision", "amp_bf16"), "time_vs_fp32").get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(cell(tables[1], row_of(tables[1], "precision", "amp_bf16"), "time_vs_fp32").get<double>(), 2.0);
  // Every comparing table is split; the listings are not.
  const auto cost = make_tables(trials, "cost", {0.5});
  ASSERT_EQ(cost.size(), 4u);  // best and Pareto per system
  EXPECT_NE(cell(cost[0], 0, "best_configuration").get<std::string>().find("amp_bf16"), std::string::npos);
  EXPECT_NE(cell(cost[2], 0, "best_configuration").get<std::string>().find("fp32"), std::string::npos);
  EXPECT_EQ(make_tables(trials, "trials", {}).size(), 1u);
  std::set<std::string> names;
  for (const auto& t : make_tables(trials, "all", {0.5})) EXPECT_TRUE(names.insert(t.name).second) << t.name;
  EXPECT_TRUE(names.count("across"));
  EXPECT_TRUE(names.count("systems"));
}

TEST(ReportSystems, OneSystemLooksAsBeforeWithTheSystemNamed) {
  std::vector<TrialRecord> trials = repeats(1, "fp32", {10, 11});
  const auto tables = make_tables(trials, "precision", {});
  ASSERT_EQ(tables.size(), 1u);
  EXPECT_EQ(tables[0].name, "precision");
  EXPECT_NE(tables[0].title.find("on System a (system aaaaaaaaaaaa)"), std::string::npos) << tables[0].title;
  for (const auto& t : make_tables(trials, "all", {})) EXPECT_NE(t.name, "across");
}

TEST(ReportSystems, LegacyTrialsGroupByHardwareLabel) {
  std::vector<TrialRecord> trials = repeats(1, "fp32", {10, 11}, "");
  append(trials, repeats(3, "fp32", {20, 21}, ""));
  for (std::size_t i = 2; i < 4; ++i) {
    trials[i].provenance["cpu_model"] = "Other CPU";
    trials[i].hardware = "CPU: Other CPU (2 CPUs)";
  }
  const SystemId a = system_of(trials[0]), b = system_of(trials[2]);
  EXPECT_TRUE(a.legacy);
  EXPECT_EQ(a.fingerprint, "legacy-" + short_hash("CPU: Test CPU (2 CPUs)", 12));
  EXPECT_EQ(a.fingerprint.size(), 19u);
  EXPECT_EQ(a.label, "CPU: Test CPU (2 CPUs) (recorded before system fingerprints)");
  EXPECT_EQ(system_of(trials[1]).fingerprint, a.fingerprint);
  EXPECT_NE(b.fingerprint, a.fingerprint);
  const auto tables = make_tables(trials, "precision", {});
  ASSERT_EQ(tables.size(), 2u);
  EXPECT_EQ(tables[0].name, "precision_" + a.fingerprint);
  EXPECT_NE(tables[0].title.find("on CPU: Test CPU (2 CPUs) (system " + a.fingerprint + ")"), std::string::npos)
      << tables[0].title;
  EXPECT_DOUBLE_EQ(cell(tables[0], 0, "time_s").get<double>(), 10.5);
  EXPECT_DOUBLE_EQ(cell(tables[1], 0, "time_s").get<double>(), 20.5);
}

TEST(ReportSystems, SystemsTableDescribesEachSystem) {
  std::vector<TrialRecord> trials = repeats(1, "fp32", {10, 11});
  for (auto& t : trials) {
    t.provenance["system"] = {
        {"cpu", {{"model", "AMD EPYC"}, {"logical_cpus", 2}}},
        {"blas", {{"library", "OpenBLAS"}, {"version", "0.3.21"}, {"core", "Cooperlake"}, {"threads", 2}}},
        {"torch", {{"version", "2.1.2"}}},
        {"gpus", json::array()},
        {"env", {{"OPENBLAS_CORETYPE", "Cooperlake"}}},
        {"host", "h1"}};
    t.provenance["threads"] = 2;
  }
  trials[0].started_unix_s = 1700000000;
  trials[0].finished_unix_s = 1700000010;
  trials[1].started_unix_s = 1700000020;
  trials[1].finished_unix_s = 1700000030;
  trials[1].provenance["host"] = "h2";  // a second host of the same system (the legacy host key)
  trials[1].provenance["system"].erase("host");
  append(trials, repeats(3, "fp32", {5}, ""));  // a legacy system beside it
  trials[2].provenance["libtorch"] = "2.0.1";
  const Table t = make_tables(trials, "systems", {})[0];
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(cell(t, 0, "system"), "aaaaaaaaaaaa");
  EXPECT_EQ(cell(t, 0, "label"), "System a");
  EXPECT_EQ(cell(t, 0, "cpu"), "AMD EPYC (2 CPUs)");
  EXPECT_EQ(cell(t, 0, "blas"), "OpenBLAS 0.3.21, core Cooperlake");
  EXPECT_EQ(cell(t, 0, "threads"), "2");
  EXPECT_EQ(cell(t, 0, "libtorch"), "2.1.2");
  EXPECT_EQ(cell(t, 0, "gpus"), "none");
  EXPECT_EQ(cell(t, 0, "env"), "OPENBLAS_CORETYPE=Cooperlake");
  EXPECT_EQ(cell(t, 0, "hosts"), "h1, h2");
  EXPECT_EQ(cell(t, 0, "trials"), 2);
  EXPECT_EQ(cell(t, 0, "first_trial_utc"), "2023-11-14T22:13:20Z");
  EXPECT_EQ(cell(t, 0, "last_trial_utc"), "2023-11-14T22:13:50Z");
  EXPECT_EQ(cell(t, 1, "system"), system_of(trials[2]).fingerprint);
  EXPECT_EQ(cell(t, 1, "cpu"), "Test CPU (2 CPUs)");
  EXPECT_EQ(cell(t, 1, "blas"), "-");
  EXPECT_EQ(cell(t, 1, "libtorch"), "2.0.1");
  EXPECT_EQ(cell(t, 1, "gpus"), "-");
  EXPECT_TRUE(cell(t, 1, "first_trial_utc").is_null());
}

TEST(ReportSystems, AcrossTablePutsOneConfigurationSideBySide) {
  std::vector<TrialRecord> trials;
  append(trials, repeats(1, "fp32", {1.0, 1.1, 0.9}, "aaaaaaaaaaaa"));
  append(trials, repeats(4, "fp32", {2.0, 2.2, 1.8}, "bbbbbbbbbbbb"));
  append(trials, repeats(7, "amp_bf16", {3.0}, "bbbbbbbbbbbb"));  // on one system only
  const Table t = make_tables(trials, "across", {})[0];
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(cell(t, 0, "system"), "aaaaaaaaaaaa");
  EXPECT_EQ(cell(t, 0, "time_verdict"), "reference");
  EXPECT_EQ(cell(t, 1, "system"), "bbbbbbbbbbbb");
  EXPECT_EQ(cell(t, 1, "system_label"), "System b");
  EXPECT_EQ(cell(t, 1, "n"), 3);
  EXPECT_NEAR(cell(t, 1, "time_s").get<double>(), 2.0, 1e-12);
  EXPECT_NEAR(cell(t, 1, "time_vs_first").get<double>(), 2.0, 1e-12);
  EXPECT_EQ(cell(t, 1, "time_verdict"), "slower");
  EXPECT_EQ(cell(t, 1, "energy_verdict"), "more energy");
  EXPECT_NEAR(cell(t, 1, "energy_vs_first").get<double>(), 2.0, 1e-12);
  EXPECT_TRUE(has_note(t, "1 configuration(s) ran on one system only"));
  // One system: an empty table that says so, and none under "all".
  const Table one = make_tables(repeats(1, "fp32", {1.0, 1.1}), "across", {})[0];
  EXPECT_TRUE(one.rows.empty());
  EXPECT_TRUE(has_note(one, "One system is present (System a, aaaaaaaaaaaa)"));
}

TEST(ReportSystems, AChangedSpecIsAVariantOfItsOwn) {
  std::vector<TrialRecord> trials = repeats(1, "fp32", {10, 11});  // seeds 42, 43 and repeats 0, 1: one variant
  EXPECT_EQ(spec_variant_of(trials[0]), spec_variant_of(trials[1]));
  EXPECT_EQ(spec_variant_of(trials[0]).size(), 8u);
  TrialRecord amp = trial(3, "amp_bf16", 5, 500);  // another grid point, same file: same variant
  amp.spec["warmup"] = false;
  amp.spec["power_limit_w"] = 150;
  EXPECT_EQ(spec_variant_of(amp), spec_variant_of(trials[0]));
  append(trials, repeats(4, "fp32", {30, 31}));
  for (std::size_t i = 2; i < 4; ++i) trials[i].spec["dataset"]["rows"] = 2000;  // the file was edited
  const std::string edited = spec_variant_of(trials[2]);
  EXPECT_NE(edited, spec_variant_of(trials[0]));
  const auto tables = make_tables(trials, "precision", {});
  ASSERT_EQ(tables.size(), 2u);
  EXPECT_EQ(tables[1].name, "precision_v" + edited);  // one system: no fingerprint in the name
  EXPECT_NE(tables[1].title.find("spec variant " + edited), std::string::npos) << tables[1].title;
  EXPECT_EQ(cell(tables[0], 0, "n"), 2);
  EXPECT_DOUBLE_EQ(cell(tables[1], 0, "time_s").get<double>(), 30.5);
  EXPECT_TRUE(has_note(tables[1], "this variant has dataset.rows = 2000")) << tables[1].notes.back();
  EXPECT_TRUE(has_note(tables[0], "this variant has dataset.rows = 1000"));
}

// Times {1.0, 1.1, 0.9} s against FP32's {2.0, 2.2, 1.8} s... here the other way round: FP32 is
// the fast one, so AMP is "slower", by a clear margin. The interval by hand: the log ratio is
// log 2 for every pair; both sides have the variance of log{1.0, 1.1, 0.9}; Welch's dof = 4.
TEST(ReportSystems, RatioIntervalAndVerdictAgainstHandComputedValues) {
  std::vector<TrialRecord> trials = repeats(1, "fp32", {1.0, 1.1, 0.9});
  append(trials, repeats(4, "amp_bf16", {2.0, 2.2, 1.8}));
  const Table t = make_tables(trials, "precision", {})[0];
  const std::size_t amp = row_of(t, "precision", "amp_bf16"), fp32 = row_of(t, "precision", "fp32");
  const double se = std::sqrt(2 * log_variance_of_mean({1.0, 1.1, 0.9}));
  const double half_width = 2.776 * se;  // t(0.975, 4)
  EXPECT_NEAR(cell(t, amp, "time_vs_fp32_ci95_low").get<double>(), std::exp(std::log(2.0) - half_width), 1e-9);
  EXPECT_NEAR(cell(t, amp, "time_vs_fp32_ci95_high").get<double>(), std::exp(std::log(2.0) + half_width), 1e-9);
  EXPECT_NEAR(cell(t, amp, "time_vs_fp32_ci95_low").get<double>(), 1.5930, 1e-4);
  EXPECT_NEAR(cell(t, amp, "time_vs_fp32_ci95_high").get<double>(), 2.5110, 1e-4);
  EXPECT_EQ(cell(t, amp, "time_verdict"), "slower");
  EXPECT_EQ(cell(t, amp, "energy_verdict"), "more energy");
  EXPECT_EQ(cell(t, fp32, "time_verdict"), "baseline");
  EXPECT_TRUE(cell(t, fp32, "time_vs_fp32_ci95_low").is_null());

  // Overlapping: {1.1, 1.3, 0.95} against {1.0, 1.2, 0.8}. Welch's dof = 3.76, rounded down to 3;
  // the needed repeats: ceil(3 x (half-width / log ratio)^2 x 1.2) = 60.
  std::vector<TrialRecord> close = repeats(1, "fp32", {1.0, 1.2, 0.8});
  append(close, repeats(4, "amp_bf16", {1.1, 1.3, 0.95}));
  const RatioInterval r = log_ratio_interval({1.1, 1.3, 0.95}, {1.0, 1.2, 0.8});
  const double va = log_variance_of_mean({1.1, 1.3, 0.95}), vb = log_variance_of_mean({1.0, 1.2, 0.8});
  EXPECT_NEAR(r.dof, (va + vb) * (va + vb) / (va * va / 2 + vb * vb / 2), 1e-12);
  EXPECT_NEAR(r.dof, 3.7609, 1e-4);
  EXPECT_NEAR(r.half_width_log, 3.182 * std::sqrt(va + vb), 1e-12);
  EXPECT_FALSE(r.resolved());
  EXPECT_EQ(repeats_to_resolve(r), 60u);
  const Table c = make_tables(close, "precision", {})[0];
  EXPECT_EQ(cell(c, row_of(c, "precision", "amp_bf16"), "time_verdict"),
            "not resolved at n=3; ~60 repeats would resolve it");
  EXPECT_NE(render_tables({c}, "latex").find("\\textasciitilde{}60 repeats"), std::string::npos);
  // Closer still: more than 100 repeats. One repeat: no interval.
  std::vector<TrialRecord> closer = repeats(1, "fp32", {1.0, 1.2, 0.8});
  append(closer, repeats(4, "amp_bf16", {1.05, 1.25, 0.85}));
  const Table d = make_tables(closer, "precision", {})[0];
  EXPECT_EQ(cell(d, row_of(d, "precision", "amp_bf16"), "time_verdict"),
            "not resolved at n=3; > 100 repeats would be needed");
  std::vector<TrialRecord> single = repeats(1, "fp32", {1.0, 1.2, 0.8});
  append(single, repeats(4, "amp_bf16", {2.0}));
  const Table s = make_tables(single, "precision", {})[0];
  EXPECT_EQ(cell(s, row_of(s, "precision", "amp_bf16"), "time_verdict"), "n=1: no interval");
  EXPECT_TRUE(cell(s, row_of(s, "precision", "amp_bf16"), "time_vs_fp32_ci95_low").is_null());
  EXPECT_TRUE(has_note(t, "not resolved at n=N"));
}

// The meters' +- widens the energy interval: repeats that agree to 0.1% cannot resolve a 1%
// difference that each meter reads only to +-2%.
TEST(ReportSystems, EnergyIntervalIsAtLeastTheMetersRelativeUncertainty) {
  std::vector<TrialRecord> trials = repeats(1, "fp32", {1.0, 1.001, 0.999});
  append(trials, repeats(4, "amp_bf16", {1.01, 1.011, 1.009}));
  for (auto& t : trials) t.result["energy_uncertainty"] = {{"train_j", 0.02 * *t.train_energy_j}};
  const Table t = make_tables(trials, "precision", {})[0];
  const std::size_t amp = row_of(t, "precision", "amp_bf16");
  EXPECT_EQ(cell(t, amp, "time_verdict"), "slower");
  EXPECT_EQ(cell(t, amp, "energy_verdict"),
            "not resolved at n=3; within the meters' resolution (more repeats will not resolve it)");
  // About 1.01 x 1.04: the ratio widened by the two meters' 2% each.
  EXPECT_NEAR(cell(t, amp, "energy_vs_fp32_ci95_high").get<double>(), 1.01 * 1.04, 1e-3);
}

TEST(ReportSystems, WarmupTrialsAreListedButInNoStatistic) {
  std::vector<TrialRecord> trials = repeats(1, "fp32", {100, 10, 12});
  trials[0].result["run_design"] = {
      {"order", "interleaved"}, {"seed", 7}, {"position", 1}, {"of", 3}, {"warmup", true}};
  trials[1].spec["warmup"] = false;
  const Table p = make_tables(trials, "precision", {})[0];
  ASSERT_EQ(p.rows.size(), 1u);
  EXPECT_EQ(cell(p, 0, "n"), 2);
  EXPECT_DOUBLE_EQ(cell(p, 0, "time_s").get<double>(), 11);
  EXPECT_TRUE(has_note(p, "1 warm-up trial(s) are left out of every statistic"));
  TrialRecord spec_warmup = trial(9, "fp32", 50, 5000);
  spec_warmup.spec["warmup"] = true;
  EXPECT_TRUE(is_warmup(spec_warmup));
  const Table all = make_tables(trials, "trials", {})[0];
  ASSERT_EQ(all.rows.size(), 3u);
  EXPECT_EQ(cell(all, 0, "warmup"), "yes");
  EXPECT_EQ(cell(all, 1, "warmup"), "no");
  EXPECT_TRUE(has_note(all, "1 warm-up trial(s) here"));
  const Table sys = make_tables(trials, "systems", {})[0];
  EXPECT_EQ(cell(sys, 0, "finished"), 2);
  EXPECT_EQ(cell(sys, 0, "warmups"), 1);
}

TEST(ReportSystems, DisturbedTrialsAreFlagged) {
  std::vector<TrialRecord> trials = repeats(1, "fp32", {10, 11, 12});
  trials[1].result["disturbance"] = {{"window_s", 11.0},       {"other_cpu_s", 8.0},
                                     {"other_cpu_cores", 0.73}, {"steal_s", 0.0},
                                     {"steal_fraction", 0.0},   {"disturbed", true},
                                     {"threshold", "other processes > 0.5 cores or steal > 2%"},
                                     {"reason", "other processes used 0.73 cores"}};
  trials[2].result["disturbance"] = {{"disturbed", false}, {"threshold", "other processes > 0.5 cores or steal > 2%"}};
  const Table all = make_tables(trials, "trials", {})[0];
  EXPECT_EQ(cell(all, 0, "disturbed"), "-");
  EXPECT_EQ(cell(all, 1, "disturbed"), "yes");
  EXPECT_EQ(cell(all, 2, "disturbed"), "no");
  EXPECT_TRUE(has_note(all, "trial 2 disturbed: other processes used 0.73 cores"));
  for (const char* name : {"precision", "phases", "batch_size", "cost", "trials"}) {
    const Table t = make_tables(trials, name, {0.5})[0];
    EXPECT_TRUE(has_note(t, "1 trial here ran on a disturbed machine (id 2)")) << name;
    EXPECT_TRUE(has_note(t, "other processes > 0.5 cores or steal > 2%")) << name;
  }
  EXPECT_FALSE(has_note(make_tables(repeats(1, "fp32", {10}), "precision", {})[0], "disturbed machine"));
}

// The new columns in every format: JSON keeps the interval's numbers as numbers.
TEST(ReportSystems, VerdictColumnsInEveryFormat) {
  std::vector<TrialRecord> trials = repeats(1, "fp32", {1.0, 1.1, 0.9});
  append(trials, repeats(4, "amp_bf16", {2.0, 2.2, 1.8}));
  const auto tables = make_tables(trials, "precision", {});
  const json j = json::parse(render_tables(tables, "json"));
  const json& amp = j["tables"][0]["rows"][1];
  EXPECT_TRUE(amp["time_vs_fp32_ci95_low"].is_number_float());
  EXPECT_TRUE(amp["energy_vs_fp32_ci95_high"].is_number_float());
  EXPECT_EQ(amp["time_verdict"], "slower");
  const std::string csv = render_tables(tables, "csv");
  EXPECT_NE(csv.find("time_vs_fp32,time_vs_fp32_ci95_low,time_vs_fp32_ci95_high,time_verdict"), std::string::npos);
  EXPECT_NE(csv.find(",slower,"), std::string::npos) << csv;
  EXPECT_NE(render_tables(tables, "md").find("| slower |"), std::string::npos);
  const std::string tex = render_tables(tables, "latex");
  EXPECT_NE(tex.find("time\\_verdict"), std::string::npos);
  EXPECT_NE(tex.find("& slower &"), std::string::npos) << tex;
}

}  // namespace
}  // namespace balerbench
