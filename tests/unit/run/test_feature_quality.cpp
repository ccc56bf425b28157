// Reconstruction quality per variable (harness/run/feature_quality.h): Baler's residual and response
// per feature against hand-computed figures, undefined responses counted, the units of Baler's CMS
// columns, and a frame pooled into one variable.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <cmath>
#include <vector>

#include "harness/run/feature_quality.h"

namespace balerbench {
namespace {

TEST(FeatureQuality, ResidualResponseAndPsnrPerFeature) {
  // Two features over four rows; the second has a zero before, whose response is undefined.
  const at::Tensor before = torch::tensor({{1.0, 0.0}, {2.0, 4.0}, {3.0, 2.0}, {4.0, 8.0}}, torch::kDouble);
  const at::Tensor after = torch::tensor({{1.5, 1.0}, {2.0, 3.0}, {2.5, 2.0}, {4.0, 10.0}}, torch::kDouble);
  const auto q = feature_quality(before, after, {"pt_", "mystery"}, false);
  ASSERT_EQ(q.size(), 2u);
  const auto& pt = q[0];
  EXPECT_EQ(pt["name"], "pt_");
  EXPECT_EQ(pt["unit"], "GeV");
  EXPECT_EQ(pt["values"], 4);
  EXPECT_DOUBLE_EQ(pt["residual"]["mean"].get<double>(), 0.0);         // (0.5 + 0 - 0.5 + 0) / 4
  EXPECT_DOUBLE_EQ(pt["residual"]["rms"].get<double>(), std::sqrt(0.125));
  EXPECT_DOUBLE_EQ(pt["residual"]["min"].get<double>(), -0.5);
  EXPECT_DOUBLE_EQ(pt["residual"]["max"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(pt["max_abs_error"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(pt["nrmse"].get<double>(), std::sqrt(0.125) / 3.0);  // range 4 - 1
  EXPECT_DOUBLE_EQ(pt["psnr_db"].get<double>(), 20 * std::log10(3.0 / std::sqrt(0.125)));
  // Response in %: 50, 0, -16.67, 0.
  EXPECT_NEAR(pt["response_pct"]["mean"].get<double>(), (50.0 - 50.0 / 3) / 4, 1e-12);
  EXPECT_EQ(pt["response_undefined"], 0);
  const auto& m = q[1];
  EXPECT_TRUE(m["unit"].is_null());
  EXPECT_EQ(m["response_undefined"], 1);
  // Over the three defined values: -25, 0, 25 %.
  EXPECT_NEAR(m["response_pct"]["mean"].get<double>(), 0.0, 1e-12);
  EXPECT_NEAR(m["response_pct"]["rms"].get<double>(), std::sqrt(2 * 625.0 / 3), 1e-12);
}

TEST(FeatureQuality, DistributionsAsBalersBoxPlotAndHistogramsDrawThem) {
  // Residuals -3, -1, 0, 1, 2, 10 (the last an outlier of the box); `before` 10 everywhere, so the
  // responses are the residuals times 10 in %: -30 (below Baler's range), -10, 0, 10, 20, 100 (above).
  const at::Tensor before = torch::full({6, 1}, 10.0, torch::kDouble);
  const at::Tensor after = before + torch::tensor({-3.0, -1.0, 0.0, 1.0, 2.0, 10.0}, torch::kDouble).view({6, 1});
  const auto q = feature_quality(before, after, {"pt_"}, false)[0];
  // NumPy's percentiles (linear): ranks 1.25, 2.5 and 3.75 of the sorted residuals.
  const auto& box = q["residual_box"];
  EXPECT_DOUBLE_EQ(box["q1"].get<double>(), -0.75);
  EXPECT_DOUBLE_EQ(box["median"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(box["q3"].get<double>(), 1.75);
  // Whiskers: the extreme values within 1.5 x 2.5 of the box, [-4.5, 5.5]: -3 and 2 (10 is left out).
  EXPECT_DOUBLE_EQ(box["whisker_low"].get<double>(), -3.0);
  EXPECT_DOUBLE_EQ(box["whisker_high"].get<double>(), 2.0);
  // The residual's 40 bins over +-10 (0.5 wide): -3 in bin 14, -1 in 18, 0 in 20, 1 in 22, 2 in 24, 10 in the last.
  const auto& rh = q["residual_histogram"];
  EXPECT_DOUBLE_EQ(rh["low"].get<double>(), -10.0);
  EXPECT_DOUBLE_EQ(rh["high"].get<double>(), 10.0);
  const auto counts = rh["counts"].get<std::vector<int64_t>>();
  ASSERT_EQ(counts.size(), 40u);
  for (std::size_t i = 0; i < counts.size(); ++i)
    EXPECT_EQ(counts[i], (i == 14 || i == 18 || i == 20 || i == 22 || i == 24 || i == 39) ? 1 : 0) << "bin " << i;
  EXPECT_EQ(rh["below"], 0);
  EXPECT_EQ(rh["above"], 0);
  // The response's 80 bins over Baler's [-20 %, 20 %]: -10 in bin 20, 0 in 40, 10 in 60, 20 in the last;
  // -30 below the range and 100 above it, counted apart.
  const auto& ph = q["response_histogram"];
  const auto pc = ph["counts"].get<std::vector<int64_t>>();
  ASSERT_EQ(pc.size(), 80u);
  for (std::size_t i = 0; i < pc.size(); ++i)
    EXPECT_EQ(pc[i], (i == 20 || i == 40 || i == 60 || i == 79) ? 1 : 0) << "bin " << i;
  EXPECT_EQ(ph["below"], 1);
  EXPECT_EQ(ph["above"], 1);
}

TEST(FeatureQuality, AResidualWithoutSpreadOrAResponseHasNoHistogram) {
  const at::Tensor zeros = torch::zeros({3, 1}, torch::kDouble);
  const auto q = feature_quality(zeros, zeros, {}, false)[0];
  EXPECT_TRUE(q["residual_histogram"].is_null());  // every residual 0
  EXPECT_TRUE(q["response_histogram"].is_null());  // every before 0
  EXPECT_DOUBLE_EQ(q["residual_box"]["median"].get<double>(), 0.0);
}

TEST(FeatureQuality, EveryBeforeZeroLeavesNoResponse) {
  const at::Tensor zeros = torch::zeros({3, 1}, torch::kDouble);
  const auto q = feature_quality(zeros, zeros + 1, {}, false);
  EXPECT_EQ(q[0]["name"], "0");
  EXPECT_TRUE(q[0]["response_pct"].is_null());
  EXPECT_EQ(q[0]["response_undefined"], 3);
  EXPECT_TRUE(q[0]["psnr_db"].is_null());  // no range to compare with
}

TEST(FeatureQuality, AFrameIsOneVariable) {
  const at::Tensor before = torch::arange(12, torch::kDouble).view({3, 4});
  const auto q = feature_quality(before, before + 0.5, {}, true);
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(q[0]["name"], "all pixels");
  EXPECT_EQ(q[0]["values"], 12);
  EXPECT_DOUBLE_EQ(q[0]["residual"]["rms"].get<double>(), 0.5);
}

TEST(FeatureQuality, UnitsFromTheNameOrBalersCmsColumns) {
  EXPECT_EQ(*feature_unit("energy [MeV]"), "MeV");
  EXPECT_EQ(*feature_unit("recoPFJets_ak5PFJets__RECO.obj.m_specific.mPhotonEnergy"), "GeV");
  EXPECT_EQ(*feature_unit("recoPFJets_ak5PFJets__RECO.obj.phi_"), "rad");
  EXPECT_EQ(*feature_unit("eta_"), "");  // known, and without a unit
  EXPECT_EQ(*feature_unit("mPhotonMultiplicity"), "count");
  EXPECT_FALSE(feature_unit("temperature").has_value());
  EXPECT_EQ(short_feature_name("recoPFJets_ak5PFJets__RECO.obj.pt_"), "pt_");
}

}  // namespace
}  // namespace balerbench
