// recurrence_tuner.cpp: see recurrence_tuner.h.
#include "harness/tuning/recurrence_tuner.h"

#include "harness/base/zeus_cost.h"

namespace balerbench {

using nlohmann::json;

json TunerOptions::to_json() const {
  return {{"eta", eta},
          {"beta", std::isfinite(beta) ? json(beta) : json("inf")},
          {"max_power_w", max_power_w},
          {"max_attempts", max_attempts},
          {"power_limits", power_limits ? "just in time" : "none"},
          {"seed", batch_size_optimizer.seed},
          {"pruning_rounds", batch_size_optimizer.pruning_rounds},
          {"window", batch_size_optimizer.window}};
}

json AttemptPlan::to_json() const {
  json d = json::array();
  for (const auto& x : draws)
    d.push_back({{"batch_size", x.batch_size},
                 {"mean_cost_j", x.mean_cost},
                 {"sd_of_mean_j", x.sd_of_mean},
                 {"draw_j", x.draw}});
  return {{"recurrence", recurrence},
          {"attempt", attempt},
          {"batch_size", batch_size},
          {"stage", stage},
          {"cost_bound_j", cost_bound_j ? json(*cost_bound_j) : json(nullptr)},
          {"power_limit_w", power_limit_w ? json(*power_limit_w) : json(nullptr)},
          {"profile_power_limit", profile_power_limit},
          {"thompson_draws", d}};
}

RecurrenceTuner::RecurrenceTuner(std::vector<int64_t> batch_sizes, int64_t default_batch_size, TunerOptions o)
    : o_(o), bso_(std::move(batch_sizes), default_batch_size, o.batch_size_optimizer) {
  if (!(o_.eta >= 0 && o_.eta <= 1)) throw TuningError("eta must be in [0, 1]");
  if (!(o_.beta > 1) && !std::isinf(o_.beta)) throw TuningError("beta must be greater than 1 (or infinity)");
  if (!(o_.max_power_w > 0) || !std::isfinite(o_.max_power_w))
    throw TuningError("MaxPower must be a positive number of watts");
  if (o_.max_attempts < 1) throw TuningError("max_attempts must be at least 1");
}

AttemptPlan RecurrenceTuner::next() {
  AttemptPlan p;
  p.recurrence = recurrence_;
  p.attempt = attempt_;
  p.stage = BatchSizeOptimizer::stage_name(bso_.stage());
  p.batch_size = bso_.predict();
  p.draws = bso_.last_draws();
  if (std::isfinite(min_cost_) && std::isfinite(o_.beta)) p.cost_bound_j = o_.beta * min_cost_;
  if (o_.power_limits) {
    p.power_limit_w = power_limit(p.batch_size);
    p.profile_power_limit = !p.power_limit_w;
  }
  pending_ = p;
  return p;
}

AttemptResult RecurrenceTuner::finish(const AttemptPlan& plan, const AttemptOutcome& out) {
  if (!pending_ || pending_->recurrence != plan.recurrence || pending_->attempt != plan.attempt ||
      pending_->batch_size != plan.batch_size)
    throw TuningError("an outcome for recurrence " + std::to_string(plan.recurrence) + " attempt " +
                      std::to_string(plan.attempt) + " that was not the next attempt");
  pending_.reset();
  AttemptResult r;
  if (!out.ran) {
    if (!plan.cost_bound_j)
      throw TuningError("an attempt that did not run without a cost bound (only the bound stops one before it starts)");
    // Zeus's simulator: the batch size is too costly to run at all now; the optimiser learns that
    // from a cost far above the bound, and the recurrence tries again.
    r.observed_cost_j = 100 * *plan.cost_bound_j;
    bso_.observe(plan.batch_size, r.observed_cost_j, false);
  } else {
    r.cost_j = zeus_cost(o_.eta, out.energy_j, out.time_s, o_.max_power_w);
    r.observed_cost_j = r.cost_j;
    recurrence_cost_ += r.cost_j;
    bso_.observe(plan.batch_size, r.cost_j, out.reached);
    if (out.reached) {
      if (recurrence_cost_ < min_cost_) min_cost_ = recurrence_cost_;
      ++recurrence_;
      attempt_ = 1;
      recurrence_cost_ = 0;
      r.recurrence_done = true;
      return r;
    }
    if (plan.recurrence == 0)
      throw TuningError("the first recurrence's attempt at batch size " + std::to_string(plan.batch_size) +
                        " did not reach the target: the first attempt is the default batch size, which must reach "
                        "it (Zeus assumes the user's default converges)");
  }
  if (++attempt_ > o_.max_attempts)
    throw TuningError("recurrence " + std::to_string(plan.recurrence) + " did not reach the target in " +
                      std::to_string(o_.max_attempts) + " attempts: the target looks out of reach");
  return r;
}

void RecurrenceTuner::set_power_limit(int64_t batch_size, double limit_w) { limits_[batch_size] = limit_w; }

std::optional<double> RecurrenceTuner::power_limit(int64_t batch_size) const {
  const auto it = limits_.find(batch_size);
  if (it == limits_.end()) return std::nullopt;
  return it->second;
}

std::optional<double> RecurrenceTuner::cheapest_recurrence_j() const {
  if (!std::isfinite(min_cost_)) return std::nullopt;
  return min_cost_;
}

json RecurrenceTuner::to_json() const {
  json limits = json::object();
  for (const auto& [bs, w] : limits_) limits[std::to_string(bs)] = w;
  return {{"options", o_.to_json()},
          {"recurrences_done", recurrence_},
          {"cheapest_recurrence_j", cheapest_recurrence_j() ? json(*cheapest_recurrence_j()) : json(nullptr)},
          {"power_limits_w", limits},
          {"batch_size_optimizer", bso_.to_json()}};
}

}  // namespace balerbench
