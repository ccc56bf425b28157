// test_schedulers.cpp: Baler's ReduceLROnPlateau and EarlyStopping rules.
#include <gtest/gtest.h>

#include "harness/engine/schedulers.h"

namespace balerbench {
namespace {

TEST(ReduceLROnPlateau, HalvesAfterPatiencePlusOneBadEpochs) {
  ReduceLROnPlateau s(1e-3, /*patience=*/2);
  EXPECT_DOUBLE_EQ(s.step(1.0), 1e-3);   // best = 1
  EXPECT_DOUBLE_EQ(s.step(1.0), 1e-3);   // bad 1
  EXPECT_DOUBLE_EQ(s.step(1.0), 1e-3);   // bad 2 (not > patience)
  EXPECT_DOUBLE_EQ(s.step(1.0), 5e-4);   // bad 3 > 2: reduce, reset
  EXPECT_TRUE(s.reduced_last_step());
  EXPECT_DOUBLE_EQ(s.step(1.0), 5e-4);
  EXPECT_FALSE(s.reduced_last_step());
}

TEST(ReduceLROnPlateau, RelativeThresholdDecidesImprovement) {
  ReduceLROnPlateau s(1e-3, 0);
  s.step(1.0);
  s.step(0.99995);  // not below 1.0 * (1 - 1e-4): a bad epoch, patience 0 -> reduce
  EXPECT_DOUBLE_EQ(s.lr(), 5e-4);
  s.step(0.9);  // a real improvement
  EXPECT_DOUBLE_EQ(s.lr(), 5e-4);
}

TEST(ReduceLROnPlateau, NeverBelowMinLr) {
  ReduceLROnPlateau s(3e-6, 0);
  s.step(1.0);
  s.step(1.0);
  EXPECT_DOUBLE_EQ(s.lr(), 1.5e-6);
  s.step(1.0);
  EXPECT_DOUBLE_EQ(s.lr(), 1e-6);
  s.step(1.0);
  EXPECT_DOUBLE_EQ(s.lr(), 1e-6);
  EXPECT_FALSE(s.reduced_last_step());
}

TEST(EarlyStopping, BalerRules) {
  EarlyStopping es(/*patience=*/2, /*min_delta=*/0.0);
  EXPECT_FALSE(es.step(1.0));  // sets best
  EXPECT_FALSE(es.step(1.0));  // difference == min_delta: nothing changes
  EXPECT_EQ(es.counter(), 0);
  EXPECT_FALSE(es.step(1.5));  // worse: counter 1
  EXPECT_EQ(es.counter(), 1);
  EXPECT_FALSE(es.step(0.5));  // better: reset
  EXPECT_EQ(es.counter(), 0);
  EXPECT_FALSE(es.step(0.6));
  EXPECT_TRUE(es.step(0.7));   // counter 2 >= patience
  EXPECT_TRUE(es.stopped());
}

TEST(EarlyStopping, MinDeltaBoundary) {
  EarlyStopping es(1, 0.25);
  es.step(1.0);
  EXPECT_FALSE(es.step(0.75));  // 1.0 - 0.75 == min_delta exactly: no change
  EXPECT_EQ(es.counter(), 0);
  EXPECT_TRUE(es.step(0.8));    // 0.2 < 0.25: counts, stops at patience 1
}

}  // namespace
}  // namespace balerbench
