// autoencoder.cpp: the four dense models and their registry (docs/baler.md, The dense models).
#include "models/autoencoder.h"

#include <torch/torch.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "common/paths.h"
#include "models/torch_save.h"
#include "common/atomic_file.h"

namespace balerbench {
namespace {

namespace nn = torch::nn;

// In place on the fresh output of a Linear: saves a buffer and a pass per
// layer; autograd supports it because the slope is positive (backward uses the result).
at::Tensor lrelu(at::Tensor x) { return at::leaky_relu_(x, 0.01); }

at::Tensor relu(at::Tensor x) { return torch::relu(x); }

// A chain of Linear layers as the architecture lists them, the encoder its first half and the decoder
// its second, `activation` between layers and nothing after the latent or output layer. AE and
// CFD_dense_AE: n->200->100->50->z->50->100->200->n with LeakyReLU(0.01); FPGA_prototype_model:
// n->20->10->z->10->20->n with ReLU.
class LinearChainAE : public AutoEncoder {
 public:
  using Activation = at::Tensor (*)(at::Tensor);
  LinearChainAE(Architecture arch, Activation activation) : AutoEncoder(std::move(arch)), activation_(activation) {
    for (const auto& l : arch_.layers)
      layers_.push_back(register_module(l.name, nn::Linear(l.in_features, l.out_features)));
  }
  at::Tensor encode(const at::Tensor& x) override { return chain(x, 0, layers_.size() / 2); }
  at::Tensor decode(const at::Tensor& z) override { return chain(z, layers_.size() / 2, layers_.size()); }

 private:
  at::Tensor chain(at::Tensor h, std::size_t from, std::size_t to) {
    for (std::size_t i = from; i < to; ++i) {
      h = layers_[i](h);
      if (i + 1 < to) h = activation_(h);
    }
    return h;
  }
  Activation activation_;
  std::vector<nn::Linear> layers_;
};

// AE_Dropout_BN: enc_nn = [Linear, Dropout(p), LeakyReLU] x4 (latent included);
// dec_nn = [Linear, LeakyReLU, BatchNorm1d] x3, Linear, BatchNorm1d, ReLU.
class DropoutBnAE : public AutoEncoder {
 public:
  explicit DropoutBnAE(Architecture arch) : AutoEncoder(std::move(arch)) {
    const int64_t n = arch_.n_features, z = arch_.latent;
    const int64_t enc[5] = {n, 200, 100, 50, z};
    const double p[4] = {0.5, 0.4, 0.3, 0.2};
    for (int i = 0; i < 4; ++i) {
      enc_->push_back(nn::Linear(enc[i], enc[i + 1]));
      enc_->push_back(nn::Dropout(p[i]));
      enc_->push_back(nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.01)));
    }
    const int64_t dec[4] = {z, 50, 100, 200};
    for (int i = 0; i < 3; ++i) {
      dec_->push_back(nn::Linear(dec[i], dec[i + 1]));
      dec_->push_back(nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.01)));
      dec_->push_back(nn::BatchNorm1d(dec[i + 1]));
    }
    dec_->push_back(nn::Linear(200, n));
    dec_->push_back(nn::BatchNorm1d(n));
    dec_->push_back(nn::ReLU());
    register_module("enc_nn", enc_);
    register_module("dec_nn", dec_);
  }
  at::Tensor encode(const at::Tensor& x) override { return enc_->forward(x); }
  at::Tensor decode(const at::Tensor& z) override { return dec_->forward(z); }

 private:
  nn::Sequential enc_, dec_;
};

std::vector<std::pair<std::string, at::Tensor>> state_items(const AutoEncoder& model) {
  std::vector<std::pair<std::string, at::Tensor>> items;
  for (const auto& p : model.named_parameters(true)) items.emplace_back(p.key(), p.value());
  for (const auto& b : model.named_buffers(true)) items.emplace_back(b.key(), b.value());
  return items;
}

// name -> tensor, in the file's order.
StateDictEntries read_dict(const std::string& path) {
  check_input_file(path, "model file", "run `balerbench train` with the same --out first");
  return read_torch_state_dict(path);
}

}  // namespace

at::ScalarType AutoEncoder::baler_dtype() const { return arch_.dtype == "float32" ? at::kFloat : at::kDouble; }

at::ScalarType AutoEncoder::dtype() const {
  const auto params = parameters();
  return params.empty() ? baler_dtype() : params.front().scalar_type();
}

c10::Device AutoEncoder::device() const {
  const auto params = parameters();
  return params.empty() ? c10::Device(c10::kCPU) : params.front().device();
}

std::shared_ptr<AutoEncoder> make_model(const std::string& name, int64_t n_features, int64_t latent) {
  Architecture arch = describe_model(name, n_features, latent);
  std::shared_ptr<AutoEncoder> m;
  if (name == "AE" || name == "CFD_dense_AE") m = std::make_shared<LinearChainAE>(arch, lrelu);
  else if (name == "AE_Dropout_BN") m = std::make_shared<DropoutBnAE>(arch);
  else m = std::make_shared<LinearChainAE>(arch, relu);
  m->to(m->baler_dtype());
  return m;
}

int64_t count_parameters(const AutoEncoder& model) {
  int64_t n = 0;
  for (const auto& p : model.parameters()) n += p.numel();
  return n;
}

void save_state_dict(const AutoEncoder& model, const std::string& path, std::optional<at::ScalarType> dtype) {
  StateDictEntries entries;
  // clone(): parameters may be views into one flat buffer, and a view would
  // drag the whole buffer into every entry of the file.
  for (const auto& [k, v] : state_items(model)) {
    at::Tensor t = v.detach().cpu().clone();
    entries.emplace_back(k, dtype && t.is_floating_point() ? t.to(*dtype) : t);
  }
  const std::vector<char> bytes = torch_save_bytes(entries);
  write_file_atomic(path, std::vector<uint8_t>(bytes.begin(), bytes.end()));
}

void load_state_dict(AutoEncoder& model, const std::string& path) {
  const auto dict = read_dict(path);
  const std::string hint = "compress/decompress with the model trained on this data (same model_name and compression_ratio)";
  const std::string name = model.architecture().model_name;
  const auto items = state_items(model);
  auto find = [](const auto& list, const std::string& key) {
    return std::find_if(list.begin(), list.end(), [&](const auto& e) { return e.first == key; });
  };
  // Every key of the model in the file, and nothing else (PyTorch's strict load; Baler loads with
  // strict=False, which leaves a misnamed layer at its random initial weights).
  for (const auto& [key, tensor] : dict)
    if (find(items, key) == items.end())
      throw InputError(path + ": the model does not match " + name + ": unexpected entry '" + key + "'", hint);
  torch::NoGradGuard no_grad;
  for (const auto& [key, target] : items) {
    auto it = find(dict, key);
    if (it == dict.end())
      throw InputError(path + ": the model does not match " + name + ": no entry '" + key + "'", hint);
    const at::Tensor src = it->second;
    if (src.sizes() != target.sizes())
      throw InputError(path + ": the model does not match " + name + ": '" + key + "' has shape " +
                           c10::str(src.sizes()) + ", expected " + c10::str(target.sizes()),
                       hint);
    target.copy_(src);
  }
}

}  // namespace balerbench
