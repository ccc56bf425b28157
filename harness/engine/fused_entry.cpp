// fused_entry.cpp: the fused engine's entry in the engine registry (engine_registry.h): what it
// runs, when auto takes it, and its factories, on the CPU (fused_engine.h) and on CUDA
// (cuda/fused_cuda_engine.h).
#include <ATen/Parallel.h>

#include "harness/engine/bf16_kernels.h"
#include "harness/engine/cuda/fused_cuda_engine.h"
#include "harness/engine/engine_registry.h"
#include "harness/engine/fused_engine.h"

namespace balerbench {
namespace {

// A CUDA device goes to the CUDA fused engine (cuda/fused_cuda_engine.h), which says when this build
// has none.
std::string fused_unsupported(const AutoEncoder& model, const PrecisionPolicy& policy, c10::Device device) {
  if (device.is_cuda()) return fused_cuda_unsupported_reason(model, policy);
  return fused_unsupported_reason(model, policy.param_dtype, policy.autocast ? policy.compute_dtype : policy.param_dtype,
                                  device);
}

std::string fused_auto_skip(const AutoEncoder&, const PrecisionPolicy& policy, c10::Device device) {
  if (device.is_cuda()) return fused_cuda_auto_skip();
  if (!policy.autocast || bf16_dot_supported()) return "";
  return std::string(policy.name()) + ": " + kBf16Emulated +
         ", so LibTorch's autocast runs it; --engine fused runs the fused engine's emulation";
}

std::string fused_inference_unsupported(const PrecisionPolicy&, c10::Device device) {
  // make_inference below hands a CUDA model to the reference engine: say so, so that the report
  // names the engine that runs compress and decompress.
  if (device.is_cuda()) return "compress and decompress on CUDA are not fused (yet): the reference engine runs them";
  return "";
}

}  // namespace

const EngineEntry& fused_engine_entry() {
  static const EngineEntry entry{
      "fused",
      "hand-written step: dense models; CPU fp64/fp32/amp_bf16 (on bfloat16 dot products where the CPU has "
      "them), CUDA fp32/tf32/amp_bf16/amp_fp16 where built with BALERBENCH_CUDA_ENGINE; auto takes it on the CPU "
      "for fp64, fp32 and (with bfloat16 instructions) amp_bf16",
      fused_unsupported,
      fused_auto_skip,
      fused_inference_unsupported,
      [](AutoEncoder& model, const TrainingSetup& s) -> std::unique_ptr<Engine> {
        if (s.device.is_cuda()) return make_fused_cuda_training(model, s);
        return std::make_unique<FusedDenseEngine>(model, s);
      },
      [](AutoEncoder& model, const InferenceSetup& s) -> std::unique_ptr<Engine> {
        // On CUDA, compress and decompress are not fused (yet): the reference engine runs them.
        if (model.parameters().front().is_cuda()) return engine_registry().back()->make_inference(model, s);
        return std::make_unique<FusedDenseEngine>(
            model, s.max_rows, fused_shards(s.knobs, s.workers), fused_products_choice(s.knobs),
            fused_setup_threads(s.workers),
            s.policy.autocast ? s.policy.compute_dtype : at::ScalarType::Undefined);
      },
      &fused_knob_section()};
  return entry;
}

}  // namespace balerbench
