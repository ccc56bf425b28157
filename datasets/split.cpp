// split.cpp: see split.h.
#include "datasets/split.h"

#include <ATen/ATen.h>

#include <cmath>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.h"

namespace balerbench {

at::Tensor split_permutation(int64_t n, uint64_t seed, c10::Device device) {
  std::vector<int64_t> idx(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) idx[i] = i;
  std::mt19937_64 rng(seed + 1);
  for (int64_t i = n - 1; i > 0; --i) std::swap(idx[i], idx[rng() % static_cast<uint64_t>(i + 1)]);
  return at::tensor(idx, at::kLong).to(device);  // index_select wants the index on the data's device
}

// (N, F) split into train and validation rows with a seeded shuffle (sklearn's
// train_test_split shuffles too; its exact permutation is numpy's, not ours).
int64_t validation_rows(int64_t rows, double test_size) {
  if (test_size <= 0) return 0;
  const auto n_val = static_cast<int64_t>(std::ceil(test_size * static_cast<double>(rows)));
  if (n_val >= rows) {
    std::ostringstream size;
    size << test_size;
    throw InputError("test_size " + size.str() + " leaves no training rows out of " + std::to_string(rows) +
                         " (the validation takes ceil(test_size x rows) = " + std::to_string(n_val) + ")",
                     "lower test_size, or use more rows");
  }
  return n_val;
}

std::pair<at::Tensor, at::Tensor> split(const at::Tensor& x, double test_size, uint64_t seed) {
  if (test_size <= 0) return {x, at::Tensor()};
  const int64_t n = x.size(0);
  const int64_t n_val = validation_rows(n, test_size);
  const at::Tensor perm = split_permutation(n, seed, x.device());
  return {x.index_select(0, perm.narrow(0, n_val, n - n_val)), x.index_select(0, perm.narrow(0, 0, n_val))};
}

}  // namespace balerbench
