// autoencoder.h: Baler's dense autoencoders as LibTorch modules.
//
// Parameter names match Baler's PyTorch state dicts ("en1.weight", ...,
// "enc_nn.0.weight", ...), so a model saved here loads in Python with
// torch.load() as a plain state dict, and the reverse.
#pragma once

#include <c10/core/Device.h>

#include <torch/nn/module.h>

#include <memory>
#include <optional>
#include <string>

#include "models/architecture.h"

namespace balerbench {

class AutoEncoder : public torch::nn::Module {
 public:
  // x: (batch, n_features) -> z: (batch, latent)
  virtual at::Tensor encode(const at::Tensor& x) = 0;
  // z: (batch, latent) -> x_hat: (batch, n_features)
  virtual at::Tensor decode(const at::Tensor& z) = 0;
  at::Tensor forward(const at::Tensor& x) { return decode(encode(x)); }

  const Architecture& architecture() const { return arch_; }
  // The parameters' dtype now (a precision policy may have converted them).
  at::ScalarType dtype() const;
  // The parameters' device now (the CPU for a model without parameters).
  c10::Device device() const;
  // Baler's dtype for this architecture: float64 (AE) or float32 (CFD_dense_AE).
  at::ScalarType baler_dtype() const;

 protected:
  explicit AutoEncoder(Architecture arch) : arch_(std::move(arch)) {}
  Architecture arch_;
};

// Builds a model by registry name, with Baler's dtype (float64 or float32)
// and LibTorch's default init (= PyTorch's). Seed with torch::manual_seed first.
std::shared_ptr<AutoEncoder> make_model(const std::string& name, int64_t n_features, int64_t latent);

int64_t count_parameters(const AutoEncoder& model);

// State dict (parameters and buffers) as a torch.save-compatible pickle,
// written atomically; floating-point tensors in `dtype` when given (a Baler project's model.pt
// holds the model's Baler dtype whatever precision trained it).
void save_state_dict(const AutoEncoder& model, const std::string& path,
                     std::optional<at::ScalarType> dtype = std::nullopt);
// Strict load: every key present, every shape equal, else InputError
// ("the model does not match").
void load_state_dict(AutoEncoder& model, const std::string& path);

}  // namespace balerbench
