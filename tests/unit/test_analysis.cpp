// test_analysis.cpp: the statistics of base/analysis.h against hand-computed values: Zeus's cost,
// mean, spread and confidence interval, and the time-energy Pareto frontier. No LibTorch headers.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "harness/base/analysis.h"

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
