// test_projection_table.cpp: --table projection: a whole dataset's time, energy, CO2 and compressed
// size from the stored trials, training amortised, with intervals over the repeats widened by the
// meters' ±; the classical codecs beside. From fixture trials; no LibTorch headers.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "harness/report/tables.h"
#include "tests/unit/report/table_cell.h"
#include "tests/unit/trial_fixtures.h"

namespace balerbench {
namespace {

using nlohmann::json;

// A repeat on 1 MB of data (10,000 rows of 100 bytes), latent 10,000 x 2 float32 (80 kB), a model of
// 1000 parameters; compress 0.5 s and 5 J, decompress 0.25 s and 2.5 J, training 10 s and `train_j`.
TrialRecord on_one_mb(int64_t repeat, double train_j, std::optional<double> phase_u_j) {
  TrialRecord t = fixture_trial("p" + std::to_string(repeat), "fp32", 512, repeat, 10, train_j);
  t.result["dataset"] = {{"bytes", 1e6}, {"shape", {10000, 25}}};
  t.result["latent_shape"] = {10000, 2};
  t.result["latent_dtype"] = "float32";
  t.result["model"] = {{"parameters", 1000}};
  json phases = json::array();
  for (const char* p : {"train", "compress", "decompress"})
    phases.push_back({{"phase", p}, {"total_uncertainty_j", phase_u_j ? json(*phase_u_j) : json(nullptr)}});
  t.result["energy"]["phases"] = phases;
  return t;
}

TEST(ProjectionTable, ScalesEachRepeatToTheDatasetAndAmortisesTheTraining) {
  const std::vector<TrialRecord> trials = {on_one_mb(0, 1000, std::nullopt), on_one_mb(1, 1200, std::nullopt)};
  TableOptions o;
  o.dataset_bytes = 1e12;  // 1 TB: a million times the trials' data
  o.trainings = 3;
  const std::vector<Table> tables = make_tables_with(trials, "projection", o);
  ASSERT_EQ(tables.size(), 1u);  // no codecs measured: no second table
  const Table& t = tables[0];
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(cell(t, 0, "n"), 2);
  EXPECT_NEAR(cell(t, 0, "compress_h").get<double>(), 0.5e6 / 3600, 1e-9);
  EXPECT_NEAR(cell(t, 0, "decompress_h").get<double>(), 0.25e6 / 3600, 1e-9);
  EXPECT_NEAR(cell(t, 0, "train_h").get<double>(), 30.0 / 3600, 1e-12);
  EXPECT_NEAR(cell(t, 0, "compress_kwh").get<double>(), 5e6 / 3.6e6, 1e-9);
  // total: 7.5 MJ for the data, plus 3 trainings of 1000 J and of 1200 J (mean 3300 J).
  const double total_kwh = (7.5e6 + 3300) / 3.6e6;
  EXPECT_NEAR(cell(t, 0, "total_kwh").get<double>(), total_kwh, 1e-9);
  // Two repeats 600 J apart: t(1 dof) 12.706 x sd 424.26 / sqrt(2) = 3811.9 J either side.
  const double half_kwh = 12.706204736 * 600 / std::sqrt(2.0) / std::sqrt(2.0) / 3.6e6;
  EXPECT_NEAR(cell(t, 0, "total_kwh_ci95_low").get<double>(), total_kwh - half_kwh, 1e-7);
  EXPECT_NEAR(cell(t, 0, "total_kwh_ci95_high").get<double>(), total_kwh + half_kwh, 1e-7);
  // The fixtures' 100 g/kWh.
  EXPECT_NEAR(cell(t, 0, "co2_kg").get<double>(), total_kwh * 0.1, 1e-9);
  EXPECT_NEAR(cell(t, 0, "compressed_tb").get<double>(), 0.08, 1e-12);  // ratio 12.5
  EXPECT_NEAR(cell(t, 0, "decoder_mb").get<double>(), 0.012, 1e-12);    // 3 models of 4 kB
  EXPECT_NE(t.title.find("training 3 times"), std::string::npos) << t.title;
}

TEST(ProjectionTable, TheMetersPlusMinusWidensTheIntervalAndEventsUseTheDatasBytesPerRow) {
  const std::vector<TrialRecord> trials = {on_one_mb(0, 1000, 0.5), on_one_mb(1, 1000, 0.5)};
  TableOptions o;
  o.dataset_events = 1e8;  // 100 bytes per event: 1e10 bytes, 10,000 times the trials' data
  const Table t = make_tables_with(trials, "projection", o).front();
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_NE(t.title.find("1e+08 events of 100 bytes"), std::string::npos) << t.title;
  const double total_j = 7.5e4 + 1000;
  EXPECT_NEAR(cell(t, 0, "total_kwh").get<double>(), total_j / 3.6e6, 1e-12);
  // No spread between the repeats: the interval is the meters' alone, 0.5 J per phase scaled (compress and
  // decompress x 10,000, the one training x 1) and added in quadrature.
  const double u_j = std::sqrt(2 * std::pow(0.5 * 1e4, 2) + 0.25);
  EXPECT_NEAR(cell(t, 0, "total_kwh_ci95_high").get<double>(), (total_j + u_j) / 3.6e6, 1e-12);
  EXPECT_NEAR(cell(t, 0, "total_kwh_ci95_low").get<double>(), (total_j - u_j) / 3.6e6, 1e-12);
  // Without a dataset, --table all makes no projection (the model's layers, which T1 reads, left out).
  std::vector<TrialRecord> plain = trials;
  for (TrialRecord& r : plain) r.result.erase("model");
  for (const Table& any : make_tables_with(plain, "all", TableOptions{})) EXPECT_NE(any.name, "projection");
}

TEST(ProjectionTable, TheClassicalCodecsTheTrialsMeasuredAreProjectedBeside) {
  std::vector<TrialRecord> trials = {on_one_mb(0, 1000, std::nullopt), on_one_mb(1, 1000, std::nullopt)};
  for (std::size_t i = 0; i < trials.size(); ++i)
    trials[i].result["codecs"] = {
        {"codecs", {{{"codec", "baler"}, {"setting", "latent"}, {"ratio", 12.5}, {"j_per_mb", 7.5}},
                    {{"codec", "zstd"}, {"setting", "level 3"}, {"ratio", 1.1 + 0.2 * i}, {"j_per_mb", 2.0 + i},
                     {"s_per_mb", 0.01}}}}};
  TableOptions o;
  o.dataset_bytes = 1e12;
  const std::vector<Table> tables = make_tables_with(trials, "projection", o);
  ASSERT_EQ(tables.size(), 2u);
  const Table& c = tables[1];
  EXPECT_EQ(c.name, "projection_codecs");
  ASSERT_EQ(c.rows.size(), 1u);  // Baler's own row is the first table's
  EXPECT_EQ(cell(c, 0, "codec"), "zstd level 3");
  EXPECT_NEAR(cell(c, 0, "ratio").get<double>(), 1.2, 1e-12);  // medians over the repeats
  EXPECT_NEAR(cell(c, 0, "compressed_tb").get<double>(), 1 / 1.2, 1e-12);
  EXPECT_NEAR(cell(c, 0, "compress_and_decompress_kwh").get<double>(), 2.5e6 / 3.6e6, 1e-9);
  EXPECT_NEAR(cell(c, 0, "compress_and_decompress_h").get<double>(), 1e4 / 3600, 1e-9);
}

}  // namespace
}  // namespace balerbench
