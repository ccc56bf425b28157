// test_trial_groups.cpp: the model and the compression ratio as axes of the report tables
// (report/trial_groups.h): trials grouped by them, their columns shown only when they vary (with the
// latent size and parameters beside them) and named in a note when they do not, the precision table's
// ratio to FP32 taken within one (model, ratio), one spec variant across them, and the trials table's
// columns. From fixture trials; no LibTorch headers.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "harness/report/tables.h"
#include "harness/report/trial_groups.h"
#include "harness/report/trial_identity.h"
#include "tests/unit/report/table_cell.h"
#include "tests/unit/trial_fixtures.h"

namespace balerbench {
namespace {

using nlohmann::json;
using report::Group;

bool has_column(const Table& t, const std::string& column) {
  return std::find(t.columns.begin(), t.columns.end(), column) != t.columns.end();
}

bool has_note(const Table& t, const std::string& fragment) {
  return std::any_of(t.notes.begin(), t.notes.end(),
                     [&](const std::string& n) { return n.find(fragment) != std::string::npos; });
}

// A ratio scan: AE at 1.6 (latent 15) and 4 (latent 6), fp32 and amp_fp16, two repeats each. At 1.6,
// fp32 takes 10 and 12 s, amp 8 s; at 4, fp32 takes 5 and 5 s, amp 4 s: each amp row is 8/11 or 4/5 of
// its own ratio's FP32, and 8/5 or 4/11 of the other's.
std::vector<TrialRecord> ratio_scan() {
  std::vector<TrialRecord> out;
  int id = 0;
  for (const auto& [ratio, latent, fp32_a, fp32_b, amp] :
       {std::tuple<double, int64_t, double, double, double>{1.6, 15, 10, 12, 8}, {4, 6, 5, 5, 4}}) {
    for (const auto& [precision, time_s, repeat] :
         {std::tuple<const char*, double, int64_t>{"fp32", fp32_a, 0}, {"fp32", fp32_b, 1}, {"amp_fp16", amp, 0},
          {"amp_fp16", amp, 1}}) {
      TrialRecord t = fixture_trial("k" + std::to_string(++id), precision, 512, repeat, time_s, time_s * 100);
      t.id = id;
      out.push_back(with_model(t, "AE", ratio, latent, 1000 + latent));
    }
  }
  return out;
}

TEST(ReportModelAxes, TrialsAreGroupedByModelAndRatio) {
  const auto trials = ratio_scan();
  const std::vector<Group> groups = report::group_trials(trials);
  ASSERT_EQ(groups.size(), 4u);
  EXPECT_EQ(groups[0].model, "AE");
  EXPECT_EQ(groups[0].compression_ratio, 1.6);
  EXPECT_EQ(groups[0].latent(), 15);
  EXPECT_EQ(groups[0].parameters(), 1015);
  EXPECT_EQ(groups[2].compression_ratio, 4.0);
  EXPECT_EQ(groups[0].variant, groups[2].variant);  // one experiment: the ratio is an axis, not a variant
  EXPECT_FALSE(report::same_configuration(groups[0], groups[2]));
  EXPECT_EQ(groups[2].label(), "AE at ratio 4, bs 512, fp32, libtorch, PL as found, 10 epochs");
  const report::Axes a = report::varying(groups);
  EXPECT_TRUE(a.ratio);
  EXPECT_FALSE(a.model);
  // A change of anything else is a variant still.
  TrialRecord other = trials[0];
  other.spec["run_config"]["lr"] = 0.01;
  EXPECT_NE(spec_variant_of(other), spec_variant_of(trials[0]));
}

TEST(ReportModelAxes, ThePrecisionTablesRatiosStayWithinOneCompressionRatio) {
  const Table t = make_tables(ratio_scan(), "precision", {})[0];
  ASSERT_EQ(t.rows.size(), 4u);  // two rows per precision, one per ratio
  EXPECT_TRUE(has_column(t, "compression_ratio"));
  EXPECT_TRUE(has_column(t, "latent"));
  EXPECT_TRUE(has_column(t, "parameters"));
  EXPECT_FALSE(has_column(t, "model"));  // one model: in the note
  EXPECT_EQ(cell(t, 0, "compression_ratio"), 1.6);
  EXPECT_EQ(cell(t, 0, "precision"), "fp32");
  EXPECT_EQ(cell(t, 1, "precision"), "amp_fp16");
  EXPECT_EQ(cell(t, 2, "compression_ratio"), 4.0);
  EXPECT_EQ(cell(t, 2, "latent"), 6);
  EXPECT_EQ(cell(t, 2, "parameters"), 1006);
  EXPECT_EQ(cell(t, 0, "time_verdict"), "baseline");
  EXPECT_EQ(cell(t, 2, "time_verdict"), "baseline");  // each ratio has its own FP32 row
  EXPECT_DOUBLE_EQ(cell(t, 1, "time_vs_fp32").get<double>(), 8.0 / 11.0);
  EXPECT_DOUBLE_EQ(cell(t, 3, "time_vs_fp32").get<double>(), 4.0 / 5.0);
  EXPECT_TRUE(has_note(t, "All rows: model AE, batch size 512")) << t.notes[0];
  EXPECT_FALSE(has_note(t, "compression ratio 1.6"));
  EXPECT_TRUE(has_column(make_tables(ratio_scan(), "convergence", {})[0], "compression_ratio"));
  // The terminal's view keeps them.
  for (const char* c : {"model", "compression_ratio", "latent", "parameters"})
    EXPECT_NE(std::find(t.decision_columns.begin(), t.decision_columns.end(), c), t.decision_columns.end()) << c;
}

TEST(ReportModelAxes, ModelsAreColumnsInTheRegistrysOrder) {
  std::vector<TrialRecord> trials;
  for (const auto& t : fixture_trials()) {
    trials.push_back(with_model(t, "AE_Dropout_BN", 1.6, 15, 2000));
    trials.back().key += "-bn";
    trials.push_back(with_model(t, "AE", 1.6, 15, 1000));
  }
  const Table t = make_tables(trials, "precision", {})[0];
  ASSERT_EQ(t.rows.size(), 6u);
  EXPECT_TRUE(has_column(t, "model"));
  EXPECT_FALSE(has_column(t, "compression_ratio"));
  EXPECT_EQ(cell(t, 0, "model"), "AE");  // the registry's order, not the trials'
  EXPECT_EQ(cell(t, 3, "model"), "AE_Dropout_BN");
  EXPECT_EQ(cell(t, 3, "parameters"), 2000);
  EXPECT_EQ(cell(t, 3, "time_verdict"), "baseline");
  EXPECT_TRUE(has_note(t, "All rows: compression ratio 1.6, batch size 512"));
  const Table cost = make_tables(trials, "cost", {})[0];
  EXPECT_NE(cell(cost, 0, "best_configuration").get<std::string>().find(" at ratio 1.6, bs 512"), std::string::npos);
}

TEST(ReportModelAxes, OneModelAndRatioAreNamedInTheNoteWithTheirSize) {
  std::vector<TrialRecord> trials;
  for (const auto& t : fixture_trials()) trials.push_back(with_model(t, "AE", 1.6, 15, 5000));
  const Table t = make_tables(trials, "precision", {})[0];
  for (const char* c : {"model", "compression_ratio", "latent", "parameters"}) EXPECT_FALSE(has_column(t, c)) << c;
  EXPECT_TRUE(has_note(t, "All rows: model AE, compression ratio 1.6 (latent 15, 5000 parameters), batch size 512"));
  EXPECT_EQ(make_tables(trials, "cost", {})[0].rows[0][1], "bs 512, amp_fp16, libtorch, PL as found, 10 epochs");
  // Trials stored without a run config (older fixtures) name the model from their result.
  const Table old = make_tables(fixture_trials(), "precision", {})[0];
  EXPECT_TRUE(has_note(old, "All rows: model AE (latent 15), batch size 512"));
}

TEST(ReportModelAxes, TheTrialsTableListsEachTrialsRatioWhenTheyDiffer) {
  const Table t = make_tables(ratio_scan(), "trials", {})[0];
  EXPECT_FALSE(has_column(t, "model"));
  ASSERT_TRUE(has_column(t, "compression_ratio"));
  EXPECT_EQ(t.columns[3], "compression_ratio");  // after the repeat
  EXPECT_EQ(cell(t, 0, "compression_ratio"), 1.6);
  EXPECT_EQ(cell(t, 7, "compression_ratio"), 4.0);
  EXPECT_EQ(cell(t, 7, "batch_size"), 512);
  EXPECT_EQ(t.rows[7].size(), t.columns.size());
  EXPECT_FALSE(has_column(make_tables(fixture_trials(), "trials", {})[0], "compression_ratio"));
}

}  // namespace
}  // namespace balerbench
