// architecture.h: what each Baler dense model is made of, without LibTorch.
//
// The registry of model names, the latent-size rule and the per-layer
// description used by `model-info` (parameters, MACs, the docs/reference_tables.md
// T1 "operations" convention). models/autoencoder.h builds the LibTorch
// modules from the same names.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace balerbench {

struct LayerSpec {
  std::string name;        // state-dict prefix, e.g. "en1" or "dec_nn.2"
  std::string kind;        // "linear" or "batchnorm"
  std::string part;        // "encoder" or "decoder"
  int64_t in_features = 0;
  int64_t out_features = 0;
  std::string after;       // what follows the layer: "leaky_relu(0.01)", "relu", "dropout(0.5)+leaky_relu(0.01)", ""

  int64_t parameters() const;        // linear: in*out + out; batchnorm: 2*n (affine)
  int64_t macs_per_sample() const;   // linear: in*out; batchnorm (eval): n
  // docs/reference_tables.md T1: in*out*batch + out (bias counted once per output).
  int64_t t1_operations(int64_t batch_size) const;
};

struct Architecture {
  std::string model_name;
  std::string dtype;  // "float64" or "float32": Baler's parameter dtype
  int64_t n_features = 0;
  int64_t latent = 0;
  int data_dimension = 1;  // the data the model is meant for: 1 (tables) or 2 (frames)
  std::vector<LayerSpec> layers;

  int64_t parameters() const;
  int64_t macs_per_sample() const;
};

// Valid model names, in registry order.
const std::vector<std::string>& model_names();
// Throws InputError listing the valid names when `name` is unknown.
void check_model_name(const std::string& name);
// The data dimension (1 or 2) a model expects.
int model_data_dimension(const std::string& name);
std::string model_dtype_name(const std::string& name);

// Baler: z = ceil(n_features / compression_ratio). Errors for ratio <= 0 or
// non-finite, and for a latent larger than the input.
int64_t latent_size(int64_t n_features, double compression_ratio);

Architecture describe_model(const std::string& name, int64_t n_features, int64_t latent);

}  // namespace balerbench
