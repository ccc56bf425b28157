// fused_entry.cpp: the CPU fused engine's entry in the engine registry (engine_registry.h): what it
// runs, when auto takes it, and its factories (fused_engine.h). On CUDA the name `fused` resolves to
// the CUDA fused engine's own entry (cuda/fused_cuda_entry.cpp).
#include <ATen/Parallel.h>

#include "harness/engine/bf16_kernels.h"
#include "harness/engine/engine_registry.h"
#include "harness/engine/fused_engine.h"

namespace balerbench {
namespace {

std::string fused_unsupported(const AutoEncoder& model, const PrecisionPolicy& policy, c10::Device device) {
  return fused_unsupported_reason(model, policy.param_dtype, policy.autocast ? policy.compute_dtype : policy.param_dtype,
                                  device);
}

std::string fused_auto_skip(const AutoEncoder&, const PrecisionPolicy& policy, c10::Device) {
  if (!policy.autocast || bf16_dot_supported()) return "";
  return std::string(policy.name()) + ": " + kBf16Emulated +
         ", so LibTorch's autocast runs it; --engine fused runs the fused engine's emulation";
}

std::string cpu_infers_everything(const PrecisionPolicy&, c10::Device) { return ""; }

}  // namespace

const EngineEntry& fused_engine_entry() {
  static const EngineEntry entry{
      "fused",
      "on the CPU: a hand-written step for dense models at fp64, fp32 and amp_bf16 (on bfloat16 dot products "
      "where the CPU has them), which auto picks for fp64, fp32 and, with bfloat16 instructions, amp_bf16",
      fused_unsupported,
      fused_auto_skip,
      cpu_infers_everything,
      [](AutoEncoder& model, const TrainingSetup& s) -> std::unique_ptr<Engine> {
        return std::make_unique<FusedDenseEngine>(model, s);
      },
      [](AutoEncoder& model, const InferenceSetup& s) -> std::unique_ptr<Engine> {
        return std::make_unique<FusedDenseEngine>(
            model, s.max_rows, fused_shards(s.knobs, s.workers), fused_products_choice(s.knobs),
            fused_setup_threads(s.workers),
            s.policy.autocast ? s.policy.compute_dtype : at::ScalarType::Undefined);
      },
      &fused_knob_section(),
      EngineDevices::kCpu};
  return entry;
}

}  // namespace balerbench
