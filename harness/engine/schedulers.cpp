// schedulers.cpp: see schedulers.h.
#include "harness/engine/schedulers.h"

#include <algorithm>

namespace balerbench {

ReduceLROnPlateau::ReduceLROnPlateau(double lr, int64_t patience, double factor, double min_lr, double threshold,
                                     int64_t cooldown, double eps)
    : lr_(lr), factor_(factor), min_lr_(min_lr), threshold_(threshold), eps_(eps), patience_(patience),
      cooldown_(cooldown) {}

double ReduceLROnPlateau::step(double metric) {
  reduced_ = false;
  // mode "min", threshold_mode "rel": better when metric < best * (1 - threshold).
  if (metric < best_ * (1.0 - threshold_)) {
    best_ = metric;
    num_bad_epochs_ = 0;
  } else {
    ++num_bad_epochs_;
  }
  if (cooldown_counter_ > 0) {
    --cooldown_counter_;
    num_bad_epochs_ = 0;
  }
  if (num_bad_epochs_ > patience_) {
    const double new_lr = std::max(lr_ * factor_, min_lr_);
    if (lr_ - new_lr > eps_) {
      lr_ = new_lr;
      reduced_ = true;
    }
    cooldown_counter_ = cooldown_;
    num_bad_epochs_ = 0;
  }
  return lr_;
}

bool EarlyStopping::step(double loss) {
  if (!has_best_) {
    has_best_ = true;
    best_ = loss;
  } else if (best_ - loss > min_delta_) {
    best_ = loss;
    counter_ = 0;
  } else if (best_ - loss < min_delta_) {
    ++counter_;
    if (counter_ >= patience_) stop_ = true;
  }
  return stop_;
}

}  // namespace balerbench
