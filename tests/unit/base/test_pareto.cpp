// test_pareto.cpp: base/pareto.h, the time-energy Pareto frontier, against a hand-drawn one. No
// LibTorch headers.
#include <gtest/gtest.h>

#include <vector>

#include "harness/base/pareto.h"

namespace balerbench {
namespace {

TEST(Pareto, Frontier) {
  // (time, energy): A(1,10) B(2,5) C(3,6: dominated by B) D(4,1) E(2,7: dominated by B)
  const auto f = pareto_frontier({{1, 10, 0}, {2, 5, 1}, {3, 6, 2}, {4, 1, 3}, {2, 7, 4}});
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0].id, 0u);
  EXPECT_EQ(f[1].id, 1u);
  EXPECT_EQ(f[2].id, 3u);
}

TEST(Pareto, FrontInThreeFigures) {
  // (energy, error, size): B trades energy for error against A; C is dominated by A in every figure;
  // D is the smallest; E equals A and is kept with it.
  const std::vector<std::vector<double>> points = {
      {10, 0.1, 5}, {5, 0.3, 5}, {11, 0.2, 6}, {20, 0.5, 1}, {10, 0.1, 5}};
  EXPECT_EQ(pareto_front(points), (std::vector<std::size_t>{0, 1, 3, 4}));
  EXPECT_TRUE(pareto_front({}).empty());
}

}  // namespace
}  // namespace balerbench
