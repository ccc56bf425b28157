// test_synthetic.cpp: seeded CMS-like and CFD-like generators and their priors.
#include <gtest/gtest.h>

#include <cmath>

#include "common/error.h"
#include "datasets/synthetic.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

double at(const SyntheticData& d, int64_t r, int64_t c) { return d.values[r * d.shape[1] + c]; }

TEST(SyntheticCms, ShapeNamesAndDeterminism) {
  const SyntheticData a = generate_cms_like(2000, 7), b = generate_cms_like(2000, 7), c = generate_cms_like(2000, 8);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2000, 24}));
  EXPECT_EQ(a.names.size(), 24u);
  EXPECT_EQ(a.names[0], "recoPFJets_ak5PFJets__RECO.obj.pt_");
  EXPECT_EQ(a.names[23], "recoPFJets_ak5PFJets__RECO.obj.m_specific.mNeutralMultiplicity");
  EXPECT_EQ(a.values, b.values);
  EXPECT_NE(a.values, c.values);
  EXPECT_EQ(cms_type_list().size(), 24u);
}

TEST(SyntheticCms, PhysicsPriors) {
  const SyntheticData d = generate_cms_like(20000, 1);
  const auto& types = cms_type_list();
  int64_t hf_rows = 0, zero_mass = 0, zero_electron = 0;
  for (int64_t r = 0; r < d.shape[0]; ++r) {
    if (r > 0) EXPECT_LE(at(d, r - 1, 0), at(d, r, 0)) << "sorted by pT ascending";
    const double pt = at(d, r, 0), eta = at(d, r, 1), phi = at(d, r, 2);
    EXPECT_GE(pt, 5.0);
    EXPECT_LT(pt, 8000.0);
    EXPECT_LT(std::abs(eta), 5.0);
    EXPECT_LE(std::abs(phi), M_PI);
    EXPECT_GE(at(d, r, 3), 0.0);
    EXPECT_LT(at(d, r, 3), 800.0);
    EXPECT_GE(at(d, r, 4), 0.5);
    EXPECT_LE(at(d, r, 4), 1.0);
    for (int c = 0; c < 24; ++c) {
      if (types[c] == "int") EXPECT_EQ(at(d, r, c), std::round(at(d, r, c))) << "integer column " << c;
      if (c >= 5) EXPECT_GE(at(d, r, c), 0.0);
    }
    const bool hf = at(d, r, 10) + at(d, r, 11) > 0;
    if (hf) { ++hf_rows; EXPECT_GT(std::abs(eta), 3.0) << "HF only at |eta| > 3"; }
    zero_mass += at(d, r, 3) == 0;
    zero_electron += at(d, r, 8) == 0;
    // Identities: charged multiplicity = CH + e + mu; neutral = NH + photon + HF had + HF EM.
    EXPECT_EQ(at(d, r, 22), at(d, r, 12) + at(d, r, 15) + at(d, r, 16));
    EXPECT_EQ(at(d, r, 23), at(d, r, 13) + at(d, r, 14) + at(d, r, 17) + at(d, r, 18));
    EXPECT_DOUBLE_EQ(at(d, r, 19), at(d, r, 8));                 // charged EM = electrons
    EXPECT_DOUBLE_EQ(at(d, r, 21), at(d, r, 7) + at(d, r, 11));  // neutral EM = photons + HF EM
    double e_sum = 0;
    for (int c = 5; c <= 11; ++c) e_sum += at(d, r, c);
    EXPECT_NEAR(e_sum, pt * std::cosh(eta), 1e-6 * e_sum);
  }
  EXPECT_GT(hf_rows, 0);
  EXPECT_GT(zero_mass, 0);
  EXPECT_GT(zero_electron, d.shape[0] * 9 / 10) << "electrons mostly absent";
  // Steeply falling pT: the median is close to the 5 GeV threshold.
  EXPECT_LT(at(d, d.shape[0] / 2, 0), 8.0);
}

TEST(SyntheticCfd, SmoothSlowlyEvolvingFramesWithAnObstacle) {
  const SyntheticData d = generate_cfd_like(60, 50, 50, 3);
  EXPECT_EQ(d.shape, (std::vector<int64_t>{60, 50, 50}));
  EXPECT_TRUE(d.names.empty());
  EXPECT_EQ(d.values, generate_cfd_like(60, 50, 50, 3).values);
  auto v = [&](int64_t t, int64_t i, int64_t j) { return d.values[(t * 50 + i) * 50 + j]; };
  double sum = 0, sum2 = 0, dx2 = 0, dt2 = 0;
  int64_t n = 0, ndx = 0, ndt = 0;
  for (int64_t t = 0; t < 60; ++t)
    for (int64_t i = 0; i < 50; ++i)
      for (int64_t j = 0; j < 50; ++j) {
        sum += v(t, i, j); sum2 += v(t, i, j) * v(t, i, j); ++n;
        if (j > 0) { dx2 += std::pow(v(t, i, j) - v(t, i, j - 1), 2); ++ndx; }
        if (t > 0) { dt2 += std::pow(v(t, i, j) - v(t - 1, i, j), 2); ++ndt; }
      }
  const double mean = sum / n, var = sum2 / n - mean * mean;
  EXPECT_GT(var, 0);
  // Baler's CFD_animation.npz: mean 0.025, std 0.0093, dx^2/var 0.038, dt^2/var 0.044.
  EXPECT_NEAR(mean, 0.025, 0.005);
  EXPECT_NEAR(std::sqrt(var), 0.008, 0.003);
  EXPECT_LT(dx2 / ndx, 0.1 * var) << "spatially smooth";
  EXPECT_LT(dt2 / ndt, 0.1 * var) << "slow in time";
  EXPECT_GT(dt2 / ndt, 0.005 * var) << "but it does evolve";
  EXPECT_EQ(v(5, 24, 12), 0.0) << "obstacle block is exactly zero";
}

TEST(Synthetic, RejectsNonPositiveSizes) {
  expect_input_error([] { generate_cms_like(0, 0); }, "--rows");
  expect_input_error([] { generate_cfd_like(3, 0, 5, 0); }, "--height");
}

}  // namespace
}  // namespace balerbench
