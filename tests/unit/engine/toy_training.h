// toy_training.h: the data and read-outs the trainer's tests share (test_trainer.cpp,
// test_precision.cpp): 24 correlated columns from 4 sources, in [0, 1]-ish as after normalization,
// the same for a given row count (seeded); and a training's per-epoch losses.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "harness/engine/trainer.h"

namespace balerbench::testing {

inline at::Tensor toy_data(int64_t rows, at::ScalarType dtype = at::kDouble) {
  torch::manual_seed(42);
  const at::Tensor base = torch::rand({rows, 4}, torch::kDouble);
  return torch::sigmoid(torch::matmul(base, torch::randn({4, 24}, torch::kDouble))).to(dtype);
}

inline std::vector<double> epoch_losses(const TrainResult& r) {
  std::vector<double> v;
  for (const auto& e : r.epoch_records) v.push_back(e.train_loss);
  return v;
}

}  // namespace balerbench::testing
