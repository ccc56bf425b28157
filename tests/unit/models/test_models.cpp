// test_models.cpp: the LibTorch modules against the spec: counts, dtypes,
// state-dict keys, activations, save/load.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include "common/error.h"
#include "models/autoencoder.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

TEST(Models, ParameterCountsAndDtypes) {
  struct Case { const char* name; int64_t n, z, params; at::ScalarType dtype; };
  for (const Case& c : {Case{"AE", 24, 15, 61839, at::kDouble}, Case{"AE", 24, 12, 61536, at::kDouble},
                        Case{"AE_Dropout_BN", 24, 15, 62587, at::kDouble},
                        Case{"CFD_dense_AE", 2500, 25, 1055725, at::kFloat},
                        Case{"FPGA_prototype_model", 24, 15, 1759, at::kDouble}}) {
    auto m = make_model(c.name, c.n, c.z);
    EXPECT_EQ(count_parameters(*m), c.params) << c.name;
    EXPECT_EQ(count_parameters(*m), m->architecture().parameters()) << c.name;
    for (const auto& p : m->parameters()) EXPECT_EQ(p.scalar_type(), c.dtype) << c.name;
  }
}

TEST(Models, StateDictKeysInBalerOrder) {
  auto m = make_model("AE", 24, 15);
  std::vector<std::string> keys;
  for (const auto& p : m->named_parameters()) keys.push_back(p.key());
  const std::vector<std::string> expected = {"en1.weight", "en1.bias", "en2.weight", "en2.bias", "en3.weight",
                                             "en3.bias",   "en4.weight", "en4.bias", "de1.weight", "de1.bias",
                                             "de2.weight", "de2.bias",   "de3.weight", "de3.bias", "de4.weight",
                                             "de4.bias"};
  EXPECT_EQ(keys, expected);
  auto bn = make_model("AE_Dropout_BN", 24, 15);
  std::vector<std::string> bn_keys;
  for (const auto& p : bn->named_parameters()) bn_keys.push_back(p.key());
  EXPECT_EQ(bn_keys.front(), "enc_nn.0.weight");
  EXPECT_EQ(bn_keys.back(), "dec_nn.10.bias");
}

TEST(Models, DefaultInitIsUniformInInverseSqrtFanIn) {
  torch::manual_seed(0);
  auto m = make_model("AE", 24, 15);
  for (const auto& p : m->named_parameters()) {
    const int64_t fan_in = p.key().find("bias") != std::string::npos ? -1 : p.value().size(1);
    if (fan_in < 0) continue;
    EXPECT_LE(p.value().abs().max().item<double>(), 1.0 / std::sqrt(static_cast<double>(fan_in)) + 1e-12) << p.key();
  }
}

TEST(Models, ForwardIsDecodeOfEncodeWithNoActivationAtLatentOrOutput) {
  torch::manual_seed(1);
  auto m = make_model("AE", 24, 15);
  const at::Tensor x = torch::randn({32, 24}, torch::kDouble);
  const at::Tensor z = m->encode(x);
  EXPECT_EQ(z.sizes(), (std::vector<int64_t>{32, 15}));
  EXPECT_TRUE(torch::equal(m->forward(x), m->decode(z)));
  EXPECT_LT(z.min().item<double>(), 0.0) << "latent is linear, so it takes negative values";
  // A manual forward with F.leaky_relu(0.01).
  auto named = m->named_parameters();
  auto lin = [&](const at::Tensor& h, const std::string& l) {
    return torch::addmm(named[l + ".bias"], h, named[l + ".weight"].t());
  };
  auto lrelu = [](const at::Tensor& h) { return torch::where(h > 0, h, 0.01 * h); };
  at::Tensor h = lrelu(lin(x, "en1"));
  h = lrelu(lin(h, "en2"));
  h = lrelu(lin(h, "en3"));
  EXPECT_TRUE(torch::allclose(lin(h, "en4"), z, 1e-12, 1e-12));
}

TEST(Models, DropoutBnOutputIsNonNegativeAndFpgaShapes) {
  torch::manual_seed(2);
  auto bn = make_model("AE_Dropout_BN", 24, 15);
  bn->eval();
  const at::Tensor x = torch::randn({16, 24}, torch::kDouble);
  EXPECT_GE(bn->forward(x).min().item<double>(), 0.0);
  auto fpga = make_model("FPGA_prototype_model", 24, 15);
  EXPECT_EQ(fpga->forward(x).sizes(), (std::vector<int64_t>{16, 24}));
}

TEST(Models, SaveLoadRoundTripAndMismatch) {
  TempDir dir;
  torch::manual_seed(3);
  auto a = make_model("AE_Dropout_BN", 24, 15);
  a->train();
  a->forward(torch::randn({8, 24}, torch::kDouble));  // move BN running stats
  save_state_dict(*a, dir.path("m.pt"));
  torch::manual_seed(4);
  auto b = make_model("AE_Dropout_BN", 24, 15);
  load_state_dict(*b, dir.path("m.pt"));
  auto pa = a->named_parameters(), pb = b->named_parameters();
  for (const auto& p : pa) EXPECT_TRUE(torch::equal(p.value(), pb[p.key()])) << p.key();
  auto ba = a->named_buffers(), bb = b->named_buffers();
  for (const auto& p : ba) EXPECT_TRUE(torch::equal(p.value(), bb[p.key()])) << p.key();
  auto other = make_model("AE_Dropout_BN", 24, 12);
  expect_input_error([&] { load_state_dict(*other, dir.path("m.pt")); }, "the model does not match");
  auto ae = make_model("AE", 24, 15);
  expect_input_error([&] { load_state_dict(*ae, dir.path("m.pt")); }, "the model does not match");
  expect_input_error([&] { load_state_dict(*ae, dir.path("none.pt")); }, "model file not found");
  write_text(dir.path("junk.pt"), "junk");
  expect_input_error([&] { load_state_dict(*ae, dir.path("junk.pt")); }, "not a readable model file");
}

}  // namespace
}  // namespace balerbench
