// test_analysis.cpp: base/zeus_cost.h, base/statistics.h and base/pareto.h against hand-computed
// values: Zeus's cost, mean, spread and confidence interval, and the time-energy Pareto frontier.
// No LibTorch headers.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "harness/base/pareto.h"
#include "harness/base/statistics.h"
#include "harness/base/zeus_cost.h"

namespace balerbench {
namespace {

TEST(Analysis, ZeusCostAgainstHandValues) {
  // eta 0.5, 1000 J, 10 s, 300 W: 0.5 * 1000 + 0.5 * 300 * 10 = 2000 J.
  EXPECT_DOUBLE_EQ(zeus_cost(0.5, 1000, 10, 300), 2000);
  EXPECT_DOUBLE_EQ(zeus_cost(0, 1000, 10, 300), 3000);  // time only, in joules at MaxPower
  EXPECT_DOUBLE_EQ(zeus_cost(1, 1000, 10, 300), 1000);  // energy only
  EXPECT_DOUBLE_EQ(zeus_cost(0.25, 400, 2, 250), 0.25 * 400 + 0.75 * 250 * 2);
  EXPECT_THROW(zeus_cost(1.5, 1, 1, 1), std::invalid_argument);
}

TEST(Analysis, SummaryAndConfidenceInterval) {
  const Summary s = summarize({4, 1, 3, 2});
  EXPECT_EQ(s.n, 4u);
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_NEAR(s.stddev, std::sqrt(5.0 / 3.0), 1e-12);
  EXPECT_NEAR(s.ci95_half_width, 3.182 * std::sqrt(5.0 / 3.0) / 2, 1e-9);
  EXPECT_DOUBLE_EQ(s.relative_spread(), 3 / 2.5);
  const Summary one = summarize({7});
  EXPECT_DOUBLE_EQ(one.median, 7);
  EXPECT_DOUBLE_EQ(one.ci95_half_width, 0);
  EXPECT_DOUBLE_EQ(summarize({1, 2, 10}).median, 2);
  EXPECT_DOUBLE_EQ(student_t95(1), 12.706);
  EXPECT_DOUBLE_EQ(student_t95(1000), 1.96);
}

// Median absolute deviation against hand values (and SciPy's median_abs_deviation([1, 2, 3, 4, 100]) = 1).
TEST(Analysis, MedianAbsoluteDeviation) {
  EXPECT_DOUBLE_EQ(median_absolute_deviation({1, 2, 3, 4, 100}), 1);
  EXPECT_DOUBLE_EQ(median_absolute_deviation({10, 10, 12}), 0);
  EXPECT_DOUBLE_EQ(median_absolute_deviation({}), 0);
  EXPECT_DOUBLE_EQ(summarize({1, 2, 3, 4, 100}).mad, 1);
}

// hyperfine's rule: |x - median| / MAD above 1.4826 x 10. 100 is 97 MADs from the median 3; 4 is 1.
TEST(Analysis, MadOutliersFollowHyperfinesRule) {
  EXPECT_EQ(mad_outliers({1, 2, 3, 4, 100}), std::vector<std::size_t>{4});
  const std::vector<double> scores = mad_scores({1, 2, 3, 4, 100});
  EXPECT_DOUBLE_EQ(scores[3], 1);
  EXPECT_DOUBLE_EQ(scores[4], 97);
  // Just under and just over the threshold: median 10, MAD 1 (deviations 0, 1, 1, 0 and 14.8 or 14.9).
  EXPECT_TRUE(mad_outliers({10, 9, 11, 10, 24.8}).empty());
  EXPECT_EQ(mad_outliers({10, 9, 11, 10, 24.9}), std::vector<std::size_t>{4});
  // No scale (half the values equal): nothing is flagged, however far the rest.
  EXPECT_TRUE(mad_outliers({5, 5, 5, 1000}).empty());
  EXPECT_NEAR(kMadOutlierThreshold, 14.826, 1e-12);
}

// One-sided Welch t against SciPy 1.10 (ttest_ind(a, b, equal_var=False, alternative="greater")).
TEST(Analysis, OneSidedWelchAgainstScipy) {
  OneSidedTest t = one_sided_welch_greater({5, 6, 7}, {3, 4, 5});
  ASSERT_TRUE(t.valid);
  EXPECT_NEAR(t.t, 2.449489742783178, 1e-12);
  EXPECT_NEAR(t.dof, 4, 1e-12);
  EXPECT_NEAR(t.p, 0.03524199845510997, 1e-10);
  t = one_sided_welch_greater({3, 4, 4, 5}, {2, 2, 3, 3});
  EXPECT_NEAR(t.t, 3.0, 1e-12);
  EXPECT_NEAR(t.p, 0.013669654895954772, 1e-10);
  EXPECT_NEAR(one_sided_welch_greater({2, 3, 2}, {2, 2, 3}).p, 0.5, 1e-12);
  EXPECT_NEAR(one_sided_welch_greater({2, 2, 3}, {5, 6, 9}).p, 0.9699984896073323, 1e-10);
  // No spread on either side: the means decide, exactly.
  t = one_sided_welch_greater({4, 4}, {3, 3});
  EXPECT_TRUE(t.valid && t.exact);
  EXPECT_EQ(t.p, 0);
  EXPECT_EQ(one_sided_welch_greater({3, 3}, {3, 3}).p, 1);
  EXPECT_FALSE(one_sided_welch_greater({4}, {3, 3}).valid);
}

TEST(Analysis, ParetoFrontier) {
  // (time, energy): A(1,10) B(2,5) C(3,6: dominated by B) D(4,1) E(2,7: dominated by B)
  const auto f = pareto_frontier({{1, 10, 0}, {2, 5, 1}, {3, 6, 2}, {4, 1, 3}, {2, 7, 4}});
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0].id, 0u);
  EXPECT_EQ(f[1].id, 1u);
  EXPECT_EQ(f[2].id, 3u);
}

}  // namespace
}  // namespace balerbench
