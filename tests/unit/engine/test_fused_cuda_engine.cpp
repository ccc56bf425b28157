// test_fused_cuda_engine.cpp: what the registry says of `engine: fused` on a CUDA device, which needs
// no GPU: in a build without the CUDA fused engine (CI's), why it cannot run; in a build with it, what
// it takes, and that `auto` passes it by until a GPU run has verified it. Its numerics are checked on
// a GPU (tests/gpu/test_fused_cuda.cpp).
#include <gtest/gtest.h>

#include <string>

#include "common/error.h"
#include "harness/engine/cuda/fused_cuda_engine.h"
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

TEST(FusedCudaEntry, FusedOnCudaSaysWhyItCannotRunOrThatAutoPassesItBy) {
  const c10::Device cuda(c10::kCUDA, 0), cpu(c10::kCPU);
  const PrecisionPolicy fp32 = policy(Precision::kFp32, at::kFloat);
  auto ae = make_model("AE", 24, 15);
  const EngineEntry& fused = engine_entry(EngineKind::kFused);
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
    EXPECT_TRUE(contains(fp64, "runs fp32 on CUDA so far, not fp64")) << fp64;
    PrecisionPolicy tf32 = policy(Precision::kTf32, at::kFloat);
    tf32.tf32 = true;
    EXPECT_TRUE(contains(fused.unsupported(*ae, tf32, cuda), "not tf32")) << fused.unsupported(*ae, tf32, cuda);
    auto bn = make_model("AE_Dropout_BN", 24, 15);
    EXPECT_TRUE(contains(fused.unsupported(*bn, fp32, cuda), "AE_Dropout_BN has dropout(0.5)"));
  }
  // Either way, auto trains libtorch on CUDA (until kVerifiedOnGpu) and says why.
  const EngineDecision d = choose_engine(EngineKind::kAuto, *ae, fp32, cuda);
  EXPECT_EQ(d.engine, EngineKind::kLibtorch);
  EXPECT_TRUE(contains(d.note, fused_cuda_built() ? "fused on CUDA: not yet verified on a GPU" : absent)) << d.note;
  // The CPU is the CPU fused engine's, as before.
  EXPECT_EQ(fused.unsupported(*ae, fp32, cpu), "");
  EXPECT_EQ(choose_engine(EngineKind::kAuto, *ae, fp32, cpu).engine, EngineKind::kFused);
}

}  // namespace
}  // namespace balerbench
