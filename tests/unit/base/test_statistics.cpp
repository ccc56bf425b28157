// test_statistics.cpp: base/statistics.h against hand-computed values and SciPy's: mean, median,
// spread and confidence interval, the median absolute deviation and its outliers, the one-sided
// Welch test. No LibTorch headers.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "harness/base/statistics.h"

namespace balerbench {
namespace {

TEST(Statistics, SummaryAndConfidenceInterval) {
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

// The median absolute deviation against hand values (and SciPy's median_abs_deviation([1, 2, 3, 4, 100]) = 1).
TEST(Statistics, MedianAbsoluteDeviation) {
  EXPECT_DOUBLE_EQ(median_absolute_deviation({1, 2, 3, 4, 100}), 1);
  EXPECT_DOUBLE_EQ(median_absolute_deviation({10, 10, 12}), 0);
  EXPECT_DOUBLE_EQ(median_absolute_deviation({}), 0);
  EXPECT_DOUBLE_EQ(summarize({1, 2, 3, 4, 100}).mad, 1);
}

// hyperfine's rule: |x - median| / MAD above 1.4826 x 10. 100 is 97 MADs from the median 3; 4 is 1.
TEST(Statistics, MadOutliersFollowHyperfinesRule) {
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
TEST(Statistics, OneSidedWelchAgainstScipy) {
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

}  // namespace
}  // namespace balerbench
