// fused_cuda_entry.cpp: the CUDA fused engine's entry in the engine registry (engine_registry.h).
// Users name it `fused`, as the CPU fused engine (fused_entry.cpp): the registry resolves the name by
// the run's device. Compiled in every build: without BALERBENCH_CUDA_ENGINE, fused_cuda_absent.cpp's
// functions say why it cannot run. Compress and decompress on CUDA run the reference engine.
#include "harness/engine/cuda/fused_cuda_engine.h"
#include "harness/engine/engine_registry.h"

namespace balerbench {
namespace {

std::string cuda_unsupported(const AutoEncoder& model, const PrecisionPolicy& policy, c10::Device) {
  return fused_cuda_unsupported_reason(model, policy);
}

std::string cuda_auto_skip(const AutoEncoder&, const PrecisionPolicy&, c10::Device) { return fused_cuda_auto_skip(); }

// Said, so that the report names the engine that runs compress and decompress.
std::string cuda_inference_unsupported(const PrecisionPolicy&, c10::Device) {
  return "compress and decompress on CUDA are not fused (yet): the reference engine runs them";
}

const EngineBuildNote kBuildNote{"fused_cuda_engine", "fused cuda", fused_cuda_summary};

}  // namespace

const EngineEntry& fused_cuda_engine_entry() {
  static const EngineEntry entry{
      "fused",
      "on CUDA: fp32, tf32, amp_bf16 and amp_fp16 where built with BALERBENCH_CUDA_ENGINE, which auto passes "
      "by until it is verified on a GPU",
      cuda_unsupported,
      cuda_auto_skip,
      cuda_inference_unsupported,
      make_fused_cuda_training,
      [](AutoEncoder& model, const InferenceSetup& s) -> std::unique_ptr<Engine> {
        return engine_registry().back()->make_inference(model, s);  // the reference engine
      },
      nullptr,
      EngineDevices::kCuda,
      &kBuildNote};
  return entry;
}

}  // namespace balerbench
