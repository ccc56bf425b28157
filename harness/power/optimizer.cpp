// optimizer.cpp: see optimizer.h.
#include "harness/power/optimizer.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "harness/base/zeus_cost.h"

namespace balerbench {

std::vector<double> power_limit_candidates(double min_w, double max_w, double step_w) {
  if (!(step_w > 0) || !(min_w > 0) || max_w < min_w)
    throw InputError("power-limit range [" + std::to_string(min_w) + ", " + std::to_string(max_w) + "] W in steps of " +
                     std::to_string(step_w) + " W is empty");
  std::vector<double> out;
  for (double w = max_w; w > min_w + 1e-9; w -= step_w) out.push_back(w);
  out.push_back(min_w);
  return out;
}

PowerLimitOptimizer::PowerLimitOptimizer(OptimizerOptions options, std::vector<double> limits_w,
                                         std::function<void(double)> set_limit, std::function<Reading()> measure)
    : o_(options), limits_(std::move(limits_w)), set_limit_(std::move(set_limit)), measure_(std::move(measure)) {
  if (limits_.empty()) throw InputError("the power-limit optimiser needs at least one limit");
  std::sort(limits_.begin(), limits_.end(), std::greater<double>());
  if (o_.wait_steps == 0) state_ = State::kReady;
}

double PowerLimitOptimizer::max_power_w() const { return limits_.front() * std::max(1, o_.gpu_count); }

void PowerLimitOptimizer::on_step_begin() {
  if (state_ == State::kReady) {
    set_limit_(limits_[next_]);
    state_ = State::kWarmup;
    steps_in_state_ = 0;
  }
  if (state_ == State::kWarmup && steps_in_state_ >= o_.warmup_steps) {
    begin_ = measure_();
    state_ = State::kProfiling;
    steps_in_state_ = 0;
  }
}

void PowerLimitOptimizer::on_step_end() {
  switch (state_) {
    case State::kDone:
      return;
    case State::kWaiting:
      if (++waited_ >= o_.wait_steps) state_ = State::kReady;
      return;
    case State::kReady:
      return;
    case State::kWarmup:
      ++steps_in_state_;
      return;
    case State::kProfiling:
      if (++steps_in_state_ < o_.profile_steps) return;
      {
        const Reading end = measure_();
        LimitProfile p;
        p.limit_w = limits_[next_];
        p.time_s = end.time_s - begin_.time_s;
        p.energy_j = end.energy_j - begin_.energy_j;
        p.steps = steps_in_state_;
        p.cost_j = zeus_cost(o_.eta, p.energy_j, p.time_s, max_power_w());
        profiles_.push_back(p);
      }
      ++next_;
      state_ = State::kReady;
      if (next_ == limits_.size()) choose();
      return;
  }
}

void PowerLimitOptimizer::on_epoch_end() {
  if (state_ != State::kWarmup && state_ != State::kProfiling) return;
  // Zeus: a measurement cut by the epoch's end is thrown away; the GPU goes
  // back to the highest limit and the same limit is tried again next epoch.
  ++cancelled_;
  set_limit_(limits_.front());
  state_ = State::kReady;
  steps_in_state_ = 0;
}

void PowerLimitOptimizer::choose() {
  const auto best = std::min_element(profiles_.begin(), profiles_.end(),
                                     [](const LimitProfile& a, const LimitProfile& b) { return a.cost_j < b.cost_j; });
  chosen_ = best->limit_w;
  set_limit_(*chosen_);
  state_ = State::kDone;
}

nlohmann::json PowerLimitOptimizer::to_json() const {
  nlohmann::json profiles = nlohmann::json::array();
  for (const auto& p : profiles_)
    profiles.push_back({{"limit_w", p.limit_w},
                        {"steps", p.steps},
                        {"time_s", p.time_s},
                        {"energy_j", p.energy_j},
                        {"avg_power_w", p.time_s > 0 ? p.energy_j / p.time_s : 0.0},
                        {"cost_j", p.cost_j}});
  static const char* kStates[] = {"waiting", "ready", "warmup", "profiling", "done"};
  return {{"eta", o_.eta},
          {"wait_steps", o_.wait_steps},
          {"warmup_steps", o_.warmup_steps},
          {"profile_steps", o_.profile_steps},
          {"pl_step_w", o_.pl_step_w},
          {"limits_w", limits_},
          {"max_power_w", max_power_w()},
          {"state", kStates[static_cast<int>(state_)]},
          {"cancelled_measurements", cancelled_},
          {"profiles", profiles},
          {"chosen_w", chosen_ ? nlohmann::json(*chosen_) : nlohmann::json(nullptr)}};
}

}  // namespace balerbench
