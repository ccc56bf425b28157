// fused_cuda_layers.h: a model's chain as the CUDA kernels read it (fused_cuda::LayerTable), built
// from its architecture (models/architecture.h). Host code without LibTorch or CUDA, so that the
// engine (fused_cuda_engine.cpp) and the kernels' host emulation (scripts/cuda_emulation/) build the
// same table from the same layers.
#pragma once

#include <algorithm>
#include <string>

#include "harness/engine/cuda/fused_cuda_kernels.h"
#include "models/architecture.h"

namespace balerbench {
namespace fused_cuda {

// The activation after a layer ("" when none; fused_cuda_unsupported_reason refuses other kinds first).
inline int activation_code(const std::string& after) {
  if (after == "leaky_relu(0.01)") return kActLeakyRelu;
  if (after == "relu") return kActRelu;
  return kActNone;
}

// The chain's widths, activations, shared-memory offsets and padded (tensor-core) layout, and each
// layer's weight and bias where FlatAdam seats a model's parameters: weight (out x in), then bias,
// layer after layer. The engine checks those offsets against the optimizer's buffer (check_seats();
// on the CPU: FusedCudaLayers in the unit tests).
inline LayerTable chain_of(const Architecture& arch) {
  LayerTable net;
  net.layers = static_cast<int>(arch.layers.size());
  net.n_features = static_cast<int>(arch.n_features);
  net.widest = net.n_features;
  net.act_row_offset[0] = 0;
  net.act_row_offset[1] = net.n_features;  // activation 0: the input tile
  int64_t offset = 0;
  for (int i = 0; i < net.layers && i < kMaxLayers; ++i) {
    const LayerSpec& l = arch.layers[static_cast<std::size_t>(i)];
    net.in[i] = static_cast<int>(l.in_features);
    net.out[i] = static_cast<int>(l.out_features);
    net.act[i] = activation_code(l.after);
    net.widest = std::max({net.widest, net.in[i], net.out[i]});
    net.act_row_offset[i + 2] = net.act_row_offset[i + 1] + net.out[i];
    net.weight_offset[i] = offset;
    offset += static_cast<int64_t>(net.in[i]) * net.out[i];
    net.bias_offset[i] = offset;
    offset += net.out[i];
    net.params += l.parameters();
  }
  fill_mma_layout(net);
  return net;
}

}  // namespace fused_cuda
}  // namespace balerbench
