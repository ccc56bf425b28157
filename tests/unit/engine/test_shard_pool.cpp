// test_shard_pool.cpp: the shard pool (every task once, exceptions, one run at a time) and the thread
// governor on made-up step times.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "harness/engine/shard_pool.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

TEST(ShardPool, EveryTaskOnceWhateverTheThreads) {
  ShardPool pool(3, 5);
  for (int threads_now : {1, 2, 3})
    for (int round = 0; round < 200; ++round) {
      const int tasks = 1 + round % 7;
      std::vector<std::atomic<int>> done(static_cast<std::size_t>(tasks));
      for (auto& d : done) d.store(0);
      std::atomic<int> bad_slot{0};
      pool.run(tasks, [&](int t, int slot) {
        done[static_cast<std::size_t>(t)].fetch_add(1);
        if (slot < 0 || slot >= threads_now) bad_slot.fetch_add(1);
      }, threads_now);
      for (int t = 0; t < tasks; ++t) ASSERT_EQ(done[static_cast<std::size_t>(t)].load(), 1) << "task " << t;
      ASSERT_EQ(bad_slot.load(), 0);
    }
  EXPECT_EQ(pool.tasks_by_caller() + pool.tasks_by_helpers(), 3 * (200 / 7 * 28 + (1 + 2 + 3 + 4)));
}

TEST(ShardPool, OneThreadRunsEveryTaskOnTheCaller) {
  ShardPool pool(2, 5);
  const auto caller = std::this_thread::get_id();
  int elsewhere = 0;
  pool.run(5, [&](int, int slot) { elsewhere += std::this_thread::get_id() != caller || slot != 0; }, 1);
  EXPECT_EQ(elsewhere, 0);
  EXPECT_EQ(pool.tasks_by_helpers(), 0);
}

TEST(ShardPool, ATasksExceptionReachesTheCallerAndTheOthersStillRun) {
  ShardPool pool(2, 5);
  std::atomic<int> ran{0};
  EXPECT_THROW(pool.run(4, [&](int t, int) {
    ran.fetch_add(1);
    if (t == 1) throw std::runtime_error("task 1");
  }, 2), std::runtime_error);
  EXPECT_EQ(ran.load(), 4);
  pool.run(2, [&](int, int) { ran.fetch_add(1); }, 2);  // and it still works
  EXPECT_EQ(ran.load(), 6);
  // The same on one thread: every task runs, the first exception at the end.
  EXPECT_THROW(pool.run(3, [&](int t, int) {
    ran.fetch_add(1);
    if (t == 0) throw std::runtime_error("task 0");
  }, 1), std::runtime_error);
  EXPECT_EQ(ran.load(), 9);
}

// One caller at a time: a run() from inside a run is refused, not interleaved.
TEST(ShardPool, ASecondRunWhileOneIsInProgressIsRefused) {
  ShardPool pool(2, 5);
  bool refused = false;
  pool.run(1, [&](int, int) {
    try {
      pool.run(1, [](int, int) {}, 1);
    } catch (const std::logic_error&) {
      refused = true;
    }
  }, 1);
  EXPECT_TRUE(refused);
  int ran = 0;
  pool.run(3, [&](int, int) { ++ran; }, 1);  // and afterwards it runs
  EXPECT_EQ(ran, 3);
}

// The governor on made-up step times (seconds): its choices, never the clock.
TEST(ThreadGovernor, ChoosesTheFasterWayAndFallsBackOnACollapse) {
  ThreadGovernor g(2, 20);
  std::vector<int> ways;
  const auto step = [&](double all_s, double one_s) {
    const int t = g.threads_for_next_step();
    ways.push_back(t);
    g.record(t == 2 ? all_s : one_s);
  };
  for (int i = 0; i < ThreadGovernor::kFirstChoice; ++i) step(1.0, 1.9);  // two threads faster
  std::vector<int> expected(ThreadGovernor::kWarmup, 2);  // the warm-up on all threads, then alternating
  for (int i = 0; i < 6; ++i) expected.push_back(i % 2 == 0 ? 2 : 1);
  EXPECT_EQ(ways, expected);
  EXPECT_EQ(g.threads_for_next_step(), 2);
  for (int i = 0; i < 5; ++i) step(1.0, 1.9);
  EXPECT_EQ(g.threads_for_next_step(), 2);
  // A neighbour: two threads now take 6x as long; within three steps the next runs on one.
  for (int i = 0; i < 3; ++i) step(6.0, 1.9);
  EXPECT_EQ(g.collapses(), 1);
  EXPECT_EQ(g.threads_for_next_step(), 1);
  // Quiet again: the probes (two steps on two threads every 20) see two threads faster and switch
  // back; after that, only the probes run on one thread.
  for (int i = 0; i < 100; ++i) step(1.0, 1.9);
  EXPECT_GE(g.switches(), 2);
  EXPECT_GE(std::count(ways.end() - 20, ways.end(), 2), 18);
  EXPECT_NE(g.summary().find("collapse"), std::string::npos) << g.summary();
}

// A neighbour that takes turns with a pool thread: two threads 26% slower than one, never 1.5x.
TEST(ThreadGovernor, AModerateButSteadySlowdownIsACollapseToo) {
  ThreadGovernor g(2, 100);
  for (int i = 0; i < ThreadGovernor::kFirstChoice; ++i) g.record(g.threads_for_next_step() == 2 ? 1.0 : 1.9);
  ASSERT_EQ(g.threads_for_next_step(), 2);
  int steps = 0;
  while (g.threads_for_next_step() == 2 && steps < 20) {
    g.record(2.4);
    ++steps;
  }
  EXPECT_EQ(g.threads_for_next_step(), 1);
  EXPECT_LE(steps, 5);
  EXPECT_EQ(g.collapses(), 1);
}

// On a steady host every probe keeps all threads, so the probes thin out: the interval doubles to
// 16 x probe_every. A collapse starts it again at probe_every, and on one thread it stays there, so
// that the neighbour's leaving is seen within probe_every steps.
TEST(ThreadGovernor, ProbesBackOffOnASteadyHostAndStartAgainAfterAChange) {
  ThreadGovernor g(2, 20);
  for (int i = 0; i < 2000; ++i) g.record(g.threads_for_next_step() == 2 ? 1.0 : 1.9);
  EXPECT_EQ(g.switches(), 0);
  EXPECT_EQ(g.probe_interval(), 320);
  // 3 first-measurement steps on one thread, then 2 per probe at steps ~38, 80, 162, 324, 646, ...:
  // without the back-off it would be 2 every 22 steps (about 180).
  EXPECT_LE(g.steps_on_one(), 3 + 2 * 10) << g.summary();
  EXPECT_GE(g.steps_on_one(), 3 + 2 * 6) << g.summary();
  for (int i = 0; i < 3; ++i) g.record(g.threads_for_next_step() == 2 ? 6.0 : 1.9);  // a neighbour
  EXPECT_EQ(g.collapses(), 1);
  EXPECT_EQ(g.threads_for_next_step(), 1);
  EXPECT_EQ(g.probe_interval(), 20);
  // The neighbour stays: one thread keeps winning its probes, which stay every 20 steps.
  for (int i = 0; i < 400; ++i) g.record(g.threads_for_next_step() == 2 ? 6.0 : 1.9);
  EXPECT_EQ(g.threads_for_next_step(), 1);
  EXPECT_EQ(g.probe_interval(), 20);
  EXPECT_EQ(g.switches(), 1);  // the collapse only
  // It leaves (two threads 1.0 again): back on two threads within two probes, and staying there.
  int steps = 0;
  while (g.switches() == 1 && steps < 200) {
    g.record(g.threads_for_next_step() == 2 ? 1.0 : 1.9);
    ++steps;
  }
  EXPECT_EQ(g.switches(), 2);
  EXPECT_LE(steps, 2 * (20 + 2));
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(g.threads_for_next_step(), 2) << "step " << i << " after the switch back";
    g.record(1.0);
  }
}

TEST(ThreadGovernor, OneThreadWhenItIsFasterFromTheStart) {
  ThreadGovernor g(2, 20);
  for (int i = 0; i < ThreadGovernor::kFirstChoice; ++i) g.record(g.threads_for_next_step() == 2 ? 3.0 : 1.0);
  EXPECT_EQ(g.threads_for_next_step(), 1);
  ThreadGovernor single(1);
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(single.threads_for_next_step(), 1);
    single.record(1.0);
  }
  EXPECT_EQ(single.summary(), "");
}

}  // namespace
}  // namespace balerbench
