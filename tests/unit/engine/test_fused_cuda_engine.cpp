// test_fused_cuda_engine.cpp: what the registry says of `engine: fused` on a CUDA device, which needs
// no GPU: in a build without the CUDA fused engine (CI's), why it cannot run; in a build with it, what
// it takes, and that `auto` passes it by until a GPU run has verified it. Its numerics are checked on
// a GPU (tests/gpu/test_fused_cuda.cpp).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/error.h"
#include "harness/engine/cuda/fused_cuda_engine.h"
#include "harness/engine/cuda/fused_cuda_layers.h"
#include "harness/engine/flat_adam.h"
#include "harness/engine/engine_registry.h"
#include "models/autoencoder.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

PrecisionPolicy policy(Precision mode, at::ScalarType dtype) {
  PrecisionPolicy p;
  p.mode = mode;
  p.param_dtype = p.data_dtype = p.compute_dtype = dtype;
  return p;
}

bool contains(const std::string& text, const std::string& fragment) { return text.find(fragment) != std::string::npos; }

// A model that is only its architecture (never run): the layer table the engine's reason reads.
class TableOnly : public AutoEncoder {
 public:
  explicit TableOnly(Architecture arch) : AutoEncoder(std::move(arch)) {}
  at::Tensor encode(const at::Tensor& x) override { return x; }
  at::Tensor decode(const at::Tensor& z) override { return z; }
};

LayerSpec linear(const std::string& name, int64_t in, int64_t out) {
  LayerSpec l;
  l.name = name;
  l.kind = "linear";
  l.part = "encoder";
  l.in_features = in;
  l.out_features = out;
  l.after = "leaky_relu(0.01)";
  return l;
}

Architecture chain(std::vector<LayerSpec> layers) {
  Architecture a;
  a.model_name = "Chain";
  a.dtype = "float32";
  a.n_features = 8;
  a.latent = 3;
  a.layers = std::move(layers);
  return a;
}

// Compress and decompress of a model trained on CUDA with engine fused run the reference engine (the
// entry's make_inference): the decision, and so the report, names it, whether or not the CUDA engine
// is built; on the CPU, fused fp32 runs them itself.
TEST(FusedCudaEntry, InferenceOnCudaIsDecidedForTheReferenceEngine) {
  const PrecisionPolicy fp32 = policy(Precision::kFp32, at::kFloat);
  const EngineDecision trained{EngineKind::kFused, ""};
  const EngineDecision on_cuda = inference_decision(trained, fp32, c10::Device(c10::kCUDA, 0));
  EXPECT_EQ(on_cuda.engine, EngineKind::kLibtorch);
  EXPECT_TRUE(contains(on_cuda.note, "the reference engine runs them")) << on_cuda.note;
  const EngineDecision on_cpu = inference_decision(trained, fp32, c10::Device(c10::kCPU));
  EXPECT_EQ(on_cpu.engine, EngineKind::kFused);
  EXPECT_EQ(on_cpu.note, "");
  EXPECT_EQ(inference_decision({EngineKind::kLibtorch, ""}, fp32, c10::Device(c10::kCUDA, 0)).engine,
            EngineKind::kLibtorch);
}

// The layer table must be a chain from the features back to them; the reason names the layer that
// breaks it. Reached without a GPU in a build with the engine (the reason reads only the table).
TEST(FusedCudaEntry, TheReasonNamesTheLayerThatBreaksTheChain) {
  if (!fused_cuda_built()) GTEST_SKIP() << "built without the CUDA fused engine (BALERBENCH_CUDA_ENGINE)";
  const PrecisionPolicy fp32 = policy(Precision::kFp32, at::kFloat);
  const auto reason = [&](std::vector<LayerSpec> layers) {
    return fused_cuda_unsupported_reason(TableOnly(chain(std::move(layers))), fp32);
  };
  EXPECT_EQ(reason({linear("a", 8, 3), linear("b", 3, 8)}), "");
  std::string why = reason({linear("a", 7, 3), linear("b", 3, 8)});
  EXPECT_TRUE(contains(why, "first layer a reads 7 features, the data has 8")) << why;
  why = reason({linear("a", 8, 3), linear("b", 4, 5), linear("c", 5, 8)});
  EXPECT_TRUE(contains(why, "layer 0 (a writes 3) does not feed layer 1 (b reads 4)")) << why;
  why = reason({linear("a", 8, 3), linear("b", 3, 9)});
  EXPECT_TRUE(contains(why, "last layer b writes 9 features, the data has 8")) << why;
  why = reason({});
  EXPECT_TRUE(contains(why, "has no layers")) << why;
}

TEST(FusedCudaEntry, TheSummarySaysWhetherItIsBuiltAndWhatAutoDoes) {
  const std::string summary = fused_cuda_summary();
  if (fused_cuda_built())
    EXPECT_EQ(summary, "built for sm_80 and sm_90: fp32, tf32, amp_bf16, amp_fp16_noscale and amp_fp16 (auto passes it "
                       "by: not yet verified on a GPU)");
  else
    EXPECT_TRUE(contains(summary, "not built (BALERBENCH_CUDA_ENGINE")) << summary;
}

TEST(FusedCudaEntry, FusedOnCudaSaysWhyItCannotRunOrThatAutoPassesItBy) {
  const c10::Device cuda(c10::kCUDA, 0), cpu(c10::kCPU);
  const PrecisionPolicy fp32 = policy(Precision::kFp32, at::kFloat);
  auto ae = make_model("AE", 24, 15);
  const EngineEntry& fused = engine_entry(EngineKind::kFused, cuda);
  const std::string absent = "built without the CUDA fused engine (BALERBENCH_CUDA_ENGINE)";
  if (!fused_cuda_built()) {
    EXPECT_EQ(fused.unsupported(*ae, fp32, cuda), absent);
    expect_input_error([&] { choose_engine(EngineKind::kFused, *ae, fp32, cuda); },
                       "engine 'fused' cannot train this run: " + absent);
  } else {
    EXPECT_EQ(fused.unsupported(*ae, fp32, cuda), "");
    EXPECT_EQ(fused.auto_skip(*ae, fp32, cuda), "fused on CUDA: not yet verified on a GPU");
    EXPECT_EQ(choose_engine(EngineKind::kFused, *ae, fp32, cuda).engine, EngineKind::kFused);
    const std::string fp64 = fused.unsupported(*ae, policy(Precision::kFp64, at::kDouble), cuda);
    EXPECT_TRUE(contains(fp64, "runs fp32, tf32, amp_bf16, amp_fp16_noscale and amp_fp16, not fp64")) << fp64;
    // The tensor-core modes are taken by name, and auto passes them by too.
    for (const Precision mode : {Precision::kTf32, Precision::kAmpBf16, Precision::kAmpFp16NoScale, Precision::kAmpFp16}) {
      const PrecisionPolicy p = resolve_precision(mode, at::kFloat, cuda);
      EXPECT_EQ(fused.unsupported(*ae, p, cuda), "") << p.name();
      EXPECT_EQ(choose_engine(EngineKind::kFused, *ae, p, cuda).engine, EngineKind::kFused) << p.name();
      EXPECT_EQ(choose_engine(EngineKind::kAuto, *ae, p, cuda).engine, EngineKind::kLibtorch) << p.name();
    }
    auto bn = make_model("AE_Dropout_BN", 24, 15);
    EXPECT_TRUE(contains(fused.unsupported(*bn, fp32, cuda), "AE_Dropout_BN has dropout(0.5)"));
  }
  // Either way, auto trains libtorch on CUDA (until kVerifiedOnGpu) and says why.
  const EngineDecision d = choose_engine(EngineKind::kAuto, *ae, fp32, cuda);
  EXPECT_EQ(d.engine, EngineKind::kLibtorch);
  EXPECT_TRUE(contains(d.note, fused_cuda_built() ? "fused on CUDA: not yet verified on a GPU" : absent)) << d.note;
  // The CPU is the CPU fused engine's, as before.
  EXPECT_EQ(engine_entry(EngineKind::kFused, cpu).unsupported(*ae, fp32, cpu), "");
  EXPECT_EQ(choose_engine(EngineKind::kAuto, *ae, fp32, cpu).engine, EngineKind::kFused);
}

// The layer table the CUDA kernels read (and their host emulation builds: scripts/cuda_emulation/)
// puts each layer's weight and bias where FlatAdam seats the model's parameters; the engine refuses a
// model where they differ (seat()). Checked here on the CPU, for every model the fused engine takes.
TEST(FusedCudaLayers, TheTableSeatsEveryParameterWhereFlatAdamDoes) {
  for (const auto& [name, features, latent] :
       std::vector<std::tuple<std::string, int64_t, int64_t>>{{"AE", 24, 15}, {"AE", 7, 4}, {"FPGA_prototype_model", 13, 8}}) {
    auto model = make_model(name, features, latent);
    model->to(at::kFloat);
    FlatAdam opt(model->parameters(), 1e-3);
    const fused_cuda::LayerTable net = fused_cuda::chain_of(model->architecture());
    const at::Tensor& flat = opt.flat_params();
    EXPECT_EQ(net.params, flat.numel()) << name;
    const auto offset_of = [&flat](const at::Tensor& t) {
      return (static_cast<const char*>(t.data_ptr()) - static_cast<const char*>(flat.data_ptr())) /
             static_cast<int64_t>(flat.element_size());
    };
    std::map<std::string, at::Tensor> params;
    for (const auto& p : model->named_parameters(true)) params[p.key()] = p.value();
    ASSERT_EQ(net.layers, static_cast<int>(model->architecture().layers.size())) << name;
    for (int i = 0; i < net.layers; ++i) {
      const std::string& layer = model->architecture().layers[static_cast<std::size_t>(i)].name;
      EXPECT_EQ(net.weight_offset[i], offset_of(params.at(layer + ".weight"))) << name << " " << layer;
      EXPECT_EQ(net.bias_offset[i], offset_of(params.at(layer + ".bias"))) << name << " " << layer;
    }
  }
}

}  // namespace
}  // namespace balerbench
