// test_fused_cuda_scaler.cpp: amp_fp16's loss scaling in the fused CUDA engine's kernels (reduce_mma
// unscales and flags, adam_scaled steps or skips and updates the scale, on the GradScaler's own device
// state) against GradScaler + FlatAdam as the libtorch engine steps; fresh random inputs each run (the
// seed is printed; BALERBENCH_TEST_SEED replays one). Compiled into gpu_tests only in a build with the
// engine; every test skips without a CUDA GPU. docs/fused_cuda.md lists what a GPU run must show.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>

#include "harness/engine/cuda/fused_cuda_engine.h"
#include "harness/engine/flat_adam.h"
#include "harness/engine/precision.h"
#include "tests/gpu/fused_cuda_mma_test_util.h"
#include "tests/gpu/fused_cuda_test_util.h"
#include "tests/unit/random_rows.h"

namespace balerbench {
namespace {

// (a) A clean amp_fp16 step with loss scaling at 2^8, growth_interval 1: the engine's unscaled gradient
// (forward_backward) against the reference's (GradScaler.scale, autograd in float16, unscale_), the
// loss, the engine's adam_scaled step against FlatAdam's, and the scalers: one step, none skipped, the
// scale grown to 2^9 on both sides. False, with nothing compared, when the draw sits at a kink.
bool expect_scaled_clean_step(const Case& c, LossKind loss, uint64_t seed) {
  GradScalerOptions o;
  o.init_scale = 256.0;
  o.growth_interval = 1;
  const at::Tensor x = case_rows(c.rows, c.features, seed + 1);
  auto reference = seeded_model(c, seed);
  if (kink_margin(*reference, x, kFp16.rounding) < kKinkMargin) return false;
  FlatAdam ref_opt(reference->parameters(), kLr);
  GradScaler ref_scaler(kGpu, o);
  const ReferenceStep ref = reference_step(*reference, ref_opt, x, loss,
                                           resolve_precision(Precision::kAmpFp16, at::kFloat, kGpu), &ref_scaler);
  const std::string what = "scaled by 2^8: " + case_name(kFp16, c, loss, seed);
  EXPECT_FALSE(ref.skipped) << what << ": the reference's float16 gradient overflowed at scale 2^8";
  const at::Tensor ref_params = ref_opt.flat_params().clone();

  auto model = seeded_model(c, seed);
  FlatAdam opt(model->parameters(), kLr);
  GradScaler scaler(kGpu, o);
  FusedCudaEngine engine(*model, opt, loss, c.rows, 0, Precision::kAmpFp16, &scaler);
  expect_tensor_core_status(engine, kFp16);
  EXPECT_EQ(engine.launches_per_step(), 3) << what << ": mma_step, reduce_mma, adam_scaled";
  opt.flat_grads().fill_(std::numeric_limits<float>::quiet_NaN());
  const double fused_loss = engine.forward_backward(x);
  EXPECT_EQ(scaler.found_inf().item<float>(), 0.0f) << what << ": the engine's found_inf after forward_backward";
  expect_gradient_near(opt.flat_grads(), ref.grads, kFp16.grad_tolerance, what + " (both unscaled)");
  expect_layers_near(*model, opt, opt.flat_grads(), ref.grads, what + " (both unscaled)");
  EXPECT_NEAR(fused_loss, ref.loss, kLossTolerance * std::abs(ref.loss))
      << what << ": the batch's loss (unscaled), engine vs reference (bound 1e-3 relative)";
  engine.begin_epoch();
  engine.step(x);
  EXPECT_NEAR(engine.epoch_loss_sum(), ref.loss, kLossTolerance * std::abs(ref.loss))
      << what << ": the step's loss (epoch_loss_sum) vs the reference's (bound 1e-3 relative)";
  expect_params_near(opt.flat_params(), ref_params, ref.grads, 2 * kFp16.grad_tolerance, what);
  EXPECT_EQ(opt.steps(), 1) << what << ": optimizer steps (the device's count) after one clean step";
  const GradScalerStats st = scaler.stats(), ref_st = ref_scaler.stats();
  EXPECT_EQ(st.steps, 1) << what << ": the scaler's stats().steps after one engine step";
  EXPECT_EQ(st.skipped_steps, 0) << what << ": the scaler's stats().skipped_steps after a clean step";
  EXPECT_EQ(st.scale, 512.0) << what << ": the scale after one clean step at growth_interval 1 (2^8 grown by 2)";
  EXPECT_EQ(st.scale, ref_st.scale) << what << ": the scale, the engine's scaler vs the reference GradScaler's";
  EXPECT_EQ(scaler.growth_tracker_tensor().item<int>(), ref_scaler.growth_tracker_tensor().item<int>())
      << what << ": the growth tracker, the engine's scaler vs the reference GradScaler's";
  return true;
}

// Copies of FlatAdam's parameters and moments, to compare bit for bit after a skipped step.
struct AdamState {
  at::Tensor params, exp_avg, exp_avg_sq;
};
AdamState adam_state(const FlatAdam& opt) {
  return {opt.flat_params().clone(), opt.flat_exp_avg().clone(), opt.flat_exp_avg_sq().clone()};
}
void expect_state_unchanged(const FlatAdam& opt, const AdamState& before, const std::string& what) {
  EXPECT_TRUE(at::equal(opt.flat_params(), before.params)) << what << ": the parameters moved (must stay bit for bit)";
  EXPECT_TRUE(at::equal(opt.flat_exp_avg(), before.exp_avg))
      << what << ": Adam's exp_avg moved (must stay bit for bit)";
  EXPECT_TRUE(at::equal(opt.flat_exp_avg_sq(), before.exp_avg_sq))
      << what << ": Adam's exp_avg_sq moved (must stay bit for bit)";
}

// 2^40 halved down to 2^-5 at most: far past any float16 overflow of these models' gradients.
constexpr int kMaxBackoffs = 45;

// (c)'s reference: GradScaler + FlatAdam (libtorch_engine.cpp's run) on the same batch from the same
// weights until a step is taken. Where the float16 gradient crosses 65504 the two sides may back off
// once more or less than each other (their roundings differ), so the counts agree within one; Adam's
// first step (about lr x sign(g)) hardly depends on the scale it was taken at.
void expect_backoff_as_reference(const Case& c, LossKind loss, uint64_t seed, const at::Tensor& x,
                                 const GradScalerOptions& o, int64_t skipped, const at::Tensor& params,
                                 const std::string& what) {
  auto reference = seeded_model(c, seed);
  FlatAdam ref_opt(reference->parameters(), kLr);
  GradScaler ref_scaler(kGpu, o);
  const PrecisionPolicy policy = resolve_precision(Precision::kAmpFp16, at::kFloat, kGpu);
  ReferenceStep ref;
  int64_t ref_skipped = 0;
  for (int i = 0; i < kMaxBackoffs; ++i) {
    ref = reference_step(*reference, ref_opt, x, loss, policy, &ref_scaler);
    if (!ref.skipped) break;
    ++ref_skipped;
  }
  std::printf("%s: %lld steps skipped before the first clean one (reference %lld)\n", what.c_str(),
              static_cast<long long>(skipped), static_cast<long long>(ref_skipped));
  ASSERT_FALSE(ref.skipped) << what << ": the reference took no step within " << kMaxBackoffs << " back-offs";
  EXPECT_LE(std::llabs(ref_skipped - skipped), 1)
      << what << ": steps skipped before the first clean one, engine " << skipped << " vs reference " << ref_skipped;
  EXPECT_EQ(ref_opt.steps(), 1) << what << ": the reference's optimizer steps";
  expect_params_near(params, ref_opt.flat_params(), ref.grads, 2 * kFp16.grad_tolerance,
                     what + ", after the first clean step");
}

// (b) amp_fp16 at scale 2^40: the float16 gradient overflows and the step is skipped: parameters and
// Adam's moments bit for bit unchanged, stats() one step and one skipped, the scale halved (2^39), no
// optimizer step counted. (c) The steps that follow on the same batch back off again, each leaving
// everything unchanged, until the scale lets the gradient through; that one is taken: one optimizer
// step, the scale 2^40 x 0.5^skipped, the parameters as the reference's. False at a kink.
bool expect_overflow_backs_off(const Case& c, LossKind loss, uint64_t seed) {
  const at::Tensor x = case_rows(c.rows, c.features, seed + 1);
  auto model = seeded_model(c, seed);
  if (kink_margin(*model, x, kFp16.rounding) < kKinkMargin) return false;
  GradScalerOptions o;
  o.init_scale = std::ldexp(1.0, 40);
  FlatAdam opt(model->parameters(), kLr);
  GradScaler scaler(kGpu, o);
  FusedCudaEngine engine(*model, opt, loss, c.rows, 0, Precision::kAmpFp16, &scaler);
  const std::string what = "scaled by 2^40: " + case_name(kFp16, c, loss, seed);
  const AdamState before = adam_state(opt);
  engine.begin_epoch();
  engine.step(x);
  engine.epoch_loss_sum();  // waits for the step and reads the device's count of Adam's steps
  expect_state_unchanged(opt, before, what + ", (b) the overflowing step");
  const GradScalerStats st = scaler.stats();
  EXPECT_EQ(st.steps, 1) << what << ": (b) the scaler's stats().steps";
  EXPECT_EQ(st.skipped_steps, 1) << what << ": (b) the scaler's stats().skipped_steps";
  EXPECT_EQ(st.scale, std::ldexp(1.0, 39)) << what << ": (b) the scale after the skipped step (2^40 halved)";
  EXPECT_EQ(opt.steps(), 0) << what << ": (b) optimizer steps after the skipped step";
  int64_t skipped = 1;
  while (opt.steps() == 0 && skipped < kMaxBackoffs) {
    engine.step(x);
    engine.epoch_loss_sum();
    if (opt.steps() != 0) break;
    ++skipped;
    expect_state_unchanged(opt, before, what + ", (c) skipped step " + std::to_string(skipped));
  }
  EXPECT_EQ(opt.steps(), 1) << what << ": (c) optimizer steps after the first clean step (none within " << kMaxBackoffs
                            << " back-offs if 0)";
  const GradScalerStats after = scaler.stats();
  EXPECT_EQ(after.skipped_steps, skipped) << what << ": (c) the scaler's skipped steps vs the engine's count";
  EXPECT_EQ(after.steps, skipped + 1) << what << ": (c) the scaler's steps";
  EXPECT_EQ(after.scale, std::ldexp(1.0, 40 - static_cast<int>(skipped)))
      << what << ": (c) the scale, 2^40 x 0.5^skipped";
  expect_backoff_as_reference(c, loss, seed, x, o, skipped, opt.flat_params(), what);
  return true;
}

TEST(FusedCudaMma, Fp16ScaledCleanStepMatchesGradScalerAndAdam) {
  REQUIRE_FUSED_CUDA();
  uint64_t seed = fresh_seed();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  for (const Case& c : {Case{"AE", 24, 100}, Case{"FPGA_prototype_model", 13, 33}})
    for (LossKind loss : {LossKind::kBalerSum, LossKind::kMseMean})
      draw_until_taken(&seed, [&](uint64_t s) { return expect_scaled_clean_step(c, loss, s); },
                       "scaled by 2^8: " + case_name(kFp16, c, loss, seed));
}

TEST(FusedCudaMma, Fp16OverflowSkipsTheStepThenBacksOffToACleanOne) {
  REQUIRE_FUSED_CUDA();
  uint64_t seed = fresh_seed();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  for (LossKind loss : {LossKind::kBalerSum, LossKind::kMseMean}) {
    const Case c{"AE", 24, 100};
    draw_until_taken(&seed, [&](uint64_t s) { return expect_overflow_backs_off(c, loss, s); },
                     "scaled by 2^40: " + case_name(kFp16, c, loss, seed));
  }
}

}  // namespace
}  // namespace balerbench
