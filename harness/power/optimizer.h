// optimizer.h: a Zeus-style power-limit optimiser (GlobalPowerLimitOptimizer,
// docs/configuration.md's power_limit_optimizer section). Inside one training run it profiles each allowed limit
// for a number of steps, chooses the limit with the lowest Zeus cost, and
// lets training continue at it.
//
// Driven by the training loop: on_step_begin/on_step_end around every step,
// on_epoch_end after every epoch. The first `wait_steps` steps are skipped
// (warm-up effects); then for each limit, from the highest down in steps of
// `pl_step_w`: set it, run `warmup_steps` steps, measure `profile_steps`
// steps (time and energy, from `measure`, which must synchronise the
// device). An epoch that ends in the middle of a limit cancels that
// measurement, puts the highest limit back and retries the limit next epoch,
// as Zeus does. Cost per limit = eta * E + (1 - eta) * MaxPower * T over the
// same number of steps, MaxPower = highest limit x GPU count.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace balerbench {

struct OptimizerOptions {  // Zeus' defaults
  double eta = 0.5;
  int64_t wait_steps = 1, warmup_steps = 10, profile_steps = 40;
  double pl_step_w = 25;
  int gpu_count = 1;
};

// Limits from max_w down to min_w in steps of step_w (min_w always included).
std::vector<double> power_limit_candidates(double min_w, double max_w, double step_w);

struct LimitProfile {
  double limit_w = 0, time_s = 0, energy_j = 0, cost_j = 0;  // cost_j: Zeus cost at the optimiser's eta
  int64_t steps = 0;
};

class PowerLimitOptimizer {
 public:
  struct Reading {
    double time_s = 0, energy_j = 0;  // cumulative, any origin
  };
  enum class State { kWaiting, kReady, kWarmup, kProfiling, kDone };

  PowerLimitOptimizer(OptimizerOptions options, std::vector<double> limits_w, std::function<void(double)> set_limit,
                      std::function<Reading()> measure);

  void on_step_begin();
  void on_step_end();
  void on_epoch_end();

  State state() const { return state_; }
  std::optional<double> chosen_w() const { return chosen_; }
  const std::vector<LimitProfile>& profiles() const { return profiles_; }
  double max_power_w() const;
  nlohmann::json to_json() const;

 private:
  void choose();
  OptimizerOptions o_;
  std::vector<double> limits_;
  std::function<void(double)> set_limit_;
  std::function<Reading()> measure_;
  State state_ = State::kWaiting;
  int64_t waited_ = 0, steps_in_state_ = 0, cancelled_ = 0;
  std::size_t next_ = 0;
  Reading begin_;
  std::vector<LimitProfile> profiles_;
  std::optional<double> chosen_;
};

}  // namespace balerbench
