// random_rows.h: fresh random seeds (BALERBENCH_TEST_SEED replays one) and rows like normalized data,
// for the tests of the fused engine, its loops and the thread calibration.
#pragma once

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <random>

namespace balerbench {

inline uint64_t fresh_seed() {
  if (const char* s = std::getenv("BALERBENCH_TEST_SEED")) return std::strtoull(s, nullptr, 10);
  return std::random_device{}();
}

// Rows like normalized data: in [0, 1], with a few negatives and exact zeros (ReLU's kink).
inline at::Tensor random_rows(int64_t rows, int64_t features, at::ScalarType dtype, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  at::Tensor x = at::rand({rows, features}, gen, at::TensorOptions().dtype(at::kDouble)) * 1.2 - 0.1;
  x.narrow(0, 0, std::min<int64_t>(rows, 3)).zero_();
  return x.to(dtype);
}

}  // namespace balerbench
