// test_zeus_cost.cpp: base/zeus_cost.h, Zeus's cost of a run (a weighing of its energy and its time
// at MaxPower), against hand-computed values. No LibTorch headers.
#include <gtest/gtest.h>

#include <stdexcept>

#include "harness/base/zeus_cost.h"

namespace balerbench {
namespace {

TEST(ZeusCost, AgainstHandValues) {
  // eta 0.5, 1000 J, 10 s, 300 W: 0.5 * 1000 + 0.5 * 300 * 10 = 2000 J.
  EXPECT_DOUBLE_EQ(zeus_cost(0.5, 1000, 10, 300), 2000);
  EXPECT_DOUBLE_EQ(zeus_cost(0, 1000, 10, 300), 3000);  // time only, in joules at MaxPower
  EXPECT_DOUBLE_EQ(zeus_cost(1, 1000, 10, 300), 1000);  // energy only
  EXPECT_DOUBLE_EQ(zeus_cost(0.25, 400, 2, 250), 0.25 * 400 + 0.75 * 250 * 2);
  EXPECT_THROW(zeus_cost(1.5, 1, 1, 1), std::invalid_argument);
}

}  // namespace
}  // namespace balerbench
