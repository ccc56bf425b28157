// test_optimizer.cpp: the power-limit optimiser (power/optimizer.h): Zeus's candidate limits, and a
// profile of every limit on the simulated GPU model, set through the fake NVML, that picks the
// cheapest. No LibTorch headers.
#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "common/error.h"
#include "harness/energy/simulated_gpu.h"
#include "harness/power/optimizer.h"
#include "harness/power/power_limit.h"
#include "tests/test_util.h"
#include "tests/unit/power/power_test.h"

namespace balerbench {
namespace {

using nlohmann::json;

TEST(PowerLimitOptimizer, CandidatesLikeZeus) {
  EXPECT_EQ(power_limit_candidates(100, 300, 25), (std::vector<double>{300, 275, 250, 225, 200, 175, 150, 125, 100}));
  EXPECT_EQ(power_limit_candidates(150, 200, 30), (std::vector<double>{200, 170, 150}));
  expect_input_error([] { power_limit_candidates(300, 100, 25); }, "empty");
}

// The optimiser on the simulated GPU model: each step's time and energy
// follow the model at the limit in force (load 1: demand 300 W, idle 60 W),
// and the limit is set through the fake NVML (guard included).
struct SimulatedRun {
  SimulatedGpuModel gpu;
  double time_s = 0, energy_j = 0;
  int64_t steps = 0;
  void step() {
    gpu.spec.power_limit_w = current_limit();
    const double dt = 0.01 / gpu.throughput(1.0);
    time_s += dt;
    energy_j += gpu.power_w(1.0) * dt;
    ++steps;
  }
  std::function<double()> current_limit;
};

TEST_F(PowerTest, OptimizerProfilesEveryLimitAndChoosesTheCheapest) {
  auto c = open();
  ASSERT_TRUE(c);
  PowerLimitGuard guard(*c, dir_.path("j.json"));
  SimulatedRun run;
  run.gpu.spec.idle_power_w = 60;
  run.gpu.spec.max_power_w = 300;
  run.gpu.spec.min_limit_w = 100;
  run.gpu.spec.max_limit_w = 300;
  run.current_limit = [&] { return c->enforced_limit_w(0); };
  OptimizerOptions o;  // Zeus defaults: wait 1, warm up 10, profile 40, 25 W
  o.eta = 0.5;
  PowerLimitOptimizer opt(
      o, power_limit_candidates(100, 300, o.pl_step_w), [&](double w) { guard.apply(w); },
      [&] {
        return PowerLimitOptimizer::Reading{run.time_s, run.energy_j};
      });
  const int64_t steps_per_epoch = 100;
  for (int epoch = 0; epoch < 12 && opt.state() != PowerLimitOptimizer::State::kDone; ++epoch) {
    for (int64_t s = 0; s < steps_per_epoch; ++s) {
      opt.on_step_begin();
      run.step();
      opt.on_step_end();
    }
    opt.on_epoch_end();
  }
  ASSERT_EQ(opt.state(), PowerLimitOptimizer::State::kDone);
  ASSERT_EQ(opt.profiles().size(), 9u);
  // Expected: the cost of 40 steps at each limit from the model, by hand.
  double best_cost = INFINITY, best_w = 0;
  for (double w : power_limit_candidates(100, 300, 25)) {
    SimulatedGpuModel m = run.gpu;
    m.spec.power_limit_w = w;
    const double t = 40 * 0.01 / m.throughput(1.0);
    const double e = m.power_w(1.0) * t;
    const double cost = 0.5 * e + 0.5 * 300 * t;
    if (cost < best_cost) {
      best_cost = cost;
      best_w = w;
    }
  }
  for (const auto& p : opt.profiles()) EXPECT_EQ(p.steps, 40);
  ASSERT_TRUE(opt.chosen_w().has_value());
  EXPECT_DOUBLE_EQ(*opt.chosen_w(), best_w);
  EXPECT_DOUBLE_EQ(c->limit_w(0), best_w);  // training continues at the chosen limit
  // 100 steps per epoch hold one limit's 50 steps plus part of the next: cut measurements were retried.
  EXPECT_GT(opt.to_json()["cancelled_measurements"].get<int64_t>(), 0);
  for (const auto& p : opt.profiles()) {
    SimulatedGpuModel m = run.gpu;
    m.spec.power_limit_w = p.limit_w;
    EXPECT_NEAR(p.time_s, 40 * 0.01 / m.throughput(1.0), 1e-9) << p.limit_w;
  }
  guard.restore();
  EXPECT_DOUBLE_EQ(c->limit_w(0), 300);
}

}  // namespace
}  // namespace balerbench
