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
// The validation rows split() takes of `rows` (ceil(test_size * rows); 0 when test_size is 0), with
// its InputError when no training row would be left: a sweep asks once, before any trial.
int64_t validation_rows(int64_t rows, double test_size);

}  // namespace balerbench
