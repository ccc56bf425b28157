// test_gpu.cpp: what only a CUDA GPU can check (ctest label `gpu`): float16
// autocast with and without loss scaling, CUDA graph replay against eager
// steps, TF32, the fused GradScaler kernels, and event timing. Every test
// skips cleanly when no GPU is visible (or this LibTorch has no CUDA).
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <algorithm>
#include <cmath>

#include "datasets/normalizer.h"
#include "datasets/synthetic.h"
#include "harness/engine/flat_adam.h"
#include "datasets/split.h"
#include "harness/engine/runtime.h"
#include "harness/run/run_config.h"
#include "harness/engine/phase_timer.h"
#include "harness/engine/precision.h"
#include "harness/engine/torch_compat.h"
#include "harness/engine/trainer.h"
#include "models/autoencoder.h"

namespace balerbench {
namespace {

#define REQUIRE_GPU()                                                                   \
  do {                                                                                  \
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA GPU visible to LibTorch"; \
  } while (0)

const c10::Device kGpu(c10::kCUDA, 0);

at::Tensor cms(int64_t rows) {
  const SyntheticData d = generate_cms_like(rows, 1);
  const at::Tensor raw = torch::tensor(d.values, torch::kDouble).reshape({d.shape[0], d.shape[1]});
  return Normalization::fit(raw).apply(raw);
}

struct GpuRun {
  TrainResult result;
  std::vector<double> losses;
  at::Tensor params;
};

GpuRun train(const std::string& precision, int64_t epochs, bool graphs, const at::Tensor& x64, int64_t batch = 512,
             uint64_t seed = 7) {
  const PrecisionPolicy p = resolve_precision(parse_precision(precision, "test"), at::kDouble, kGpu);
  torch::manual_seed(seed);
  auto m = make_model("AE", 24, 15);
  m->to(kGpu, p.param_dtype);
  TrainOptions o;
  o.epochs = epochs;
  o.batch_size = batch;
  o.progress = "none";
  o.precision = p;
  o.cuda_graphs = graphs;
  GpuRun r;
  r.result = fit(*m, x64.to(kGpu, p.data_dtype), {}, o);
  for (const auto& e : r.result.epoch_records) r.losses.push_back(e.train_loss);
  std::vector<at::Tensor> flat;
  for (const auto& t : m->parameters()) flat.push_back(t.detach().flatten().to(at::kCPU, at::kDouble));
  r.params = torch::cat(flat);
  return r;
}

// AMP must train: converge like fp32 does and end no worse than fp32's own seed-to-seed spread.
// Equality with one fp32 run is not a sound check: on an H100 amp_fp16 ended 16% *lower* than
// fp32 with the same seed, while fp32 runs with other seeds differ among themselves by as much.
TEST(GpuPrecision, AmpFp16WithAndWithoutScalingTrainLikeFp32) {
  REQUIRE_GPU();
  const at::Tensor x = cms(20000);
  double worst_f32 = 0;
  std::vector<double> f32_finals;
  for (uint64_t seed : {7, 8, 9}) {
    const GpuRun f = train("fp32", 20, false, x, 512, seed);
    EXPECT_LT(f.losses.back(), 0.2 * f.losses.front()) << "seed " << seed;
    f32_finals.push_back(f.losses.back());
    worst_f32 = std::max(worst_f32, f.losses.back());
  }
  const GpuRun amp = train("amp_fp16", 20, false, x);
  const GpuRun noscale = train("amp_fp16_noscale", 20, false, x);
  for (const GpuRun* r : {&amp, &noscale}) {
    EXPECT_LT(r->losses.back(), 0.2 * r->losses.front()) << r->result.precision.name();
    // 10% above the worst of three fp32 seeds: the margin covers a fourth seed's spread.
    EXPECT_LT(r->losses.back(), 1.1 * worst_f32)
        << r->result.precision.name() << " final " << r->losses.back() << " vs fp32 finals " << f32_finals[0] << ", "
        << f32_finals[1] << ", " << f32_finals[2];
  }
  EXPECT_TRUE(amp.result.loss_scaling);
  EXPECT_FALSE(noscale.result.loss_scaling);
  EXPECT_EQ(amp.result.scaler.steps, 20 * 40);
  EXPECT_TRUE(amp.result.scaler.scale > 0 && std::isfinite(amp.result.scaler.scale));
  EXPECT_EQ(amp.result.precision.compute_dtype, at::kHalf);
}

TEST(GpuGraphs, GraphReplayMatchesEagerSteps) {
  REQUIRE_GPU();
  const at::Tensor x = cms(10000 + 100);  // 20 full batches of 500 and a short one
  for (const char* p : {"fp32", "amp_fp16", "amp_bf16"}) {
    const GpuRun eager = train(p, 3, false, x, 500);
    const GpuRun graph = train(p, 3, true, x, 500);
    ASSERT_TRUE(graph.result.engine_status.cuda_graph) << p << ": " << graph.result.engine_status.note;
    EXPECT_EQ(graph.result.engine_status.graph_replays, 3 * 20 - 3) << p;  // 3 eager warm-up steps
    ASSERT_EQ(eager.losses.size(), graph.losses.size());
    for (std::size_t e = 0; e < eager.losses.size(); ++e)
      EXPECT_NEAR(graph.losses[e] / eager.losses[e], 1.0, 1e-5) << p << " epoch " << e;
    const double rel = ((graph.params - eager.params).norm() / eager.params.norm()).item<double>();
    EXPECT_LT(rel, 1e-5) << p;
  }
}

TEST(GpuPrecision, Tf32MatmulsStayNearFloat32) {
  REQUIRE_GPU();
  torch::manual_seed(1);
  const at::Tensor a = torch::randn({1024, 1024}, torch::dtype(torch::kFloat).device(kGpu));
  const at::Tensor b = torch::randn({1024, 1024}, torch::dtype(torch::kFloat).device(kGpu));
  const at::Tensor ref = at::mm(a.to(at::kDouble), b.to(at::kDouble));
  set_allow_tf32(false);
  const double e32 = ((at::mm(a, b).to(at::kDouble) - ref).norm() / ref.norm()).item<double>();
  set_allow_tf32(true);
  const double etf = ((at::mm(a, b).to(at::kDouble) - ref).norm() / ref.norm()).item<double>();
  set_allow_tf32(false);
  EXPECT_LT(e32, 1e-5);
  EXPECT_LT(etf, 3e-3);
  const GpuRun r = train("tf32", 3, true, cms(5000));
  EXPECT_TRUE(r.result.precision.tf32);
  EXPECT_FALSE(allow_tf32());  // fit restores the process-wide setting
}

TEST(GpuGradScaler, FusedKernelsMatchTheTensorOps) {
  REQUIRE_GPU();
  GradScalerOptions o;
  o.growth_interval = 3;
  GradScaler fused(kGpu, o, 1), ops(kGpu, o, 0);
  ASSERT_TRUE(fused.fused());
  const std::string pattern = "..x...x.....x";
  for (char c : pattern) {
    at::Tensor g = torch::ones({1000}, torch::dtype(torch::kFloat).device(kGpu));
    if (c == 'x') g[17] = NAN;
    at::Tensor h = g.clone();
    fused.unscale_(g);
    ops.unscale_(h);
    EXPECT_TRUE(torch::equal(fused.found_inf(), ops.found_inf()));
    if (c == '.') EXPECT_TRUE(torch::equal(g, h));
    fused.update();
    ops.update();
    EXPECT_TRUE(torch::equal(fused.scale_tensor(), ops.scale_tensor()));
  }
  EXPECT_EQ(fused.stats().skipped_steps, 3);
  EXPECT_EQ(fused.stats().growths, ops.stats().growths);
}

// ATen's fused Adam kernel (PyTorch 2.2+) against FlatAdam's tensor ops: the same update to float32
// rounding, steps skipped alike on an inf gradient, the learning rate read from the device.
TEST(GpuAdam, FusedKernelMatchesTheTensorOps) {
  REQUIRE_GPU();
  for (at::ScalarType dtype : {at::kFloat, at::kDouble}) {
    const auto opts = torch::dtype(dtype).device(kGpu);
    torch::manual_seed(3);
    const at::Tensor w0 = torch::randn({300, 200}, opts), b0 = torch::randn({200}, opts);
    at::Tensor w1 = w0.clone(), b1 = b0.clone(), w2 = w0.clone(), b2 = b0.clone();
    FlatAdam kernel({w1, b1}, 1e-2, 0.9, 0.999, 1e-8, true, /*device_kernel=*/true);
    FlatAdam ops({w2, b2}, 1e-2, 0.9, 0.999, 1e-8, true, /*device_kernel=*/false);
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 2)
    ASSERT_TRUE(kernel.device_kernel()) << "PyTorch 2.2 and later have aten::_fused_adam_.tensor_lr";
#endif
    EXPECT_FALSE(ops.device_kernel());
    const at::Tensor found_inf = torch::zeros({1}, opts.dtype(at::kFloat));
    for (int s = 0; s < 12; ++s) {
      if (s == 6) {
        kernel.set_lr(3e-3);
        ops.set_lr(3e-3);
      }
      const at::Tensor g = torch::randn({kernel.flat_grads().numel()}, opts);
      kernel.set_grads({g.narrow(0, 0, w0.numel()).view({300, 200}), g.narrow(0, w0.numel(), 200)});
      ops.flat_grads().copy_(g);
      found_inf.fill_(s == 4 ? 1.0 : 0.0);  // step 4 is skipped by both
      kernel.step(found_inf);
      ops.step(found_inf);
    }
    EXPECT_EQ(kernel.steps(), 11);
    EXPECT_EQ(ops.steps(), 11);
    const double rel = ((kernel.flat_params() - ops.flat_params()).norm() / ops.flat_params().norm()).item<double>();
    // float64: the kernel reads the learning rate as float32 (as PyTorch's fused Adam does), 1e-2 off
    // by 2e-10 relative; measured 5.6e-10 after 11 steps on an H100.
    EXPECT_LT(rel, dtype == at::kFloat ? 1e-6 : 1e-8) << c10::toString(dtype);
    EXPECT_GT(((kernel.flat_params().narrow(0, 0, w0.numel()).view({300, 200}) - w0).abs().max()).item<double>(),
              1e-3)
        << "the parameters moved";
  }
}

// Baler's deterministic_algorithm (on by default) keeps deterministic kernels without PyTorch 2.1+'s
// NaN fill of every new tensor (35 fill kernels per amp_fp16 step on an H100). Needs no GPU.
TEST(GpuRuntime, DeterministicAlgorithmsWithoutTheNanFill) {
  RunConfig c;
  ASSERT_TRUE(c.deterministic_algorithm);
  configure_runtime(static_cast<int>(c.threads), c.flush_denormal, c.deterministic_algorithm);
  EXPECT_TRUE(at::globalContext().deterministicAlgorithms());
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
  EXPECT_FALSE(at::globalContext().deterministicFillUninitializedMemory());
#endif
  c.deterministic_algorithm = false;
  configure_runtime(static_cast<int>(c.threads), c.flush_denormal, c.deterministic_algorithm);
  EXPECT_FALSE(at::globalContext().deterministicAlgorithms());
}

TEST(GpuTiming, EventTimersAndSyncedTimersBothCountEveryPhase) {
  REQUIRE_GPU();
  const at::Tensor x = cms(5120).to(kGpu, at::kFloat);
  for (bool sync : {true, false}) {
    const PrecisionPolicy p = resolve_precision(Precision::kFp32, at::kDouble, kGpu);
    torch::manual_seed(7);
    auto m = make_model("AE", 24, 15);
    m->to(kGpu, p.param_dtype);
    TrainOptions o;
    o.epochs = 2;
    o.batch_size = 512;
    o.progress = "none";
    o.precision = p;
    o.profile = true;
    o.profile_sync = sync;
    const TrainResult r = fit(*m, x, {}, o);
    EXPECT_FALSE(r.engine_status.cuda_graph);  // profiling times eager steps
    EXPECT_EQ(r.phases[Phase::kBackward].count, 20) << sync;
    EXPECT_GT(r.phases[Phase::kBackward].duration_s, 0) << sync;
    EXPECT_LE(r.phases.sum_s(), r.duration_s * 1.05) << sync;
  }
}

}  // namespace
}  // namespace balerbench

namespace balerbench {
namespace {

// The validation split and the per-epoch shuffle on CUDA: every index on the data's device.
TEST(GpuData, SplitAndShuffleRunOnTheDevice) {
  REQUIRE_GPU();
  const at::Tensor x = cms(5000).to(kGpu, at::kFloat);
  const auto [train_rows, val_rows] = split(x, 0.1, 3);
  EXPECT_TRUE(train_rows.is_cuda());
  EXPECT_EQ(val_rows.size(0), 500);
  const auto [cpu_train, cpu_val] = split(x.cpu(), 0.1, 3);
  EXPECT_TRUE(at::equal(val_rows.cpu(), cpu_val));  // the same rows as on the CPU
  torch::manual_seed(7);
  auto m = make_model("AE", 24, 15);
  m->to(kGpu, at::kFloat);
  TrainOptions o;
  o.epochs = 3;
  o.batch_size = 512;
  o.progress = "none";
  o.precision = resolve_precision(Precision::kFp32, at::kDouble, kGpu);
  o.shuffle = true;
  o.relative_error = true;
  const TrainResult r = fit(*m, train_rows, val_rows, o);
  ASSERT_EQ(r.epoch_records.size(), 3u);
  EXPECT_TRUE(r.epoch_records[2].relative_error.has_value());
  EXPECT_NE(r.epoch_records[2].val_loss, r.epoch_records[2].train_loss);
}

// Evaluation on CUDA in one large chunk equals the CPU's batch-sized chunks (float64 sums).
TEST(GpuData, ChunkedEvaluationMatchesTheCpu) {
  REQUIRE_GPU();
  const at::Tensor x = cms(20000);
  torch::manual_seed(3);
  auto m = make_model("AE", 24, 15);
  const Evaluation cpu = evaluate(*m, x, {512, LossKind::kBalerSum, {}, 512});
  m->to(kGpu, at::kDouble);
  const Evaluation gpu = evaluate(*m, x.to(kGpu), {512, LossKind::kBalerSum, {}, 0});
  EXPECT_GE(gpu.chunk_rows, 20000);  // one pass
  EXPECT_NEAR(gpu.loss, cpu.loss, 1e-10 * cpu.loss);
  EXPECT_NEAR(gpu.relative_error, cpu.relative_error, 1e-10 * cpu.relative_error);
}

}  // namespace
}  // namespace balerbench
