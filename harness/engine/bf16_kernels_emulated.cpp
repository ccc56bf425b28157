// bf16_kernels_emulated.cpp: amp_bf16's kernels in plain float32 code, on every CPU: the float32
// mirror of VDPBF16PS's rounding order (bf16_kernels.h), which the hardware level is tested against
// bit for bit. Built with -ffp-contract=off: every multiply and add is rounded where the source
// rounds it (a product of two bfloat16 values is exact, so only the additions round).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "harness/engine/bf16_kernels.h"

namespace balerbench {
namespace {

inline float widen(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// VCVTNEPS2BF16: round to nearest even; a subnormal read as zero (its sign kept); a NaN kept, made quiet.
inline uint16_t narrow(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if (f != f) return static_cast<uint16_t>((u >> 16) | 0x0040u);
  if (std::fabs(f) < 1.17549435e-38f) return static_cast<uint16_t>((u >> 16) & 0x8000u);
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

// VDPBF16PS reads subnormal inputs as zero and flushes subnormal results to zero.
inline float flush(float x) { return std::fabs(x) < 1.17549435e-38f ? 0.0f * x : x; }
inline float lo(uint32_t pair) { return flush(widen(static_cast<uint16_t>(pair))); }
inline float hi(uint32_t pair) { return flush(widen(static_cast<uint16_t>(pair >> 16))); }

// One lane of VDPBF16PS: the odd members' product, then the even members'.
inline float dot_pair(float acc, uint32_t a, uint32_t b) {
  acc = flush(flush(acc) + hi(a) * hi(b));
  return flush(acc + lo(a) * lo(b));
}

inline uint32_t pair_of(uint16_t low, uint16_t high) {
  return static_cast<uint32_t>(low) | (static_cast<uint32_t>(high) << 16);
}

inline const uint32_t* pairs(const uint16_t* p) { return reinterpret_cast<const uint32_t*>(p); }

inline uint16_t activate(uint16_t y, Activation act) {
  const float f = widen(y);
  if (act == Activation::kLeakyRelu) return f > 0 ? y : narrow(f * 0.01f);
  if (act == Activation::kRelu) return f > 0 ? y : static_cast<uint16_t>(0);
  return y;
}

// g * act'(a) with a the activation's output (autograd's rule), rounded.
inline uint16_t derive(uint16_t g, uint16_t a, Activation act) {
  if (act == Activation::kNone) return g;
  const float slope = act == Activation::kLeakyRelu ? 0.01f : 0.0f;
  return widen(a) > 0 ? g : narrow(widen(g) * slope);
}

// Writes v at (r, c) of a (m x cols) table into rm, and into rp unless it is null; rp's row past the
// last (m odd) is zero.
inline void store_rows(uint16_t* rm, uint16_t* rp, int64_t r, int64_t m, int64_t cols, int64_t c, uint16_t v) {
  rm[r * bf16_rm_ld(cols) + c] = v;
  if (rp) rp[((r >> 1) * bf16_rp_ld(cols) + c) * 2 + (r & 1)] = r < m ? v : static_cast<uint16_t>(0);
}

void pack_layer(const float* w, const float* b, int64_t out, int64_t in, uint16_t* wf, uint16_t* wb, float* bias) {
  const int64_t out16 = bf16_rp_ld(out), in16 = bf16_rp_ld(in);
  const auto at = [&](int64_t o, int64_t i) -> uint16_t { return o < out && i < in ? narrow(w[o * in + i]) : 0; };
  for (int64_t p = 0; p < bf16_rm_ld(in) / 2; ++p)
    for (int64_t o = 0; o < out16; ++o) {
      wf[(p * out16 + o) * 2] = at(o, 2 * p);
      wf[(p * out16 + o) * 2 + 1] = at(o, 2 * p + 1);
    }
  for (int64_t q = 0; q < bf16_rm_ld(out) / 2; ++q)
    for (int64_t i = 0; i < in16; ++i) {
      wb[(q * in16 + i) * 2] = at(2 * q, i);
      wb[(q * in16 + i) * 2 + 1] = at(2 * q + 1, i);
    }
  for (int64_t o = 0; o < out; ++o) bias[o] = widen(narrow(b[o]));
}

void cast_input(const float* x, int64_t m, int64_t cols, uint16_t* rm, uint16_t* rp) {
  for (int64_t r = 0; r < bf16_even_rows(m); ++r)
    for (int64_t c = 0; c < cols; ++c) store_rows(rm, rp, r, m, cols, c, r < m ? narrow(x[r * cols + c]) : 0);
}

void forward(const uint16_t* a_rm, const uint16_t* wf, const float* bias, int64_t m, int64_t out, int64_t in,
             Activation act, uint16_t* y_rm, uint16_t* y_rp) {
  const int64_t k_pairs = bf16_rm_ld(in) / 2, out16 = bf16_rp_ld(out);
  const uint32_t* a = pairs(a_rm);
  const uint32_t* w = pairs(wf);
  std::vector<float> acc(static_cast<std::size_t>(out));
  for (int64_t r = 0; r < bf16_even_rows(m); ++r) {
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (int64_t p = 0; p < k_pairs; ++p)
      for (int64_t o = 0; o < out; ++o) acc[o] = dot_pair(acc[o], a[r * k_pairs + p], w[p * out16 + o]);
    for (int64_t o = 0; o < out; ++o) store_rows(y_rm, y_rp, r, m, out, o, activate(narrow(acc[o] + bias[o]), act));
  }
}

double loss_backward(const uint16_t* x_hat_rm, const float* x, int64_t m, int64_t cols, float norm, float grad_output,
                     uint16_t* g_rm, uint16_t* g_rp, float* db) {
  const int64_t ld = bf16_rm_ld(cols);
  std::vector<double> squares(static_cast<std::size_t>(cols), 0.0);
  std::fill(db, db + cols, 0.0f);
  for (int64_t r = 0; r < bf16_even_rows(m); ++r)
    for (int64_t c = 0; c < cols; ++c) {
      uint16_t g = 0;
      if (r < m) {
        const float d = widen(x_hat_rm[r * ld + c]) - x[r * cols + c];
        squares[c] += static_cast<double>(d) * static_cast<double>(d);
        g = narrow((norm * d) * grad_output);
      }
      store_rows(g_rm, g_rp, r, m, cols, c, g);
      db[c] += widen(g);
    }
  double sum = 0;
  for (double s : squares) sum += s;
  return sum;
}

void weight_grad(const uint16_t* g_rp, const uint16_t* a_rp, int64_t m, int64_t out, int64_t in, float* dw) {
  const int64_t p_count = bf16_even_rows(m) / 2, ldg = bf16_rp_ld(out), lda = bf16_rp_ld(in);
  const uint32_t* g = pairs(g_rp);
  const uint32_t* a = pairs(a_rp);
  for (int64_t o = 0; o < out; ++o) {
    float* row = dw + o * in;
    std::fill(row, row + in, 0.0f);
    for (int64_t p = 0; p < p_count; ++p)
      for (int64_t i = 0; i < in; ++i) row[i] = dot_pair(row[i], g[p * ldg + o], a[p * lda + i]);
  }
}

void input_grad(const uint16_t* g_rm, const uint16_t* wb, const uint16_t* a_in_rm, Activation act, int64_t m,
                int64_t out, int64_t in, uint16_t* gi_rm, uint16_t* gi_rp, float* db) {
  const int64_t q_count = bf16_rm_ld(out) / 2, in16 = bf16_rp_ld(in), lda = bf16_rm_ld(in);
  const uint32_t* g = pairs(g_rm);
  const uint32_t* w = pairs(wb);
  std::vector<float> acc(static_cast<std::size_t>(in));
  std::fill(db, db + in, 0.0f);
  for (int64_t r = 0; r < bf16_even_rows(m); ++r) {
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (int64_t q = 0; q < q_count; ++q)
      for (int64_t i = 0; i < in; ++i) acc[i] = dot_pair(acc[i], g[r * q_count + q], w[q * in16 + i]);
    for (int64_t i = 0; i < in; ++i) {
      const uint16_t v = derive(narrow(acc[i]), a_in_rm[r * lda + i], act);
      store_rows(gi_rm, gi_rp, r, m, in, i, v);
      db[i] += widen(v);
    }
  }
}

void round_to_bf16(float* v, int64_t n) {
  for (int64_t i = 0; i < n; ++i) v[i] = widen(narrow(v[i]));
}

}  // namespace

const Bf16Kernels& bf16_kernels_emulated() {
  static const Bf16Kernels kernels{"emulated", pack_layer,  cast_input, forward,
                                   loss_backward, weight_grad, input_grad, round_to_bf16};
  return kernels;
}

bool bf16_dot_supported() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16");
#else
  return false;
#endif
}

const Bf16Kernels& bf16_kernels_native() {
#if defined(__x86_64__)
  if (bf16_dot_supported()) return bf16_kernels_avx512bf16();
#endif
  return bf16_kernels_emulated();
}

const Bf16Kernels& bf16_kernels_for(const std::string& isa) {
  return isa == "generic" ? bf16_kernels_emulated() : bf16_kernels_native();
}

std::string bf16_kernels_note(const Bf16Kernels& kernels, const std::string& isa) {
  if (&kernels != &bf16_kernels_emulated())
    return std::string(kernels.name) + " (bfloat16 dot products, VDPBF16PS, float32 accumulation)";
  if (isa == "generic") return "emulated (fused_isa generic: the float32 mirror of VDPBF16PS's arithmetic)";
  return std::string("emulated (") + kBf16Emulated + ")";
}

}  // namespace balerbench
