// architecture.cpp: layer lists of Baler's dense models (docs/baler.md, The dense models).
#include "models/architecture.h"

#include <cmath>
#include <cstdio>

#include "common/error.h"

namespace balerbench {
namespace {

constexpr char kLrelu[] = "leaky_relu(0.01)";

LayerSpec linear(std::string name, std::string part, int64_t in, int64_t out, std::string after) {
  return LayerSpec{std::move(name), "linear", std::move(part), in, out, std::move(after)};
}

LayerSpec batchnorm(std::string name, int64_t n, std::string after = "") {
  return LayerSpec{std::move(name), "batchnorm", "decoder", n, n, std::move(after)};
}

std::vector<LayerSpec> ae_layers(int64_t n, int64_t z) {
  return {linear("en1", "encoder", n, 200, kLrelu), linear("en2", "encoder", 200, 100, kLrelu),
          linear("en3", "encoder", 100, 50, kLrelu), linear("en4", "encoder", 50, z, ""),
          linear("de1", "decoder", z, 50, kLrelu),   linear("de2", "decoder", 50, 100, kLrelu),
          linear("de3", "decoder", 100, 200, kLrelu), linear("de4", "decoder", 200, n, "")};
}

std::vector<LayerSpec> dropout_bn_layers(int64_t n, int64_t z) {
  auto drop = [](const char* p) { return std::string("dropout(") + p + ")+" + kLrelu; };
  return {linear("enc_nn.0", "encoder", n, 200, drop("0.5")), linear("enc_nn.3", "encoder", 200, 100, drop("0.4")),
          linear("enc_nn.6", "encoder", 100, 50, drop("0.3")), linear("enc_nn.9", "encoder", 50, z, drop("0.2")),
          linear("dec_nn.0", "decoder", z, 50, kLrelu),        batchnorm("dec_nn.2", 50),
          linear("dec_nn.3", "decoder", 50, 100, kLrelu),      batchnorm("dec_nn.5", 100),
          linear("dec_nn.6", "decoder", 100, 200, kLrelu),     batchnorm("dec_nn.8", 200),
          linear("dec_nn.9", "decoder", 200, n, ""),           batchnorm("dec_nn.10", n, "relu")};
}

std::vector<LayerSpec> fpga_layers(int64_t n, int64_t z) {
  return {linear("en1", "encoder", n, 20, "relu"), linear("en2", "encoder", 20, 10, "relu"),
          linear("en3", "encoder", 10, z, ""),     linear("de1", "decoder", z, 10, "relu"),
          linear("de2", "decoder", 10, 20, "relu"), linear("de3", "decoder", 20, n, "")};
}

}  // namespace

int64_t LayerSpec::parameters() const {
  return kind == "linear" ? in_features * out_features + out_features : 2 * out_features;
}

int64_t LayerSpec::macs_per_sample() const {
  return kind == "linear" ? in_features * out_features : out_features;
}

int64_t LayerSpec::t1_operations(int64_t batch_size) const {
  return kind == "linear" ? in_features * out_features * batch_size + out_features : out_features * batch_size;
}

int64_t Architecture::parameters() const {
  int64_t p = 0;
  for (const auto& l : layers) p += l.parameters();
  return p;
}

int64_t Architecture::macs_per_sample() const {
  int64_t m = 0;
  for (const auto& l : layers) m += l.macs_per_sample();
  return m;
}

const std::vector<std::string>& model_names() {
  static const std::vector<std::string> names = {"AE", "AE_Dropout_BN", "CFD_dense_AE", "FPGA_prototype_model"};
  return names;
}

void check_model_name(const std::string& name) {
  for (const auto& n : model_names())
    if (n == name) return;
  std::string valid;
  for (const auto& n : model_names()) valid += (valid.empty() ? "" : ", ") + n;
  throw InputError("unknown model_name '" + name + "'", "valid names: " + valid);
}

int model_data_dimension(const std::string& name) {
  check_model_name(name);
  return name == "CFD_dense_AE" ? 2 : 1;
}

std::string model_dtype_name(const std::string& name) {
  check_model_name(name);
  return name == "CFD_dense_AE" ? "float32" : "float64";
}

static std::string number_text(double v) {  // 0.5, not 0.500000
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

int64_t latent_size(int64_t n_features, double compression_ratio) {
  if (!std::isfinite(compression_ratio) || compression_ratio <= 0)
    throw InputError("compression_ratio must be a positive number (got " + number_text(compression_ratio) + ")",
                     "Baler's CMS example uses 1.6, the CFD animation 100");
  if (n_features <= 0) throw InputError("the data have no features");
  // Compared as a double before any cast: a tiny ratio gives a size beyond int64, which a cast would
  // wrap (was: compression_ratio 1e-19 trained with a latent size of 1).
  const double z = std::ceil(static_cast<double>(n_features) / compression_ratio);
  if (z > static_cast<double>(n_features))
    throw InputError("compression_ratio " + number_text(compression_ratio) + " gives a latent size of " +
                         number_text(z) + ", larger than the " + std::to_string(n_features) + " input features",
                     "use a compression_ratio of at least 1");
  return std::max<int64_t>(static_cast<int64_t>(z), 1);
}

Architecture describe_model(const std::string& name, int64_t n_features, int64_t latent) {
  check_model_name(name);
  if (n_features <= 0 || latent <= 0)
    throw InputError("model " + name + ": features and latent size must be positive (got " +
                     std::to_string(n_features) + ", " + std::to_string(latent) + ")");
  Architecture a;
  a.model_name = name;
  a.dtype = model_dtype_name(name);
  a.data_dimension = model_data_dimension(name);
  a.n_features = n_features;
  a.latent = latent;
  if (name == "AE" || name == "CFD_dense_AE") a.layers = ae_layers(n_features, latent);
  else if (name == "AE_Dropout_BN") a.layers = dropout_bn_layers(n_features, latent);
  else a.layers = fpga_layers(n_features, latent);
  return a;
}

}  // namespace balerbench
