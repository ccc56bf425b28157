// training_defaults.h: the defaults of Baler's training loop, in one place: TrainSettings'
// (train_settings.h), and so what a config file leaves out (Baler's template) and what the trainer
// runs with when a caller sets nothing. The parser's bounds (kMaxBatchSize) live here too.
#pragma once

#include <cstdint>

namespace balerbench::training_defaults {

inline constexpr int64_t kEpochs = 5;
inline constexpr int64_t kBatchSize = 512;
// The largest batch a config may ask for (2^31 - 1 rows): a batch larger than the training rows trains
// on all of them at once, and row counts beyond this would overflow the step's index arithmetic.
inline constexpr int64_t kMaxBatchSize = 2147483647;
inline constexpr double kLr = 1e-3;
inline constexpr bool kShuffle = false;
inline constexpr bool kEarlyStopping = true;
inline constexpr int64_t kEarlyStoppingPatience = 100;
inline constexpr double kMinDelta = 0.0;
inline constexpr bool kLrScheduler = true;
inline constexpr int64_t kLrSchedulerPatience = 50;
inline constexpr const char* kProgress = "auto";

}  // namespace balerbench::training_defaults
