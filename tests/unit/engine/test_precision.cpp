// test_precision.cpp: precision policies, autocast, the GradScaler, the
// capturable Adam path, per-phase timing and the numerics across precisions,
// all on the CPU.
#include <gtest/gtest.h>

#include <ATen/record_function.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include <unistd.h>

#include "common/error.h"
#include "datasets/normalizer.h"
#include "datasets/synthetic.h"
#include "harness/engine/flat_adam.h"
#include "harness/engine/phase_timer.h"
#include "harness/engine/precision.h"
#include "harness/engine/torch_compat.h"
#include "harness/engine/trainer.h"
#include "models/autoencoder.h"
#include "tests/unit/engine/toy_training.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

using testing::epoch_losses;
using testing::toy_data;

const c10::Device kCpu(c10::kCPU);

TrainOptions quiet(int64_t epochs, int64_t batch, const PrecisionPolicy& p) {
  TrainOptions o;
  o.epochs = epochs;
  o.batch_size = batch;
  o.progress = "none";
  o.precision = p;
  return o;
}

std::shared_ptr<AutoEncoder> model_for(const PrecisionPolicy& p, uint64_t seed = 0) {
  torch::manual_seed(seed);
  auto m = make_model("AE", 24, 15);
  m->to(p.param_dtype);
  return m;
}

// ---- policies ----

TEST(Precision, PoliciesAndTheirDtypes) {
  const PrecisionPolicy a = resolve_precision(Precision::kAuto, at::kDouble, kCpu);
  EXPECT_EQ(a.mode, Precision::kFp64);
  EXPECT_STREQ(a.name(), "fp64");
  EXPECT_EQ(a.param_dtype, at::kDouble);
  EXPECT_EQ(resolve_precision(Precision::kAuto, at::kFloat, kCpu).mode, Precision::kFp32);
  const PrecisionPolicy f = resolve_precision(Precision::kFp32, at::kDouble, kCpu);
  EXPECT_EQ(f.param_dtype, at::kFloat);
  EXPECT_EQ(f.data_dtype, at::kFloat);
  EXPECT_FALSE(f.autocast);
  const PrecisionPolicy b = resolve_precision(Precision::kAmpBf16, at::kDouble, kCpu);
  EXPECT_EQ(b.param_dtype, at::kFloat);  // float32 master weights
  EXPECT_EQ(b.data_dtype, at::kFloat);
  EXPECT_EQ(b.compute_dtype, at::kBFloat16);
  EXPECT_TRUE(b.autocast);
  EXPECT_FALSE(b.loss_scaling);
  EXPECT_EQ(b.to_json()["compute_dtype"], "bfloat16");
  // On CUDA (not available here, but the policy is pure): amp_fp16 scales, noscale does not, tf32 is float32.
  const c10::Device cuda(c10::kCUDA, 0);
  EXPECT_TRUE(resolve_precision(Precision::kAmpFp16, at::kDouble, cuda).loss_scaling);
  EXPECT_FALSE(resolve_precision(Precision::kAmpFp16NoScale, at::kDouble, cuda).loss_scaling);
  EXPECT_EQ(resolve_precision(Precision::kAmpFp16, at::kDouble, cuda).compute_dtype, at::kHalf);
  EXPECT_TRUE(resolve_precision(Precision::kTf32, at::kDouble, cuda).tf32);
}

TEST(Precision, Float16AndTf32AreRefusedOnTheCpuWithAHint) {
  expect_input_error([] { resolve_precision(Precision::kAmpFp16, at::kDouble, kCpu); }, "use amp_bf16 on the CPU");
  expect_input_error([] { resolve_precision(Precision::kAmpFp16NoScale, at::kDouble, kCpu); }, "needs a CUDA device");
  expect_input_error([] { resolve_precision(Precision::kTf32, at::kDouble, kCpu); }, "use fp32 on the CPU");
  expect_input_error([] { parse_precision("fp8", "/precision"); }, "one of: auto, fp64");
}

TEST(Precision, AutocastScopeCastsMatmulsToBfloat16AndRestores) {
  const at::Tensor a = torch::randn({8, 8}), w = torch::randn({8, 8});
  EXPECT_FALSE(autocast_enabled(c10::DeviceType::CPU));
  {
    AutocastScope outer(c10::DeviceType::CPU, at::kBFloat16);
    EXPECT_TRUE(autocast_enabled(c10::DeviceType::CPU));
    EXPECT_EQ(at::linear(a, w).scalar_type(), at::kBFloat16);
    EXPECT_EQ((a + w).scalar_type(), at::kFloat);  // not on autocast's lower-precision list
    {
      AutocastScope off(c10::DeviceType::CPU, at::kBFloat16, /*enabled=*/false);
      EXPECT_TRUE(autocast_enabled(c10::DeviceType::CPU));  // a disabled scope changes nothing
    }
    EXPECT_EQ(autocast_dtype(c10::DeviceType::CPU), at::kBFloat16);
  }
  EXPECT_FALSE(autocast_enabled(c10::DeviceType::CPU));
  EXPECT_EQ(at::linear(a, w).scalar_type(), at::kFloat);
}

// ---- GradScaler (tensor-op path, as on every device but CUDA) ----

TEST(GradScaler, ScalesUnscalesAndFlagsInfAndNaN) {
  GradScaler s(kCpu);
  EXPECT_FALSE(s.fused());
  EXPECT_EQ(s.scale(torch::full({}, 0.5)).item<double>(), 0.5 * 65536);
  at::Tensor g = torch::tensor({65536.0f, -131072.0f, 3.0f});
  s.unscale_(g);
  EXPECT_EQ(s.found_inf().item<float>(), 0.0f);
  EXPECT_FLOAT_EQ(g[0].item<float>(), 1.0f);
  EXPECT_FLOAT_EQ(g[1].item<float>(), -2.0f);
  EXPECT_FLOAT_EQ(g[2].item<float>(), 3.0f / 65536.0f);
  for (float bad : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                    std::numeric_limits<float>::quiet_NaN()}) {
    at::Tensor h = torch::tensor({1.0f, bad, 2.0f});
    s.unscale_(h);
    EXPECT_EQ(s.found_inf().item<float>(), 1.0f) << bad;
  }
  at::Tensor ok = torch::ones({3});
  s.unscale_(ok);  // the flag is reset by every unscale
  EXPECT_EQ(s.found_inf().item<float>(), 0.0f);
}

// Drives update() with a pattern of clean (.) and inf (x) steps and checks the
// scale after each against PyTorch's rule, computed by hand.
TEST(GradScaler, BackoffAndGrowthFollowPyTorchExactly) {
  GradScalerOptions o;
  o.growth_interval = 3;
  GradScaler s(kCpu, o);
  const std::string pattern = "..x...x.....x";
  //                          scale after each step (init 65536, growth every 3 clean, backoff 0.5):
  const std::vector<double> expected = {65536, 65536, 32768, 32768, 32768, 65536, 32768,
                                        32768, 32768, 65536, 65536, 65536, 32768};
  at::Tensor clean = torch::ones({4}), bad = torch::tensor({1.0f, NAN, 1.0f, 1.0f});
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    at::Tensor g = (pattern[i] == 'x' ? bad : clean).clone();
    s.unscale_(g);
    s.update();
    EXPECT_EQ(s.scale_tensor().item<double>(), expected[i]) << "step " << i;
  }
  const GradScalerStats st = s.stats();
  EXPECT_EQ(st.steps, 13);
  EXPECT_EQ(st.skipped_steps, 3);
  EXPECT_EQ(st.growths, 2);
  EXPECT_EQ(st.scale, 32768);
}

TEST(GradScaler, DefaultGrowsOnceAfter2000CleanSteps) {
  GradScaler s(kCpu);
  at::Tensor g = torch::ones({2});
  for (int i = 0; i < 1999; ++i) {
    s.unscale_(g);
    s.update();
  }
  EXPECT_EQ(s.stats().scale, 65536);
  s.unscale_(g);
  s.update();
  EXPECT_EQ(s.stats().scale, 131072);
  EXPECT_EQ(s.stats().growths, 1);
}

TEST(GradScaler, NoGrowthPastFloatMaxButTrackerResets) {
  GradScalerOptions o;
  o.init_scale = 2e38;  // x2 overflows float32
  o.growth_interval = 1;
  GradScaler s(kCpu, o);
  at::Tensor g = torch::ones({1});
  s.unscale_(g);
  s.update();
  EXPECT_FLOAT_EQ(static_cast<float>(s.stats().scale), 2e38f);
  EXPECT_EQ(s.stats().growths, 0);
}

TEST(GradScaler, RejectsBadOptionsAndFusedOffCuda) {
  GradScalerOptions o;
  o.backoff_factor = 1.5;
  EXPECT_THROW(GradScaler(kCpu, o), InputError);
  EXPECT_THROW(GradScaler(kCpu, {}, /*fused=*/1), InputError);
}

// ---- FlatAdam: the capturable path and skipped steps ----

TEST(FlatAdam, CapturablePathMatchesTheFusedCpuLoop) {
  for (auto dtype : {at::kDouble, at::kFloat}) {
    torch::manual_seed(3);
    at::Tensor p1 = torch::randn({100}, dtype), p2 = p1.clone();
    FlatAdam fused({p1}, 1e-2), capt({p2}, 1e-2, 0.9, 0.999, 1e-8, /*capturable=*/true);
    ASSERT_FALSE(fused.capturable());
    ASSERT_TRUE(capt.capturable());
    for (int i = 0; i < 50; ++i) {
      const at::Tensor g = torch::randn({100}, dtype);
      fused.flat_grads().copy_(g);
      capt.flat_grads().copy_(g);
      if (i == 20) {
        fused.set_lr(5e-3);
        capt.set_lr(5e-3);
      }
      fused.step();
      capt.step();
    }
    const double tol = dtype == at::kDouble ? 1e-12 : 1e-5;
    EXPECT_LT((fused.flat_params() - capt.flat_params()).abs().max().item<double>(), tol) << dtype;
    EXPECT_EQ(capt.steps(), 50);
  }
}

TEST(FlatAdam, AStepWithFoundInfChangesNothingOnBothPaths) {
  for (bool capturable : {false, true}) {
    torch::manual_seed(4);
    at::Tensor p = torch::randn({10});
    FlatAdam opt({p}, 1e-2, 0.9, 0.999, 1e-8, capturable);
    opt.flat_grads().copy_(torch::randn({10}));
    opt.step(torch::zeros({1}));  // a clean step counts
    const at::Tensor before = opt.flat_params().clone();
    opt.flat_grads().fill_(NAN);
    opt.step(torch::ones({1}));
    EXPECT_TRUE(torch::equal(opt.flat_params(), before)) << capturable;
    EXPECT_EQ(opt.steps(), 1) << capturable;
    // The next clean step is the second Adam step (bias corrections of step 2), not NaN-poisoned.
    opt.flat_grads().copy_(torch::randn({10}));
    opt.step(torch::zeros({1}));
    EXPECT_TRUE(torch::isfinite(opt.flat_params()).all().item<bool>());
    EXPECT_EQ(opt.steps(), 2);
  }
}

// Records every ATen operator called on this thread, with whether any input is float64.
class OpRecorder {
 public:
  OpRecorder() {
    ops().clear();
    handle_ = at::addThreadLocalCallback(at::RecordFunctionCallback(&OpRecorder::on_start).needsInputs(true));
  }
  ~OpRecorder() { at::removeCallback(handle_); }
  struct Op {
    std::string name;
    bool float64 = false;
  };
  static std::vector<Op>& ops() {
    static std::vector<Op> v;
    return v;
  }

 private:
  static std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
    Op op{fn.name(), false};
    // A Python-style scalar (0.9 in `m * 0.9`) becomes a float64 "wrapped number" on the CPU; on
    // CUDA it is a kernel argument, not a float64 kernel, so it does not count.
    for (const c10::IValue& v : fn.inputs())
      if (v.isTensor() && v.toTensor().defined() && v.toTensor().scalar_type() == at::kDouble &&
          !v.toTensor().unsafeGetTensorImpl()->is_wrapped_number())
        op.float64 = true;
    ops().push_back(op);
    return nullptr;
  }
  at::CallbackHandle handle_;
};

// The optimiser and loss-scaling path that CUDA runs (capturable FlatAdam, GradScaler on tensor
// ops), here on the CPU: a float32 step calls no float64 operator (Nsight found float64 fill, add,
// pow and sqrt kernels in every float32 step on an H100). The operator counts (nested ones included)
// are printed for the record.
TEST(FlatAdam, Float32DeviceStepCallsNoFloat64Operator) {
  torch::manual_seed(5);
  at::Tensor p = torch::randn({1000});
  FlatAdam opt({p}, 1e-3, 0.9, 0.999, 1e-8, /*capturable=*/true);
  GradScaler scaler(kCpu, {}, /*fused=*/0);
  opt.flat_grads().copy_(torch::randn({1000}));
  opt.step();  // the first step allocates nothing observed below either, but keep it out
  std::size_t adam_ops = 0, scaler_ops = 0;
  {
    OpRecorder rec;
    opt.step();
    adam_ops = OpRecorder::ops().size();
    at::Tensor g = opt.flat_grads();
    scaler.unscale_(g);
    opt.step(scaler.found_inf());
    scaler.update();
    scaler_ops = OpRecorder::ops().size() - adam_ops;
    for (const auto& op : OpRecorder::ops()) EXPECT_FALSE(op.float64) << op.name << " has a float64 input";
  }
  ASSERT_GT(adam_ops, 0u) << "no operator observed: RecordFunction is off in this LibTorch";
  EXPECT_EQ(scaler.stats().skipped_steps, 0);
  EXPECT_EQ(opt.steps(), 3);
  std::printf("operators: plain FlatAdam step %zu; unscale + masked step + update %zu\n", adam_ops, scaler_ops);
}

// ---- training under the policies ----

TEST(PrecisionTraining, LossScalingByPowersOfTwoIsExactOnFloat32) {
  // A GradScaler on fp32 (what amp_fp16 adds, minus float16): scaling by 2^16 and
  // unscaling are exact, so every loss is bit-identical to unscaled training.
  PrecisionPolicy plain = resolve_precision(Precision::kFp32, at::kDouble, kCpu), scaled = plain;
  scaled.loss_scaling = true;
  const at::Tensor x = toy_data(1000, at::kFloat);
  auto a = model_for(plain), b = model_for(scaled);
  const TrainResult ra = fit(*a, x, {}, quiet(3, 128, plain));
  const TrainResult rb = fit(*b, x, {}, quiet(3, 128, scaled));
  EXPECT_EQ(epoch_losses(ra), epoch_losses(rb));
  EXPECT_TRUE(rb.loss_scaling);
  EXPECT_EQ(rb.scaler.skipped_steps, 0);
  EXPECT_EQ(rb.scaler.steps, 3 * 8);
  EXPECT_EQ(rb.epoch_records.back().loss_scale, 65536);
}

TEST(PrecisionTraining, OverflowingScaleSkipsStepsAndBacksOff) {
  PrecisionPolicy p = resolve_precision(Precision::kFp32, at::kDouble, kCpu);
  p.loss_scaling = true;
  TrainOptions o = quiet(2, 100, p);
  o.grad_scaler.init_scale = 1e38;  // the scaled loss's gradients overflow float32 at first
  const at::Tensor x = toy_data(1000, at::kFloat);
  auto m = model_for(p);
  const at::Tensor before = torch::cat({m->parameters()[0].flatten().clone()});
  const TrainResult r = fit(*m, x, {}, o);
  EXPECT_GT(r.scaler.skipped_steps, 0);
  EXPECT_LT(r.scaler.skipped_steps, r.scaler.steps);  // it recovers
  EXPECT_DOUBLE_EQ(r.scaler.scale,
                   static_cast<double>(static_cast<float>(1e38 * std::pow(0.5, r.scaler.skipped_steps))));
  EXPECT_EQ(r.epoch_records.back().skipped_steps, r.scaler.skipped_steps);
  for (const auto& e : r.epoch_records) EXPECT_TRUE(std::isfinite(e.train_loss));
  EXPECT_FALSE(torch::equal(before, m->parameters()[0].flatten()));  // the clean steps trained
  for (const auto& t : m->parameters()) EXPECT_TRUE(torch::isfinite(t).all().item<bool>());
}

TEST(PrecisionTraining, RefusesAModelInTheWrongDtype) {
  const PrecisionPolicy p = resolve_precision(Precision::kFp32, at::kDouble, kCpu);
  torch::manual_seed(0);
  auto m = make_model("AE", 24, 15);  // float64
  expect_input_error([&] { fit(*m, toy_data(100, at::kFloat), {}, quiet(1, 32, p)); }, "precision fp32 trains float32");
}

// Under AddressSanitizer (scripts/sanitize.sh asan) the long numerics checks skip: ASan adds nothing
// to them, and the plain suite runs them.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BALERBENCH_TEST_UNDER_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define BALERBENCH_TEST_UNDER_ASAN 1
#endif

// Numerics: fp64, fp32 and amp_bf16 from the same initial weights on the same data, over five
// initial weights (seeds 0-4). What each kernel must give (README "Precision"):
// - the first epoch, before rounding differences compound: fp32 within 1e-4 and amp_bf16 within 2%
//   of fp64, seed by seed;
// - every run trains (its last loss under a tenth of its first);
// - after 30 epochs, the mean last loss over the seeds within 12% (fp32) and 21% (amp_bf16) of
//   fp64's.
// Thirty epochs of Adam are chaotic: one seed's last loss moves with the summation order of the
// BLAS kernel. Measured on 10 seeds x 2 OpenBLAS kernels (Cooperlake and the generic Prescott, AMD
// EPYC family 25): one seed's fp32/fp64 ratio ranged 0.917-1.100 (the single-seed test this
// replaces asked 5% and failed on Prescott at 0.941), amp_bf16/fp64 0.886-1.422. The last loss's
// seed-to-seed spread is 6.4% (fp64, sd/mean) and 14% (amp_bf16): the difference of two means of
// five has a standard error of 4.0% (fp32) and 6.9% (amp_bf16); the tolerances are three of
// them. The means of five ranged 0.988-1.036 (fp32) and 1.029-1.094 (amp_bf16) over both kernels
// and both halves of the 10 seeds. Fp32OnTheGenericKernel runs the same test on the generic kernel.
TEST(PrecisionNumerics, Fp64Fp32AndBf16ReachTheSameLoss) {
#ifdef BALERBENCH_TEST_UNDER_ASAN
  GTEST_SKIP() << "30 epochs in each precision: the sanitizer build adds nothing to it (the plain suite runs it)";
#endif
  const SyntheticData d = generate_cms_like(4000, 1);
  const at::Tensor raw = torch::tensor(d.values, torch::kDouble).reshape({d.shape[0], d.shape[1]});
  const at::Tensor x64 = Normalization::fit(raw).apply(raw);
  std::map<std::string, double> mean_last;
  constexpr int kSeeds = 5;
  for (uint64_t seed = 0; seed < kSeeds; ++seed) {
    std::map<std::string, std::vector<double>> l;
    for (const char* name : {"fp64", "fp32", "amp_bf16"}) {
      const PrecisionPolicy p = resolve_precision(parse_precision(name, "test"), at::kDouble, kCpu);
      auto m = model_for(p, seed);
      l[name] = epoch_losses(fit(*m, x64.to(p.data_dtype), {}, quiet(30, 128, p)));
      std::printf("seed %d %-9s first %.6f last %.6f\n", static_cast<int>(seed), name, l[name].front(),
                  l[name].back());
      EXPECT_LT(l[name].back(), 0.1 * l[name].front()) << name << " seed " << seed;  // it trained
      mean_last[name] += l[name].back() / kSeeds;
    }
    EXPECT_NEAR(l["fp32"].front() / l["fp64"].front(), 1.0, 1e-4) << "seed " << seed;
    EXPECT_NEAR(l["amp_bf16"].front() / l["fp64"].front(), 1.0, 0.02) << "seed " << seed;
  }
  std::printf("mean last loss: fp64 %.6f, fp32 %.6f (x%.3f), amp_bf16 %.6f (x%.3f)\n", mean_last["fp64"],
              mean_last["fp32"], mean_last["fp32"] / mean_last["fp64"], mean_last["amp_bf16"],
              mean_last["amp_bf16"] / mean_last["fp64"]);
  EXPECT_NEAR(mean_last["fp32"] / mean_last["fp64"], 1.0, 0.12);
  EXPECT_NEAR(mean_last["amp_bf16"] / mean_last["fp64"], 1.0, 0.21);
}

// The same tolerances on OpenBLAS's generic kernel, whatever kernel this machine picks: the test
// above, in a child process of this program with OPENBLAS_CORETYPE=Prescott (the kernel Debian's
// OpenBLAS 0.3.21 falls back to on CPUs newer than itself).
TEST(PrecisionNumerics, Fp32OnTheGenericKernelReachesTheSameLoss) {
  if (std::getenv("OPENBLAS_CORETYPE")) GTEST_SKIP() << "OPENBLAS_CORETYPE is set: the test above ran on it";
#ifdef BALERBENCH_TEST_UNDER_ASAN
  GTEST_SKIP() << "a numerics check of OpenBLAS's kernel: the sanitizer build adds nothing to it (the plain suite runs it)";
#endif
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  ASSERT_GT(n, 0);
  self[n] = '\0';
  const CommandResult r = run_command(std::string("OPENBLAS_CORETYPE=Prescott OPENBLAS_VERBOSE=2 '") + self +
                                      "' --gtest_filter=PrecisionNumerics.Fp64Fp32AndBf16ReachTheSameLoss");
  std::printf("%s", r.out.c_str());
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("Core: Prescott"), std::string::npos) << "the child did not run the generic kernel";
  EXPECT_NE(r.out.find("[  PASSED  ] 1 test"), std::string::npos);
}

// The AE in float32 against a float64 reference forward pass of the same weights:
// relative L2 error under 1e-5 (float32 rounding through 8 layers is ~1e-7).
TEST(PrecisionNumerics, Float32ForwardMatchesFloat64Reference) {
  torch::manual_seed(11);
  auto ref = make_model("AE", 24, 15);  // float64
  torch::manual_seed(11);
  auto f32 = make_model("AE", 24, 15);
  f32->to(at::kFloat);
  const at::Tensor x = toy_data(5000);
  torch::NoGradGuard g;
  const at::Tensor y64 = ref->forward(x);
  const at::Tensor y32 = f32->forward(x.to(at::kFloat)).to(at::kDouble);
  const double rel = ((y32 - y64).norm() / y64.norm()).item<double>();
  EXPECT_LT(rel, 1e-5);
  EXPECT_GT(rel, 0);  // really computed in float32
  // bf16 autocast: the same forward within bf16's 8-bit mantissa (~1e-2).
  AutocastScope ac(c10::DeviceType::CPU, at::kBFloat16);
  const at::Tensor yb = f32->forward(x.to(at::kFloat)).to(at::kDouble);
  const double rel_b = ((yb - y64).norm() / y64.norm()).item<double>();
  EXPECT_LT(rel_b, 3e-2);
  EXPECT_GT(rel_b, 1e-4);
}

// ---- phase timing ----

TEST(PhaseTiming, ProfiledFitCountsEveryPhaseOfEveryBatch) {
  const PrecisionPolicy p = resolve_precision(Precision::kFp32, at::kDouble, kCpu);
  TrainOptions o = quiet(2, 100, p);
  o.profile = true;
  const at::Tensor x = toy_data(1050, at::kFloat);  // 11 batches, the last short
  auto m = model_for(p);
  const at::Tensor val = toy_data(200, at::kFloat);
  const TrainResult r = fit(*m, x, val, o);
  ASSERT_TRUE(r.profiled);
  for (Phase ph : {Phase::kData, Phase::kEncode, Phase::kDecode, Phase::kLoss, Phase::kBackward, Phase::kOptimizer})
    EXPECT_EQ(r.phases[ph].count, 22) << phase_name(ph);
  EXPECT_EQ(r.phases[Phase::kEvaluation].count, 2);
  EXPECT_EQ(r.phases[Phase::kCompress].count, 0);
  EXPECT_GT(r.phases[Phase::kBackward].duration_s, 0);
  EXPECT_LE(r.phases.sum_s(), r.duration_s);
  EXPECT_EQ(r.phases.to_json().size(), 7u);
  // Unprofiled: nothing timed, same losses (the timers do not touch the numbers).
  o.profile = false;
  auto m2 = model_for(p);
  const TrainResult r2 = fit(*m2, x, val, o);
  EXPECT_EQ(r2.phases.sum_s(), 0);
  EXPECT_EQ(epoch_losses(r2), epoch_losses(r));
}

TEST(PhaseTiming, ADisabledTimerRecordsNothing) {
  PhaseTimer t(kCpu, false, true);
  { PhaseTimer::Scope s(t, Phase::kBackward); }
  EXPECT_EQ(t.totals()[Phase::kBackward].count, 0);
  PhaseTimer on(kCpu, true, false);  // sync off on the CPU: the host clock all the same
  { PhaseTimer::Scope s(on, Phase::kBackward); }
  EXPECT_EQ(on.totals()[Phase::kBackward].count, 1);
}

TEST(TorchCompat, VersionAndBuild) {
  EXPECT_FALSE(torch_version_string().empty());
  if (!built_with_cuda()) EXPECT_THROW(synchronize_device(c10::Device(c10::kCUDA, 0)), std::runtime_error);
  EXPECT_NO_THROW(synchronize_device(kCpu));
}

}  // namespace
}  // namespace balerbench
