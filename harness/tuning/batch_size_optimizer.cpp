// batch_size_optimizer.cpp: see batch_size_optimizer.h.
#include "harness/tuning/batch_size_optimizer.h"

#include <algorithm>
#include <cmath>

#include "common/text.h"

namespace balerbench {
namespace {

using nlohmann::json;

}  // namespace

BatchSizeOptimizer::BatchSizeOptimizer(std::vector<int64_t> batch_sizes, int64_t default_batch_size,
                                       BatchSizeOptimizerOptions o)
    : o_(o), rng_(o.seed), candidates_(std::move(batch_sizes)), default_(default_batch_size) {
  std::sort(candidates_.begin(), candidates_.end());
  if (candidates_.empty()) throw TuningError("the batch-size optimiser needs at least one batch size");
  if (std::adjacent_find(candidates_.begin(), candidates_.end()) != candidates_.end())
    throw TuningError("the batch sizes [" + list_text(candidates_) + "] name one twice");
  if (!std::binary_search(candidates_.begin(), candidates_.end(), default_))
    throw TuningError("the default batch size " + std::to_string(default_) + " is not one of the candidates [" +
                      list_text(candidates_) + "]");
  if (o_.pruning_rounds < 0) throw TuningError("pruning rounds must be 0 or more");
  if (o_.window < 0) throw TuningError("the window must be 0 (all observations) or more");
  round_set_ = candidates_;
  if (o_.pruning_rounds == 0) {
    stage_ = Stage::kThompson;
    arms_ = candidates_;
  } else {
    start_round();
  }
}

const char* BatchSizeOptimizer::stage_name(Stage s) { return s == Stage::kPruning ? "pruning" : "thompson"; }

void BatchSizeOptimizer::start_round() {
  const auto at = std::find(round_set_.begin(), round_set_.end(), default_);
  // The start is the last round's cheapest batch size that reached, so it is among the survivors.
  if (at == round_set_.end()) throw std::logic_error("pruning: the start is not among the survivors");
  down_.assign(round_set_.begin(), at + 1);
  std::reverse(down_.begin(), down_.end());  // the default first, then smaller ones
  up_.assign(at + 1, round_set_.end());
  good_.clear();
  going_up_ = false;
  pos_ = 0;
  round_has_best_ = false;
}

void BatchSizeOptimizer::next_in_walk() {
  const std::vector<int64_t>& list = going_up_ ? up_ : down_;
  if (pos_ < list.size()) return;
  if (!going_up_) {
    going_up_ = true;
    pos_ = 0;
    if (!up_.empty()) return;
  }
  end_round();
}

void BatchSizeOptimizer::end_round() {
  std::sort(good_.begin(), good_.end());
  round_set_ = good_;
  ++round_;
  if (round_set_.empty()) return;  // predict() says why it cannot go on
  if (round_ == o_.pruning_rounds) {
    stage_ = Stage::kThompson;
    arms_ = round_set_;
    return;
  }
  start_round();
}

int64_t BatchSizeOptimizer::predict() {
  draws_.clear();
  if (stage_ == Stage::kPruning) {
    if (round_set_.empty())
      throw TuningError("every batch size was pruned: none reached the target in pruning round " +
                        std::to_string(round_) + " of " + std::to_string(o_.pruning_rounds) + " (candidates [" +
                        list_text(candidates_) + "])");
    return going_up_ ? up_[pos_] : down_[pos_];
  }
  for (int64_t arm : arms_)
    if (arm_costs(arm).size() < 2) return arm;
  const Draw* best = nullptr;
  for (int64_t arm : arms_) {
    const Posterior p = posterior(arm);
    draws_.push_back({arm, p.mean_cost, p.sd_of_mean, rng_.normal(p.mean_cost, p.sd_of_mean)});
  }
  for (const Draw& d : draws_)
    if (!best || d.draw < best->draw) best = &d;
  return best->batch_size;
}

void BatchSizeOptimizer::observe(int64_t batch_size, double cost, bool reached) {
  if (!std::isfinite(cost) || cost < 0)
    throw TuningError("the cost of batch size " + std::to_string(batch_size) + " is " + std::to_string(cost) +
                      ", not a finite number >= 0");
  if (stage_ == Stage::kPruning) {
    if (round_set_.empty()) throw TuningError("every batch size was pruned; nothing more to observe");
    const int64_t expected = going_up_ ? up_[pos_] : down_[pos_];
    if (batch_size != expected)
      throw TuningError("pruning expects the result of batch size " + std::to_string(expected) + ", got " +
                        std::to_string(batch_size));
    history_.push_back({batch_size, cost, reached, stage_});
    if (reached) {
      if (!round_has_best_ || cost < round_best_) {
        round_best_ = cost;
        round_has_best_ = true;
        default_ = batch_size;
      }
      good_.push_back(batch_size);
      ++pos_;
    } else {
      // This direction ends here: the rest of it is not tried this round.
      pos_ = (going_up_ ? up_ : down_).size();
    }
    next_in_walk();
    return;
  }
  if (std::find(arms_.begin(), arms_.end(), batch_size) == arms_.end())
    throw TuningError("batch size " + std::to_string(batch_size) + " is not an arm [" + list_text(arms_) + "]");
  history_.push_back({batch_size, cost, reached, stage_});
}

std::vector<double> BatchSizeOptimizer::arm_costs(int64_t batch_size) const {
  std::vector<double> costs;
  for (auto it = history_.rbegin(); it != history_.rend(); ++it) {
    if (it->batch_size != batch_size) continue;
    costs.push_back(it->cost);
    if (o_.window > 0 && static_cast<int64_t>(costs.size()) == o_.window) break;
  }
  std::reverse(costs.begin(), costs.end());
  return costs;
}

BatchSizeOptimizer::Posterior BatchSizeOptimizer::posterior(int64_t batch_size) const {
  const std::vector<double> costs = arm_costs(batch_size);
  Posterior p;
  p.batch_size = batch_size;
  p.observations = static_cast<int64_t>(costs.size());
  if (costs.empty()) return p;
  double sum = 0;
  for (double c : costs) sum += c;
  p.mean_cost = sum / static_cast<double>(costs.size());
  double ss = 0;
  for (double c : costs) ss += (c - p.mean_cost) * (c - p.mean_cost);
  const double variance = ss / static_cast<double>(costs.size());  // population variance, as Zeus
  p.sd_of_mean = std::sqrt(variance / static_cast<double>(costs.size()));
  return p;
}

std::vector<BatchSizeOptimizer::Posterior> BatchSizeOptimizer::posteriors() const {
  std::vector<Posterior> out;
  for (int64_t bs : stage_ == Stage::kThompson ? arms_ : candidates_) out.push_back(posterior(bs));
  return out;
}

json BatchSizeOptimizer::to_json() const {
  json posteriors_json = json::array();
  for (const Posterior& p : posteriors())
    posteriors_json.push_back({{"batch_size", p.batch_size},
                               {"observations", p.observations},
                               {"mean_cost_j", p.observations ? json(p.mean_cost) : json(nullptr)},
                               {"sd_of_mean_j", p.observations ? json(p.sd_of_mean) : json(nullptr)}});
  json history = json::array();
  for (const Observation& o : history_)
    history.push_back(
        {{"batch_size", o.batch_size}, {"cost_j", o.cost}, {"reached", o.reached}, {"stage", stage_name(o.stage)}});
  return {{"seed", o_.seed},
          {"random_draws", rng_.draws()},
          {"pruning_rounds", o_.pruning_rounds},
          {"window", o_.window},
          {"stage", stage_name(stage_)},
          {"pruning_round", round_},
          {"candidates", candidates_},
          {"start_batch_size", default_},
          {"arms", arms_},
          {"posteriors", posteriors_json},
          {"observations", history}};
}

}  // namespace balerbench
