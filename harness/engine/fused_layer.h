// fused_layer.h: one Linear layer of a model as the fused engine (fused_engine.h) and its workers
// (fused_worker.h) see it: views into the optimizer's flat buffers, its shapes and its activation.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "harness/engine/dense_loops.h"

namespace balerbench {

struct FusedLayer {
  at::Tensor weight, bias;  // views into the optimizer's flat parameters: (out, in) and (out)
  // amp_bf16: this step's bfloat16 weight in the forward's and the input gradient's layouts
  // (bf16_kernels.h: wf, wb), and the bias rounded to bfloat16, in float32.
  std::vector<uint16_t> wf, wb;
  std::vector<float> bias_f;
  int64_t weight_offset = 0, bias_offset = 0;  // their offsets in the flat buffers
  int64_t in = 0, out = 0;
  Activation after = Activation::kNone;
};

}  // namespace balerbench
