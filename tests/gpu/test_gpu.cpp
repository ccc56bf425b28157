// test_gpu.cpp: what only a CUDA GPU can check (ctest label `gpu`): float16
// autocast with and without loss scaling, CUDA graph replay against eager
// steps, TF32, the fused GradScaler kernels, and event timing. Every test
// skips cleanly when no GPU is visible (or this LibTorch has no CUDA).
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <cmath>

#include "datasets/normalizer.h"
#include "datasets/synthetic.h"
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

GpuRun train(const std::string& precision, int64_t epochs, bool graphs, const at::Tensor& x64, int64_t batch = 512) {
  const PrecisionPolicy p = resolve_precision(precision, at::kDouble, kGpu);
  torch::manual_seed(7);
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
  for (const auto& e : r.result.epochs) r.losses.push_back(e.train_loss);
  std::vector<at::Tensor> flat;
  for (const auto& t : m->parameters()) flat.push_back(t.detach().flatten().to(at::kCPU, at::kDouble));
  r.params = torch::cat(flat);
  return r;
}

TEST(GpuPrecision, AmpFp16WithAndWithoutScalingTrainLikeFp32) {
  REQUIRE_GPU();
  const at::Tensor x = cms(20000);
  const GpuRun f32 = train("fp32", 20, false, x);
  const GpuRun amp = train("amp_fp16", 20, false, x);
  const GpuRun noscale = train("amp_fp16_noscale", 20, false, x);
  EXPECT_LT(f32.losses.back(), 0.2 * f32.losses.front());
  EXPECT_NEAR(amp.losses.back() / f32.losses.back(), 1.0, 0.15);
  EXPECT_NEAR(noscale.losses.back() / f32.losses.back(), 1.0, 0.15);
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
    ASSERT_TRUE(graph.result.cuda_graph) << p << ": " << graph.result.cuda_graph_note;
    EXPECT_EQ(graph.result.graph_replays, 3 * 20 - 3) << p;  // 3 eager warm-up steps
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

TEST(GpuTiming, EventTimersAndSyncedTimersBothCountEveryPhase) {
  REQUIRE_GPU();
  const at::Tensor x = cms(5120).to(kGpu, at::kFloat);
  for (bool sync : {true, false}) {
    const PrecisionPolicy p = resolve_precision("fp32", at::kDouble, kGpu);
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
    EXPECT_FALSE(r.cuda_graph);  // profiling times eager steps
    EXPECT_EQ(r.phases[Phase::kBackward].count, 20) << sync;
    EXPECT_GT(r.phases[Phase::kBackward].duration_s, 0) << sync;
    EXPECT_LE(r.phases.sum_s(), r.duration_s * 1.05) << sync;
  }
}

}  // namespace
}  // namespace balerbench
