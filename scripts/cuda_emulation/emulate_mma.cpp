// emulate_mma.cpp: fused_cuda_mma.cu's tensor-core modes run on the host (shim.h; run.sh makes mma.inc
// from the .cu): convert_weights, mma_step, reduce_mma and, with loss scaling, adam_scaled, against a
// float64 reference that rounds where the kernels (and autocast) round: the input and every stored
// activation and gradient to the mode's type, the products' inputs to tf32 in tf32. Every buffer and
// all of shared memory start as NaN, the padded weight copy as zero (the engine's at::zeros), so an
// element no thread wrote fails. Then loss scaling: a clean step (Adam taken, the step counted, the
// scale grown at growth_interval 1) and an overflowing one (skipped: nothing moves, the scale backs off).
#include "mma.inc"

#include <cstdio>
#include <cstring>
#include <random>

#include "chain.h"

namespace {

double stored(MmaMode mode, double v) {  // what the mode stores, as float64
  const float f = static_cast<float>(v);
  if (mode == kMmaBf16) return __bfloat162float(__float2bfloat16_rn(f));
  if (mode == kMmaFp16) return __half2float(__float2half_rn(f));
  return f;
}
double operand(MmaMode mode, double v) {  // what the tensor core multiplies
  return mode == kMmaTf32 ? nvcuda::wmma::__float_to_tf32(static_cast<float>(v)) : v;
}
double act_of(double z, int act) { return act == kActLeakyRelu ? (z > 0 ? z : 0.01 * z) : act == kActRelu ? (z > 0 ? z : 0.0) : z; }
double act_grad_of(double g, double y, int act) {
  return act == kActLeakyRelu ? (y > 0 ? g : 0.01 * g) : act == kActRelu ? (y > 0 ? g : 0.0) : g;
}

// The batch's gradient (unscaled) and loss in float64 with the mode's roundings.
std::vector<double> reference(const LayerTable& n, MmaMode mode, const std::vector<float>& p, const std::vector<float>& x,
                              int rows, bool mean, double scale, double* loss) {
  const int L = n.layers, F = n.n_features;
  const auto S = [mode](double v) { return stored(mode, v); };
  const auto Q = [mode](double v) { return operand(mode, v); };
  const auto W = [&](int l, int j, int k) { return S(p[n.weight_offset[l] + static_cast<int64_t>(j) * n.in[l] + k]); };
  std::vector<Matrix> a(L + 1);
  for (float v : x) a[0].push_back(S(v));
  for (int i = 0; i < L; ++i) {
    a[i + 1].assign(static_cast<size_t>(rows) * n.out[i], 0.0);
    for (int r = 0; r < rows; ++r)
      for (int j = 0; j < n.out[i]; ++j) {
        double z = 0;
        for (int k = 0; k < n.in[i]; ++k) z += Q(a[i][static_cast<size_t>(r) * n.in[i] + k]) * Q(W(i, j, k));
        a[i + 1][static_cast<size_t>(r) * n.out[i] + j] = S(act_of(S(z + S(p[n.bias_offset[i] + j])), n.act[i]));
      }
  }
  const double norm = mean ? 2.0 / (static_cast<double>(rows) * F) : 2.0, go = mean ? 1.0 : 1.0 / F;
  Matrix g(a[L].size());
  double squares = 0;
  for (size_t e = 0; e < g.size(); ++e) {
    const double d = a[L][e] - x[e];
    squares += d * d;
    g[e] = S(act_grad_of(S(norm * d * go * scale), a[L][e], n.act[L - 1]));
  }
  *loss = squares * (mean ? 1.0 / (static_cast<double>(rows) * F) : 1.0 / F);
  std::vector<double> grad(n.params, 0.0);
  for (int i = L - 1; i >= 0; --i) {
    for (int j = 0; j < n.out[i]; ++j)
      for (int r = 0; r < rows; ++r) {
        const double gj = g[static_cast<size_t>(r) * n.out[i] + j];
        grad[n.bias_offset[i] + j] += gj;
        for (int k = 0; k < n.in[i]; ++k)
          grad[n.weight_offset[i] + static_cast<int64_t>(j) * n.in[i] + k] += Q(gj) * Q(a[i][static_cast<size_t>(r) * n.in[i] + k]);
      }
    if (i == 0) break;
    Matrix below(static_cast<size_t>(rows) * n.in[i], 0.0);
    for (int r = 0; r < rows; ++r)
      for (int k = 0; k < n.in[i]; ++k) {
        double s = 0;
        for (int j = 0; j < n.out[i]; ++j) s += Q(g[static_cast<size_t>(r) * n.out[i] + j]) * Q(W(i, j, k));
        below[static_cast<size_t>(r) * n.in[i] + k] = S(act_grad_of(S(s), a[i][static_cast<size_t>(r) * n.in[i] + k], n.act[i - 1]));
      }
    g.swap(below);
  }
  for (double& v : grad) v = S(v) * static_cast<double>(1.0f / static_cast<float>(scale));
  return grad;
}

struct Scaling {  // adam_scaled's state; scale 0: no loss scaling
  float scale = 0, found_inf = 0, skipped = 0;
  int tracker = 0, interval = 2000;
  int64_t steps = 0;
  unsigned blocks_done = 0;
};

struct Emulated {
  std::vector<float> grads, params, m, v, partials;
  std::vector<double> weights;  // the padded copy, as float64
  double loss = 0;
};

// One step: convert_weights, mma_step, reduce_mma (Adam's first step, lr 1e-3, unless scaled), adam_scaled.
template <int Mode>
Emulated emulate(const LayerTable& n, const std::vector<float>& p, const std::vector<float>& x, int rows, bool mean,
                 Scaling* sc) {
  using Stored = typename Mma<Mode>::Stored;
  const float nan = std::nanf("");
  const int tiles = (rows + kMmaTileRows - 1) / kMmaTileRows;
  const unsigned param_blocks = static_cast<unsigned>((n.params + kAdamThreads - 1) / kAdamThreads);
  Emulated e{std::vector<float>(n.params, nan), p, std::vector<float>(n.params, 0.0f), std::vector<float>(n.params, 0.0f),
             std::vector<float>(static_cast<size_t>(tiles) * n.padded_params, nan), {}, 0.0};
  std::vector<Stored> weights(n.padded_params, Mma<Mode>::store(0.0f));
  std::vector<double> squares(tiles, std::nan(""));
  std::fill(std::begin(g_smem), std::end(g_smem), nan);
  launch(param_blocks, kAdamThreads, [&] { convert_weights_kernel<Mode>(n, p.data(), weights.data()); });
  MmaStepArgs t;
  t.x = x.data(), t.rows = rows, t.weights_mma = weights.data(), t.partials = e.partials.data(), t.tile_sq_err = squares.data();
  t.norm = static_cast<float>(mean ? 2.0 / (rows * static_cast<double>(n.n_features)) : 2.0);
  t.grad_output = static_cast<float>(mean ? 1.0 : 1.0 / n.n_features);
  t.scale = sc ? &sc->scale : nullptr;
  launch(tiles, kTileThreads, [&] { mma_step_kernel<Mode>(n, t); });
  ReduceAdamArgs r;
  r.partials = e.partials.data(), r.tile_sq_err = squares.data(), r.grads = e.grads.data(), r.params = e.params.data();
  r.exp_avg = e.m.data(), r.exp_avg_sq = e.v.data(), r.weights_mma = weights.data(), r.loss_sum = &e.loss;
  r.batch_scale = mean ? 1.0 / (rows * static_cast<double>(n.n_features)) : 1.0 / n.n_features;
  r.bias_correction2_sqrt = static_cast<float>(std::sqrt(1 - 0.999));
  r.one_minus_beta1 = static_cast<float>(1 - 0.9), r.one_minus_beta2 = static_cast<float>(1 - 0.999);
  r.neg_step = -1e-3f / static_cast<float>(1 - 0.9);
  r.adam = sc == nullptr;
  if (sc) r.scale = &sc->scale, r.found_inf = &sc->found_inf;
  launch(param_blocks, kAdamThreads, [&] { reduce_mma_kernel<Mode>(n, tiles, r); });
  if (sc) {
    ScaledAdamArgs s;
    s.adam = r, s.lr = 1e-3f, s.scale = &sc->scale, s.growth_tracker = &sc->tracker, s.skipped = &sc->skipped;
    s.adam_steps = &sc->steps, s.blocks_done = &sc->blocks_done, s.growth_interval = sc->interval;
    launch(param_blocks, kAdamThreads, [&] { adam_scaled_kernel<Mode>(n, s); });
  }
  for (const Stored& w : weights) e.weights.push_back(shim_float(w));
  return e;
}

// The kernels' arithmetic in float32, in the emulation's order (a product's k in order from 0, the
// rows of a tile in order, the tiles in order), rounding where they round: the emulated kernels must
// give its gradient bit for bit. (On a GPU the tensor cores sum in their own order; this checks where
// the kernels round and what they index, which a few-ulp tolerance against float64 cannot.)
template <int Mode>
std::vector<float> mirror(const LayerTable& n, const std::vector<float>& p, const std::vector<float>& x, int rows, bool mean,
                          float scale) {
  using T = Mma<Mode>;
  const auto S = [](float v) { return T::load(T::store(v)); };
  const auto Q = [](float v) { return Mode == kMmaTf32 ? nvcuda::wmma::__float_to_tf32(v) : v; };
  const auto W = [&](int l, int j, int k) { return S(p[n.weight_offset[l] + static_cast<int64_t>(j) * n.in[l] + k]); };
  const int L = n.layers, F = n.n_features, tiles = (rows + kMmaTileRows - 1) / kMmaTileRows;
  std::vector<std::vector<float>> a(L + 1);
  for (float v : x) a[0].push_back(S(v));
  for (int i = 0; i < L; ++i)
    for (int r = 0; r < rows; ++r)
      for (int j = 0; j < n.out[i]; ++j) {
        float z = 0.0f;
        for (int k = 0; k < n.in[i]; ++k) z += Q(a[i][static_cast<size_t>(r) * n.in[i] + k]) * Q(W(i, j, k));
        a[i + 1].push_back(S(activate(S(z + S(p[n.bias_offset[i] + j])), n.act[i])));
      }
  const float norm = static_cast<float>(mean ? 2.0 / (rows * static_cast<double>(F)) : 2.0);
  const float grad_output = static_cast<float>(mean ? 1.0 : 1.0 / F) * scale;
  std::vector<float> g(a[L].size());
  for (size_t e = 0; e < g.size(); ++e)
    g[e] = S(activation_grad(S((norm * (a[L][e] - x[e])) * grad_output), a[L][e], n.act[L - 1]));
  std::vector<float> grad(n.params, 0.0f);
  const auto tile_sums = [&](int64_t flat, auto term) {  // each tile's rows in order, then the tiles
    float total = 0.0f;
    for (int t = 0; t < tiles; ++t) {
      float s = 0.0f;
      for (int r = t * kMmaTileRows; r < std::min(rows, (t + 1) * kMmaTileRows); ++r) s += term(r);
      total += s;
    }
    grad[flat] = total;
  };
  for (int i = L - 1; i >= 0; --i) {
    const int in = n.in[i], out = n.out[i];
    for (int j = 0; j < out; ++j) {
      for (int k = 0; k < in; ++k)
        tile_sums(n.weight_offset[i] + static_cast<int64_t>(j) * in + k,
                  [&](int r) { return Q(g[static_cast<size_t>(r) * out + j]) * Q(a[i][static_cast<size_t>(r) * in + k]); });
      tile_sums(n.bias_offset[i] + j, [&](int r) { return g[static_cast<size_t>(r) * out + j]; });
    }
    if (i == 0) break;
    std::vector<float> below(static_cast<size_t>(rows) * in);
    for (int r = 0; r < rows; ++r)
      for (int k = 0; k < in; ++k) {
        float s = 0.0f;
        for (int j = 0; j < out; ++j) s += Q(g[static_cast<size_t>(r) * out + j]) * Q(W(i, j, k));
        below[static_cast<size_t>(r) * in + k] = S(activation_grad(S(s), a[i][static_cast<size_t>(r) * in + k], n.act[i - 1]));
      }
    g.swap(below);
  }
  const float inv_scale = 1.0f / scale;
  for (float& v : grad) v = inv_scale == 1.0f ? S(v) : S(v) * inv_scale;
  return grad;
}

int count_unlike(const std::vector<float>& got, const std::vector<float>& want) {
  int unlike = 0;
  for (size_t i = 0; i < want.size(); ++i) unlike += !(got[i] == want[i]);
  return unlike;
}

const char* mode_name(MmaMode m) { return m == kMmaTf32 ? "tf32" : m == kMmaBf16 ? "bf16" : "fp16"; }

// Gradient tolerance, relative to the largest element: a few units in the last place of the stored
// type (float32 and double sums round a stored value the other way now and then).
double tolerance(MmaMode m) { return m == kMmaTf32 ? 2e-3 : m == kMmaBf16 ? 2e-2 : 3e-3; }

int count_bad_copy(const LayerTable& n, MmaMode mode, const Emulated& e) {  // the padded copy = stored(params), zero padding
  int bad = 0;
  std::vector<char> seen(n.padded_params, 0);
  for (int l = 0; l < n.layers; ++l) {
    for (int j = 0; j < n.out[l]; ++j) {
      for (int k = 0; k < n.in[l]; ++k) {
        const int64_t pi = n.pad_weight_offset[l] + static_cast<int64_t>(j) * n.pad_in[l] + k;
        seen[pi] = 1;
        bad += e.weights[pi] != stored(mode, e.params[n.weight_offset[l] + static_cast<int64_t>(j) * n.in[l] + k]);
      }
      seen[n.pad_bias_offset[l] + j] = 1;
      bad += e.weights[n.pad_bias_offset[l] + j] != stored(mode, e.params[n.bias_offset[l] + j]);
    }
  }
  for (int64_t i = 0; i < n.padded_params; ++i) bad += !seen[i] && e.weights[i] != 0.0;
  return bad;
}

template <int Mode>
bool check(const LayerTable& n, int rows, bool mean, unsigned seed) {
  const MmaMode mode = static_cast<MmaMode>(Mode);
  const int features = n.n_features;
  std::vector<float> p, x;
  draw(n, rows, seed, &p, &x);
  double loss = 0;
  const std::vector<double> ref = reference(n, mode, p, x, rows, mean, 1.0, &loss);
  const Emulated e = emulate<Mode>(n, p, x, rows, mean, nullptr);
  const int unlike = count_unlike(e.grads, mirror<Mode>(n, p, x, rows, mean, 1.0f));
  double largest = 0, diff = 0, adam = 0;
  int unwritten = 0;
  for (int64_t i = 0; i < n.params; ++i) {
    largest = std::max(largest, std::fabs(ref[i]));
    diff = std::max(diff, std::isfinite(e.grads[i]) ? std::fabs(e.grads[i] - ref[i]) : INFINITY);
    unwritten += !std::isfinite(e.grads[i]) || !std::isfinite(e.params[i]);
    adam = std::max(adam, std::fabs(e.params[i] - (p[i] - 1e-3 * e.grads[i] / (std::fabs(e.grads[i]) + 1e-8))));
  }
  for (float v : e.partials) unwritten += !std::isfinite(v);
  const int copy = count_bad_copy(n, mode, e);
  const bool ok = unwritten == 0 && copy == 0 && diff <= tolerance(mode) * largest && std::fabs(e.loss - loss) <= 1e-3 * loss &&
                  adam < 1e-6 && unlike == 0;
  std::printf("%s %s %d features, %d rows, %s: gradient %.2e of the largest (tolerance %.0e), %d unlike the float32 "
              "mirror, loss %.7g (reference %.7g), Adam %.1e, %d unwritten, %d wrong in the weight copy\n",
              ok ? "ok  " : "FAIL", mode_name(mode), features, rows, mean ? "mse_mean" : "baler_sum", diff / largest,
              tolerance(mode), unlike, e.loss, loss, adam, unwritten, copy);
  return ok;
}

// fp16 with loss scaling: at 2^8 the step is taken (the gradient unscaled, the step counted, the scale
// doubled at growth_interval 1); at 2^40 the scaled gradient overflows float16, and the step is skipped.
// (GradScaler's first scale, 2^16, overflows this chain's float16 gradient too, as it does in PyTorch:
// the first steps are skipped and the scale backs off.)
bool check_scaling(const LayerTable& n, int rows, unsigned seed) {
  const int features = n.n_features;
  std::vector<float> p, x;
  draw(n, rows, seed, &p, &x);
  double loss = 0;
  const std::vector<double> ref = reference(n, kMmaFp16, p, x, rows, false, 256.0, &loss);
  Scaling clean;
  clean.scale = 256.0f, clean.interval = 1;
  const Emulated e = emulate<kMmaFp16>(n, p, x, rows, false, &clean);
  double largest = 0, diff = 0, adam = 0;
  for (int64_t i = 0; i < n.params; ++i) {
    largest = std::max(largest, std::fabs(ref[i]));
    diff = std::max(diff, std::isfinite(e.grads[i]) ? std::fabs(e.grads[i] - ref[i]) : INFINITY);
    adam = std::max(adam, std::fabs(e.params[i] - (p[i] - 1e-3 * e.grads[i] / (std::fabs(e.grads[i]) + 1e-8))));
  }
  const int unlike = count_unlike(e.grads, mirror<kMmaFp16>(n, p, x, rows, false, 256.0f));
  const bool clean_ok = diff <= tolerance(kMmaFp16) * largest && adam < 1e-6 && unlike == 0 && clean.steps == 1 && clean.scale == 512.0f &&
                        clean.tracker == 0 && clean.skipped == 0 && clean.found_inf == 0 && clean.blocks_done == 0 &&
                        count_bad_copy(n, kMmaFp16, e) == 0;
  std::printf("%s fp16 scaled by 2^8, %d rows: gradient %.2e of the largest, %d unlike the mirror, Adam %.1e, step %lld, "
              "scale %g, tracker %d, skipped %g\n", clean_ok ? "ok  " : "FAIL", rows, diff / largest, unlike, adam,
              static_cast<long long>(clean.steps),
              clean.scale, clean.tracker, clean.skipped);
  Scaling over;
  over.scale = 1099511627776.0f, over.tracker = 5;  // 2^40
  const Emulated o = emulate<kMmaFp16>(n, p, x, rows, false, &over);
  int moved = 0;
  for (int64_t i = 0; i < n.params; ++i) moved += o.params[i] != p[i] || o.m[i] != 0.0f || o.v[i] != 0.0f;
  const bool over_ok = moved == 0 && over.steps == 0 && over.scale == 549755813888.0f && over.tracker == 0 &&
                       over.skipped == 1 && over.found_inf == 0 && over.blocks_done == 0;
  std::printf("%s fp16 scaled by 2^40, %d rows: skipped %g, %d parameters or moments moved, step %lld, scale %g, tracker %d\n",
              over_ok ? "ok  " : "FAIL", rows, over.skipped, moved, static_cast<long long>(over.steps), over.scale, over.tracker);
  return clean_ok && over_ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--small") == 0) return check<kMmaFp16>(ae(7, 4), 10, false, 9) ? 0 : 1;
  int failed = 0, cases = 0;
  const auto count = [&](bool ok) { failed += !ok, ++cases; };
  count(check<kMmaTf32>(ae(24, 15), 40, false, 1));
  count(check<kMmaBf16>(ae(24, 15), 33, true, 2));
  count(check<kMmaFp16>(ae(24, 15), 17, false, 3));
  count(check<kMmaFp16>(ae(7, 4), 1, true, 4));
  count(check<kMmaBf16>(ae(11, 6), 50, false, 5));
  count(check<kMmaTf32>(fpga(), 45, true, 6));
  count(check_scaling(ae(24, 15), 20, 7));
  std::printf("%d of %d failed\n", failed, cases);
  return failed ? 1 : 0;
}
