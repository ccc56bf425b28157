// chain.h: the chains emulate.cpp and emulate_mma.cpp run, and their layer tables as the engine builds
// them (weights, then biases, layer after layer, as FlatAdam seats AE). Included after the kernels.
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

namespace {

using namespace balerbench::fused_cuda;
using Matrix = std::vector<double>;  // row-major

struct Chain {
  std::vector<int> in, out, act;  // act: ActivationCode after each layer
};

Chain ae(int features, int latent) {
  return {{features, 200, 100, 50, latent, 50, 100, 200}, {200, 100, 50, latent, 50, 100, 200, features},
          {kActLeakyRelu, kActLeakyRelu, kActLeakyRelu, kActNone, kActLeakyRelu, kActLeakyRelu, kActLeakyRelu, kActNone}};
}

LayerTable table(const Chain& c, int features) {
  LayerTable net;
  net.layers = static_cast<int>(c.in.size());
  net.n_features = net.widest = features;
  net.act_row_offset[1] = features;
  int64_t offset = 0;
  for (int i = 0; i < net.layers; ++i) {
    net.in[i] = c.in[i];
    net.out[i] = c.out[i];
    net.act[i] = c.act[i];
    net.widest = std::max({net.widest, c.in[i], c.out[i]});
    net.act_row_offset[i + 2] = net.act_row_offset[i + 1] + c.out[i];
    net.weight_offset[i] = offset;
    offset += static_cast<int64_t>(c.in[i]) * c.out[i];
    net.bias_offset[i] = offset;
    offset += c.out[i];
  }
  net.params = offset;
  fill_mma_layout(net);
  return net;
}

// A case's parameters (uniform in +-0.3) and rows (uniform in -0.1 .. 1.1), from `seed`.
void draw(const LayerTable& n, int rows, unsigned seed, std::vector<float>* p, std::vector<float>* x) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> weights(-0.3f, 0.3f), data(-0.1f, 1.1f);
  p->resize(n.params);
  x->resize(static_cast<size_t>(rows) * n.n_features);
  for (float& w : *p) w = weights(gen);
  for (float& v : *x) v = data(gen);
}

}  // namespace
