// chain.h: the chains emulate.cpp and emulate_mma.cpp run, as the engine builds their layer tables
// (fused_cuda_layers.h, from models/architecture.h: the weights and biases where FlatAdam seats them),
// and the cases' parameters and rows. Included after the kernels.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "harness/engine/cuda/fused_cuda_layers.h"

namespace {

using namespace balerbench::fused_cuda;
using Matrix = std::vector<double>;  // row-major

// Baler's AE (and CFD_dense_AE) on `features` columns with a latent space of `latent`.
LayerTable ae(int features, int latent) { return chain_of(balerbench::describe_model("AE", features, latent)); }

// Baler's FPGA prototype on 13 columns, latent 8: ReLU where AE has LeakyReLU.
LayerTable fpga() { return chain_of(balerbench::describe_model("FPGA_prototype_model", 13, 8)); }

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
