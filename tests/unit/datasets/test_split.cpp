// test_split.cpp: the train/validation split of datasets/split.h, on the CPU (tests/gpu runs it on
// CUDA).
#include <gtest/gtest.h>

#include <torch/torch.h>

#include "datasets/split.h"

namespace balerbench {
namespace {

// The validation split's index is built on the data's device (on CUDA a CPU index fails in
// index_select). The meta device stands in for a GPU here; tests/gpu runs the split on CUDA.
TEST(Split, IndexIsOnTheDataDevice) {
  const c10::Device meta(c10::kMeta);
  EXPECT_EQ(split_permutation(50, 3, meta).device(), meta);
  const at::Tensor cpu = split_permutation(50, 3, c10::Device(c10::kCPU));
  EXPECT_EQ(cpu.device(), c10::Device(c10::kCPU));
  EXPECT_TRUE(at::equal(std::get<0>(cpu.sort()), at::arange(50, at::kLong)));  // a permutation
  torch::manual_seed(42);
  const at::Tensor x = torch::rand({50, 24}, torch::kDouble);
  const auto [train, val] = split(x, 0.2, 3);
  EXPECT_EQ(train.size(0), 40);
  EXPECT_EQ(val.size(0), 10);
  EXPECT_TRUE(at::equal(val, x.index_select(0, cpu.narrow(0, 0, 10))));
}

}  // namespace
}  // namespace balerbench
