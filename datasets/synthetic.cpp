// synthetic.cpp: see synthetic.h.
#include "datasets/synthetic.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <numeric>
#include <random>

#include "common/error.h"
#include "datasets/generator_registry.h"

namespace balerbench {
namespace {

constexpr double kPi = 3.14159265358979323846;

// Portable distributions (std:: ones differ between standard libraries).
class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(seed) {}
  double uniform() { return (static_cast<double>(gen_() >> 11) + 0.5) * 0x1.0p-53; }  // (0, 1)
  double uniform(double a, double b) { return a + (b - a) * uniform(); }
  double normal() {  // Box-Muller
    if (has_spare_) { has_spare_ = false; return spare_; }
    const double u = uniform(), v = uniform();
    const double r = std::sqrt(-2.0 * std::log(u));
    spare_ = r * std::sin(2 * kPi * v);
    has_spare_ = true;
    return r * std::cos(2 * kPi * v);
  }
  double exponential(double mean) { return -mean * std::log(uniform()); }
  double gamma(double shape) {  // Marsaglia-Tsang, shape > 0
    if (shape < 1.0) return gamma(shape + 1.0) * std::pow(uniform(), 1.0 / shape);
    const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
    for (;;) {
      double x, v;
      do { x = normal(); v = 1.0 + c * x; } while (v <= 0);
      v = v * v * v;
      const double u = uniform();
      if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v;
    }
  }
  int64_t poisson(double mean) {
    if (mean <= 0) return 0;
    if (mean > 30) return std::max<int64_t>(0, std::llround(mean + std::sqrt(mean) * normal()));
    const double l = std::exp(-mean);
    int64_t k = 0;
    double p = 1.0;
    do { ++k; p *= uniform(); } while (p > l);
    return k - 1;
  }

 private:
  std::mt19937_64 gen_;
  bool has_spare_ = false;
  double spare_ = 0;
};

enum Col {
  kPt, kEta, kPhi, kMass, kArea,
  kChHadE, kNeHadE, kPhotonE, kElecE, kMuonE, kHfHadE, kHfEmE,
  kChHadN, kNeHadN, kPhotonN, kElecN, kMuonN, kHfHadN, kHfEmN,
  kChEmE, kChMuE, kNeEmE,
  kChN, kNeN,
  kCols
};

std::vector<double> cms_row(Rng& rng) {
  std::vector<double> r(kCols, 0.0);
  // pT: steeply falling power law from ~5 GeV (dN/dpT ~ pT^-4), cut below 8000 GeV.
  double pt;
  do { pt = 5.0 * std::pow(rng.uniform(), -1.0 / 3.0); } while (pt >= 8000.0);
  // eta: central-heavy, within the calorimeter's |eta| < 5.
  double eta;
  do { eta = 2.2 * rng.normal(); } while (std::abs(eta) >= 4.95);
  const double phi = rng.uniform(-kPi, kPi);
  const double energy = pt * std::cosh(eta);
  // Mass: a few GeV, growing with pT; 3% single-constituent jets with mass 0.
  double mass = rng.uniform() < 0.03 ? 0.0 : pt * (0.04 + 0.06 * rng.gamma(2.0) / 2.0);
  mass = std::min(mass, 799.0);
  const double area = std::clamp(0.79 + 0.06 * rng.normal(), 0.5, 1.0);
  const bool forward = std::abs(eta) > 3.0;
  const bool tracker = std::abs(eta) < 2.5;
  double e_ch = 0, e_nh = 0, e_ph = 0, e_el = 0, e_mu = 0, e_hfh = 0, e_hfem = 0;
  if (forward) {  // HF only beyond |eta| > 3
    const double a = rng.gamma(3.0), b = rng.gamma(2.0);
    e_hfh = energy * a / (a + b);
    e_hfem = energy - e_hfh;
  } else {
    const double a = tracker ? rng.gamma(6.0) : 0.0, b = rng.gamma(1.5), c = rng.gamma(2.5);
    const double s = a + b + c;
    e_ch = energy * a / s;
    e_nh = energy * b / s;
    e_ph = energy * c / s;
    if (tracker && rng.uniform() < 0.04) { e_el = e_ch * 0.2 * rng.uniform(); e_ch -= e_el; }
    if (tracker && rng.uniform() < 0.02) { e_mu = e_ch * 0.3 * rng.uniform(); e_ch -= e_mu; }
  }
  const double scale = std::log1p(energy / 5.0);  // multiplicities grow slowly with energy
  auto mult = [&](double e, double per_log) { return e > 0 ? std::max<int64_t>(1, rng.poisson(per_log * scale)) : 0; };
  const double n_ch = mult(e_ch, 3.0), n_nh = mult(e_nh, 0.8), n_ph = mult(e_ph, 2.0);
  const double n_el = mult(e_el, 0.3), n_mu = mult(e_mu, 0.3), n_hfh = mult(e_hfh, 1.5), n_hfem = mult(e_hfem, 1.2);
  r[kPt] = pt; r[kEta] = eta; r[kPhi] = phi; r[kMass] = mass; r[kArea] = area;
  r[kChHadE] = e_ch; r[kNeHadE] = e_nh; r[kPhotonE] = e_ph; r[kElecE] = e_el; r[kMuonE] = e_mu;
  r[kHfHadE] = e_hfh; r[kHfEmE] = e_hfem;
  r[kChHadN] = n_ch; r[kNeHadN] = n_nh; r[kPhotonN] = n_ph; r[kElecN] = n_el; r[kMuonN] = n_mu;
  r[kHfHadN] = n_hfh; r[kHfEmN] = n_hfem;
  r[kChEmE] = e_el;             // charged EM ~ electrons
  r[kChMuE] = e_mu;             // charged mu ~ muons
  r[kNeEmE] = e_ph + e_hfem;    // neutral EM ~ photons + HF EM
  r[kChN] = n_ch + n_el + n_mu;
  r[kNeN] = n_nh + n_ph + n_hfh + n_hfem;
  return r;
}

void check_positive(int64_t v, const std::string& what) {
  if (v <= 0) throw InputError("synthetic data: " + what + " must be positive (got " + std::to_string(v) + ")");
}

}  // namespace

const std::vector<std::string>& cms_column_names() {
  static const std::vector<std::string> names = {
      "recoPFJets_ak5PFJets__RECO.obj.pt_",
      "recoPFJets_ak5PFJets__RECO.obj.eta_",
      "recoPFJets_ak5PFJets__RECO.obj.phi_",
      "recoPFJets_ak5PFJets__RECO.obj.mass_",
      "recoPFJets_ak5PFJets__RECO.obj.mJetArea",
      "recoPFJets_ak5PFJets__RECO.obj.m_specific.mChargedHadronEnergy",
      "recoPFJets_ak5PFJets__RECO.obj.m_specific.mNeutralHadronEnergy",
      "recoPFJets_ak5PFJets__RECO.obj.m_specific.mPhotonEnergy",
      "recoPFJets_ak5PFJets__RECO.obj.m_specific.mElectronEnergy",
      "recoPFJets_ak5PFJets__RECO.obj.m_specific.mMuonEnergy",
      "recoPFJets_ak5PFJets__RECO.obj.m_specific.mHFHadronEnergy",
      "recoPFJets_ak5PFJets__RECO.obj.m_specific.mHFEMEnergy",
      "recoPFJets_ak5PFJets__RECO.obj.m_specific.mChargedHadronMultiplicity",
      "recoPFJets_ak5PFJets__RECO.obj.m_specific.mNeutralHadronMultiplicity",
      "recoPFJets_ak5PFJets__RECO.obj.m_specific.mPhotonMultiplicity",
      "recoPFJets_ak5PFJets__RECO.obj.m_specific.mElectronMultiplicity",
      "recoPFJets_ak5PFJets__RECO.obj.m_specific.mMuonMultiplicity",
      "recoPFJets_ak5PFJets__RECO.obj.m_specific.mHFHadronMultiplicity",
      "recoPFJets_ak5PFJets__RECO.obj.m_specific.mHFEMMultiplicity",
      "recoPFJets_ak5PFJets__RECO.obj.m_specific.mChargedEmEnergy",
      "recoPFJets_ak5PFJets__RECO.obj.m_specific.mChargedMuEnergy",
      "recoPFJets_ak5PFJets__RECO.obj.m_specific.mNeutralEmEnergy",
      "recoPFJets_ak5PFJets__RECO.obj.m_specific.mChargedMultiplicity",
      "recoPFJets_ak5PFJets__RECO.obj.m_specific.mNeutralMultiplicity",
  };
  return names;
}

const std::vector<std::string>& cms_type_list() {
  static const std::vector<std::string> types = [] {
    std::vector<std::string> t(12, "float64");
    t.insert(t.end(), 7, "int");
    t.insert(t.end(), 3, "float64");
    t.insert(t.end(), 2, "int");
    return t;
  }();
  return types;
}

void check_synthetic_memory(const std::string& who, const std::string& kind, int64_t rows, int64_t height,
                            int64_t width, int copies) {
  const DatasetGenerator& generator = dataset_generator(kind);
  const long double values = static_cast<long double>(rows) * generator.values_per_row(height, width);
  const long double need_bytes = values * 8 * copies;
  const long double have_bytes =
      static_cast<long double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<long double>(::sysconf(_SC_PAGE_SIZE));
  if (have_bytes <= 0 || need_bytes <= have_bytes) return;
  char why[200];
  std::snprintf(why, sizeof why, "%.3Lg GB for %.3Lg values (float64, %d cop%s), and this machine has %.3Lg GB of memory",
                need_bytes / 1e9, values, copies, copies == 1 ? "y" : "ies", have_bytes / 1e9);
  throw InputError(who + ": " + std::to_string(rows) + " " + generator.count_key + " need " + why,
                   "out of memory before it starts: use fewer rows or smaller dimensions");
}

SyntheticData generate_cms_like(int64_t rows, uint64_t seed) {
  check_positive(rows, "--rows");
  Rng rng(seed);
  std::vector<std::vector<double>> jets(static_cast<std::size_t>(rows));
  for (auto& j : jets) j = cms_row(rng);
  std::stable_sort(jets.begin(), jets.end(), [](const auto& a, const auto& b) { return a[kPt] < b[kPt]; });
  SyntheticData d;
  d.shape = {rows, kCols};
  d.values.reserve(static_cast<std::size_t>(rows) * kCols);
  for (const auto& j : jets) d.values.insert(d.values.end(), j.begin(), j.end());
  d.names = cms_column_names();
  return d;
}

SyntheticData generate_cfd_like(int64_t frames, int64_t height, int64_t width, uint64_t seed) {
  check_positive(frames, "--rows (frames)");
  check_positive(height, "--height");
  check_positive(width, "--width");
  Rng rng(seed);
  // Free-stream velocity u0 (m/s) and travelling wake modes with seeded
  // amplitudes, wavelengths, frequencies and phases. Tuned so that a 60-frame
  // 50x50 sample has the statistics of Baler's CFD_animation.npz (mean ~0.024,
  // std ~0.008, frame-to-frame RMS change ~0.002, smooth in space).
  const double u0 = 0.025 * (1.0 + 0.05 * rng.normal());
  constexpr int kModes = 3;
  double amp[kModes], kx[kModes], ky[kModes], omega[kModes], phase[kModes];
  for (int m = 0; m < kModes; ++m) {
    amp[m] = 0.012 / (m + 1) * (0.8 + 0.4 * rng.uniform());
    kx[m] = 2 * kPi * (m + 1) / static_cast<double>(width) * 0.7 * (0.8 + 0.4 * rng.uniform());
    ky[m] = 2 * kPi * (m + 1) / (2.0 * static_cast<double>(height));
    omega[m] = 0.35 * (m + 1) * (0.8 + 0.4 * rng.uniform());  // radians per frame
    phase[m] = rng.uniform(0, 2 * kPi);
  }
  // Obstacle: rows 22-27, columns 10-14 of a 50x50 frame (as in Baler's CFD file), scaled.
  const int64_t r0 = height * 22 / 50, r1 = std::max(r0 + 1, height * 28 / 50);
  const int64_t c0 = width * 10 / 50, c1 = std::max(c0 + 1, width * 15 / 50);
  const double cy = 0.5 * static_cast<double>(r0 + r1), cx = 0.5 * static_cast<double>(c0 + c1);
  const double sx = 50.0 / static_cast<double>(width);  // lengths below are in 50-pixel units
  SyntheticData d;
  d.shape = {frames, height, width};
  d.values.resize(static_cast<std::size_t>(frames * height * width));
  std::size_t k = 0;
  for (int64_t t = 0; t < frames; ++t)
    for (int64_t i = 0; i < height; ++i)
      for (int64_t j = 0; j < width; ++j, ++k) {
        if (i >= r0 && i < r1 && j >= c0 && j < c1) { d.values[k] = 0.0; continue; }
        const double dy = (static_cast<double>(i) - cy) / static_cast<double>(height);
        const double dx = (static_cast<double>(j) - cx) / static_cast<double>(width);
        const double jx = (static_cast<double>(j) - cx) * sx, jc = (static_cast<double>(j - c0)) * sx;
        const double blockage = std::exp(-(dx * dx + dy * dy) / 0.006);  // stagnation in front of the body
        const double side = std::exp(-std::pow(std::abs(dy) - 0.12, 2) / 0.004) * std::exp(-dx * dx / 0.05);
        const double wake = jx > 0 ? std::exp(-dy * dy / 0.006) * (1 - std::exp(-jx / 4.0)) * std::exp(-jx / 60.0) : 0.0;
        const double envelope = jc > 0 ? (1 - std::exp(-jc / 5.0)) * std::exp(-dy * dy / 0.04) : 0.0;
        double u = u0 * (1.0 - 0.9 * blockage) + 0.8 * u0 * side - 1.3 * u0 * wake;
        for (int m = 0; m < kModes; ++m)
          u += amp[m] * envelope * std::sin(kx[m] * static_cast<double>(j) - omega[m] * static_cast<double>(t) + phase[m]) *
               std::cos(ky[m] * (static_cast<double>(i) - cy));
        d.values[k] = u;
      }
  return d;
}

const DatasetGenerator& cms_generator() {
  static const DatasetGenerator entry = {
      "cms", "CMS-like jets", "jets, 24 columns", "rows", false, cms_type_list,
      [](int64_t, int64_t) { return static_cast<long double>(kCols); },
      [](const GeneratorParams& p) {
        return "CMS-like " + std::to_string(p.rows) + " rows (synthetic, seed " + std::to_string(p.seed) + ")";
      },
      [](const GeneratorParams& p) { return generate_cms_like(p.rows, p.seed); }};
  return entry;
}

const DatasetGenerator& cfd_generator() {
  static const DatasetGenerator entry = {
      "cfd", "CFD-like frames", "N, H, W frames", "frames", true, nullptr,
      [](int64_t height, int64_t width) { return static_cast<long double>(height) * width; },
      [](const GeneratorParams& p) {
        return "CFD-like " + std::to_string(p.rows) + "x" + std::to_string(p.height) + "x" + std::to_string(p.width) +
               " (synthetic, seed " + std::to_string(p.seed) + ")";
      },
      [](const GeneratorParams& p) { return generate_cfd_like(p.rows, p.height, p.width, p.seed); }};
  return entry;
}

}  // namespace balerbench
