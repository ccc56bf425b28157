// split.h: the training and validation rows of a dataset, as Baler's train_test_split draws them
// (a seeded shuffle; sklearn's exact permutation is numpy's, not ours).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <utility>

namespace balerbench {

// The seeded permutation of n rows that split() draws, as an index on `device` (the data's).
at::Tensor split_permutation(int64_t n, uint64_t seed, c10::Device device);
// x: (N, F) -> training rows and validation rows (the first ceil(test_size * N) of the permutation);
// validation undefined when test_size is 0. InputError when no training rows would be left.
std::pair<at::Tensor, at::Tensor> split(const at::Tensor& x, double test_size, uint64_t seed);

}  // namespace balerbench
