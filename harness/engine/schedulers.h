// schedulers.h: Baler's ReduceLROnPlateau and EarlyStopping, rule for rule
// (docs/baler.md, Training). Pure C++, stepped once per epoch with the
// validation loss.
#pragma once

#include <cstdint>
#include <limits>

namespace balerbench {

// torch.optim.lr_scheduler.ReduceLROnPlateau with Baler's settings: mode min,
// relative threshold 1e-4, factor 0.5, min_lr 1e-6, cooldown 0, eps 1e-8.
class ReduceLROnPlateau {
 public:
  ReduceLROnPlateau(double lr, int64_t patience, double factor = 0.5, double min_lr = 1e-6,
                    double threshold = 1e-4, int64_t cooldown = 0, double eps = 1e-8);
  // Returns the learning rate to use from now on.
  double step(double metric);
  double lr() const { return lr_; }
  bool reduced_last_step() const { return reduced_; }
  int64_t bad_epochs() const { return num_bad_epochs_; }

 private:
  double lr_, factor_, min_lr_, threshold_, eps_;
  int64_t patience_, cooldown_;
  double best_ = std::numeric_limits<double>::infinity();
  int64_t num_bad_epochs_ = 0;
  int64_t cooldown_counter_ = 0;
  bool reduced_ = false;
};

// Baler's EarlyStopping: the first call sets best; best - loss > min_delta
// resets the counter; best - loss < min_delta counts, stopping at patience;
// a difference exactly equal to min_delta changes nothing.
class EarlyStopping {
 public:
  EarlyStopping(int64_t patience, double min_delta) : patience_(patience), min_delta_(min_delta) {}
  // Returns true when training should stop.
  bool step(double loss);
  int64_t counter() const { return counter_; }
  bool stopped() const { return stop_; }

 private:
  int64_t patience_;
  double min_delta_;
  bool has_best_ = false;
  double best_ = 0;
  int64_t counter_ = 0;
  bool stop_ = false;
};

}  // namespace balerbench
