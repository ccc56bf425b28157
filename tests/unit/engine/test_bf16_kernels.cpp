// amp_bf16's kernels (harness/engine/bf16_kernels.h): the VDPBF16PS level bit for bit against the
// emulation (the float32 mirror of the instruction's rounding order), on every product and epilogue,
// at Baler's widths and at odd ones, odd and even row counts; the emulation against double-precision
// arithmetic within bfloat16's rounding; the layouts' padding left zero.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "harness/engine/bf16_kernels.h"

namespace balerbench {
namespace {

using Bits = std::vector<uint16_t>;

float widen(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

struct Shape {
  int64_t m, out, in;
};

// The layers of Baler's AE on 24 features at ratio 1.6, and odd shapes (odd widths, odd rows, a
// single row, widths across the tiles' 16-column vectors and 12-row tiles).
const std::vector<Shape>& shapes() {
  static const std::vector<Shape> s = {
      {256, 200, 24}, {256, 100, 200}, {256, 50, 100}, {256, 15, 50}, {256, 50, 15}, {256, 24, 200},
      {255, 200, 24}, {1, 15, 50},     {7, 33, 17},    {13, 1, 3},    {26, 65, 49},  {64, 16, 16}};
  return s;
}

std::vector<float> random_floats(int64_t n, uint32_t seed, float scale) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = d(gen);
  return v;
}

// The operands of one layer, made by the kernels' own packing and cast (the emulation's).
struct Layer {
  Shape s;
  std::vector<float> w, b, x, bias;
  Bits wf, wb, x_rm, x_rp;
  explicit Layer(const Shape& shape, uint32_t seed) : s(shape) {
    const Bf16Kernels& e = bf16_kernels_emulated();
    w = random_floats(s.out * s.in, seed, 0.3f);
    b = random_floats(s.out, seed + 1, 0.1f);
    x = random_floats(s.m * s.in, seed + 2, 1.0f);
    bias.assign(static_cast<std::size_t>(s.out), 0.0f);
    wf.assign(static_cast<std::size_t>(bf16_wf_size(s.out, s.in)), 0);
    wb.assign(static_cast<std::size_t>(bf16_wb_size(s.out, s.in)), 0);
    x_rm.assign(static_cast<std::size_t>(bf16_rm_size(s.m, s.in)), 0);
    x_rp.assign(static_cast<std::size_t>(bf16_rp_size(s.m, s.in)), 0);
    e.pack_layer(w.data(), b.data(), s.out, s.in, wf.data(), wb.data(), bias.data());
    e.cast_input(x.data(), s.m, s.in, x_rm.data(), x_rp.data());
  }
};

// The gradient at a layer's output (m x out) as the loss would give it: rm and rp, bfloat16.
struct Gradient {
  Bits rm, rp;
  std::vector<float> db;
  Gradient(const Shape& s, uint32_t seed) {
    const std::vector<float> g = random_floats(s.m * s.out, seed, 0.05f);
    rm.assign(static_cast<std::size_t>(bf16_rm_size(s.m, s.out)), 0);
    rp.assign(static_cast<std::size_t>(bf16_rp_size(s.m, s.out)), 0);
    bf16_kernels_emulated().cast_input(g.data(), s.m, s.out, rm.data(), rp.data());
  }
};

std::string name(const Shape& s) {
  return std::to_string(s.m) + " rows, " + std::to_string(s.in) + " -> " + std::to_string(s.out);
}

class Bf16KernelsNative : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!bf16_dot_supported()) GTEST_SKIP() << kBf16Emulated << ": the emulation alone runs here";
  }
  const Bf16Kernels& native = bf16_kernels_native();
  const Bf16Kernels& emulated = bf16_kernels_emulated();
};

TEST_F(Bf16KernelsNative, PackAndCastGiveTheEmulationsBits) {
  EXPECT_STREQ(native.name, "avx512_bf16");
  for (const Shape& s : shapes()) {
    Layer L(s, 11);
    Bits wf(L.wf.size(), 0xFFFF), wb(L.wb.size(), 0xFFFF), rm(L.x_rm.size(), 0), rp(L.x_rp.size(), 0);
    std::vector<float> bias(L.bias.size(), -1.0f);
    native.pack_layer(L.w.data(), L.b.data(), s.out, s.in, wf.data(), wb.data(), bias.data());
    native.cast_input(L.x.data(), s.m, s.in, rm.data(), rp.data());
    EXPECT_EQ(wf, L.wf) << name(s);
    EXPECT_EQ(wb, L.wb) << name(s);
    EXPECT_EQ(bias, L.bias) << name(s);
    EXPECT_EQ(rm, L.x_rm) << name(s);
    EXPECT_EQ(rp, L.x_rp) << name(s);
  }
}

TEST_F(Bf16KernelsNative, ForwardGivesTheEmulationsBits) {
  for (Activation act : {Activation::kNone, Activation::kLeakyRelu, Activation::kRelu})
    for (const Shape& s : shapes()) {
      Layer L(s, 21);
      Bits rm[2], rp[2];
      for (int k = 0; k < 2; ++k) {
        rm[k].assign(static_cast<std::size_t>(bf16_rm_size(s.m, s.out)), 0);
        rp[k].assign(static_cast<std::size_t>(bf16_rp_size(s.m, s.out)), 0);
        (k ? native : emulated)
            .forward(L.x_rm.data(), L.wf.data(), L.bias.data(), s.m, s.out, s.in, act, rm[k].data(), rp[k].data());
      }
      EXPECT_EQ(rm[0], rm[1]) << name(s) << ", activation " << static_cast<int>(act);
      EXPECT_EQ(rp[0], rp[1]) << name(s) << ", activation " << static_cast<int>(act);
    }
}

TEST_F(Bf16KernelsNative, GradientsGiveTheEmulationsBits) {
  for (Activation act : {Activation::kNone, Activation::kLeakyRelu, Activation::kRelu})
    for (const Shape& s : shapes()) {
      Layer L(s, 31);
      Gradient g(s, 32);  // the layer's input x_rm, some of it negative: act' takes both branches
      std::vector<float> dw[2], db[2];
      Bits gi_rm[2], gi_rp[2];
      for (int k = 0; k < 2; ++k) {
        const Bf16Kernels& K = k ? native : emulated;
        dw[k].assign(static_cast<std::size_t>(s.out * s.in), -7.0f);
        db[k].assign(static_cast<std::size_t>(s.in), -7.0f);
        gi_rm[k].assign(static_cast<std::size_t>(bf16_rm_size(s.m, s.in)), 0);
        gi_rp[k].assign(static_cast<std::size_t>(bf16_rp_size(s.m, s.in)), 0);
        K.weight_grad(g.rp.data(), L.x_rp.data(), s.m, s.out, s.in, dw[k].data());
        K.input_grad(g.rm.data(), L.wb.data(), L.x_rm.data(), act, s.m, s.out, s.in, gi_rm[k].data(), gi_rp[k].data(),
                     db[k].data());
      }
      EXPECT_EQ(0, std::memcmp(dw[0].data(), dw[1].data(), dw[0].size() * sizeof(float))) << name(s);
      EXPECT_EQ(0, std::memcmp(db[0].data(), db[1].data(), db[0].size() * sizeof(float))) << name(s);
      EXPECT_EQ(gi_rm[0], gi_rm[1]) << name(s);
      EXPECT_EQ(gi_rp[0], gi_rp[1]) << name(s);
    }
}

TEST_F(Bf16KernelsNative, LossGivesTheEmulationsBits) {
  for (const Shape& s : shapes()) {
    Layer L(s, 41);  // x_rm as the model's output, the float input as the target
    const std::vector<float> target = random_floats(s.m * s.in, 42, 1.0f);
    Bits rm[2], rp[2];
    std::vector<float> db[2];
    double sums[2];
    for (int k = 0; k < 2; ++k) {
      rm[k].assign(static_cast<std::size_t>(bf16_rm_size(s.m, s.in)), 0);
      rp[k].assign(static_cast<std::size_t>(bf16_rp_size(s.m, s.in)), 0);
      db[k].assign(static_cast<std::size_t>(s.in), 0.0f);
      sums[k] = (k ? native : emulated)
                    .loss_backward(L.x_rm.data(), target.data(), s.m, s.in, 2.0f, 1.0f / 24, rm[k].data(), rp[k].data(),
                                   db[k].data());
    }
    EXPECT_EQ(sums[0], sums[1]) << name(s);
    EXPECT_EQ(rm[0], rm[1]) << name(s);
    EXPECT_EQ(rp[0], rp[1]) << name(s);
    EXPECT_EQ(0, std::memcmp(db[0].data(), db[1].data(), db[0].size() * sizeof(float))) << name(s);
  }
}

TEST_F(Bf16KernelsNative, RoundingGivesTheEmulationsBits) {
  std::vector<float> v = random_floats(1001, 51, 3.0f);
  v[0] = 1.0f + std::ldexp(1.0f, -8);  // a tie: to even (1.0)
  v[1] = std::nanf("");
  v[2] = INFINITY;
  v[3] = 1e-40f;  // subnormal: flushed to zero, as VCVTNEPS2BF16 (and oneDNN) rounds
  std::vector<float> a = v, b = v;
  emulated.round_to_bf16(a.data(), static_cast<int64_t>(a.size()));
  native.round_to_bf16(b.data(), static_cast<int64_t>(b.size()));
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)));
  EXPECT_EQ(a[0], 1.0f);
  EXPECT_TRUE(std::isnan(a[1]));
  EXPECT_EQ(a[2], INFINITY);
  EXPECT_EQ(a[3], 0.0f);
}

// The emulation itself, against double-precision arithmetic on the same bfloat16 operands: each
// output within bfloat16's rounding of the exact result (float32 accumulation adds far less).
TEST(Bf16KernelsEmulated, ProductsAgreeWithExactArithmetic) {
  const Bf16Kernels& e = bf16_kernels_emulated();
  for (const Shape& s : shapes()) {
    Layer L(s, 61);
    Bits y(static_cast<std::size_t>(bf16_rm_size(s.m, s.out)), 0), rp(static_cast<std::size_t>(bf16_rp_size(s.m, s.out)), 0);
    e.forward(L.x_rm.data(), L.wf.data(), L.bias.data(), s.m, s.out, s.in, Activation::kNone, y.data(), rp.data());
    for (int64_t r = 0; r < s.m; ++r)
      for (int64_t o = 0; o < s.out; ++o) {
        double exact = L.bias[o], size = std::fabs(L.bias[o]);
        for (int64_t i = 0; i < s.in; ++i) {
          const double wv = widen(L.wb[((o / 2) * bf16_rp_ld(s.in) + i) * 2 + (o % 2)]);
          const double xv = widen(L.x_rm[r * bf16_rm_ld(s.in) + i]);
          exact += xv * wv;
          size += std::fabs(xv * wv);
        }
        const double got = widen(y[r * bf16_rm_ld(s.out) + o]);
        EXPECT_NEAR(got, exact, std::ldexp(size, -7) + 1e-30) << name(s) << " at (" << r << ", " << o << ")";
      }
    // Padding stays zero: the odd column of rm, and rp's columns past `out`.
    for (int64_t r = 0; r < s.m; ++r)
      for (int64_t o = s.out; o < bf16_rm_ld(s.out); ++o) EXPECT_EQ(y[r * bf16_rm_ld(s.out) + o], 0) << name(s);
    for (std::size_t p = 0; p < rp.size() / 2; ++p)
      if (static_cast<int64_t>(p % bf16_rp_ld(s.out)) >= s.out) {
        EXPECT_EQ(rp[2 * p], 0) << name(s);
        EXPECT_EQ(rp[2 * p + 1], 0) << name(s);
      }
  }
}

TEST(Bf16KernelsEmulated, WeightGradientAgreesWithExactArithmetic) {
  const Bf16Kernels& e = bf16_kernels_emulated();
  for (const Shape& s : shapes()) {
    Layer L(s, 71);
    Gradient g(s, 72);
    std::vector<float> dw(static_cast<std::size_t>(s.out * s.in), 0.0f);
    e.weight_grad(g.rp.data(), L.x_rp.data(), s.m, s.out, s.in, dw.data());
    for (int64_t o = 0; o < s.out; ++o)
      for (int64_t i = 0; i < s.in; ++i) {
        double exact = 0, size = 0;
        for (int64_t r = 0; r < s.m; ++r) {
          const double t = static_cast<double>(widen(g.rm[r * bf16_rm_ld(s.out) + o])) *
                           widen(L.x_rm[r * bf16_rm_ld(s.in) + i]);
          exact += t;
          size += std::fabs(t);
        }
        EXPECT_NEAR(dw[o * s.in + i], exact, std::ldexp(size, -18) + 1e-30) << name(s);
      }
  }
}

TEST(Bf16KernelsEmulated, OddRowsGiveZeroGradientsPastTheLast) {
  const Bf16Kernels& e = bf16_kernels_emulated();
  const Shape s{7, 33, 17};
  Layer L(s, 81);
  const std::vector<float> target = random_floats(s.m * s.in, 82, 1.0f);
  Bits rm(static_cast<std::size_t>(bf16_rm_size(s.m, s.in)), 0xAAAA);
  Bits rp(static_cast<std::size_t>(bf16_rp_size(s.m, s.in)), 0xAAAA);
  std::vector<float> db(static_cast<std::size_t>(s.in), 0.0f);
  e.loss_backward(L.x_rm.data(), target.data(), s.m, s.in, 2.0f, 1.0f, rm.data(), rp.data(), db.data());
  for (int64_t c = 0; c < s.in; ++c) {
    EXPECT_EQ(rm[s.m * bf16_rm_ld(s.in) + c], 0);  // row 7 of rm
    EXPECT_EQ(rp[((s.m / 2) * bf16_rp_ld(s.in) + c) * 2 + 1], 0);  // the high half of pair 3
  }
}

}  // namespace
}  // namespace balerbench
