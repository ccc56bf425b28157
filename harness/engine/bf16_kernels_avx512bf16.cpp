// bf16_kernels_avx512bf16.cpp: amp_bf16's kernels on VDPBF16PS (bf16_kernels.h), built with
// -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512bf16 (harness/CMakeLists.txt) and called only
// where bf16_dot_supported() says the CPU runs them. Bit for bit the emulation's results.
//
// Each product is a grid of register tiles: MR rows by NV vectors of 16 float32 accumulators, one
// accumulator per output over the whole reduction (pairs in order), the B panel (weights, or the
// activations' row pairs) loaded once per pair and the A operand broadcast from memory, 32 bits at a
// time. MR grows as NV shrinks so that a tile has at least 12 independent accumulators (VDPBF16PS's
// latency times its throughput); the narrow layers (15, 24, 50 wide) stay in registers whole.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "harness/engine/bf16_kernels.h"

namespace balerbench {
namespace {

// The rows of a tile for NV vectors: at least 12 accumulators, at most 24 (of 32 registers).
template <int NV>
constexpr int tile_rows() {
  return NV == 1 ? 12 : NV == 2 ? 8 : 6;
}

inline __mmask16 cols_mask(int64_t left) { return left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1); }

// float32 -> bfloat16 (VCVTNEPS2BF16: round to nearest even, subnormals flushed, a NaN kept quiet).
inline __m256i cvt(__m512 f) { return (__m256i)_mm512_cvtneps_pbh(f); }
inline __m512 widen(__m256i h) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); }
inline __m256i load_bits(const uint16_t* p, __mmask16 k) { return _mm256_maskz_loadu_epi16(k, p); }

// act(y) for y the bfloat16 output of a product, in float, rounded.
inline __m256i activate(__m256i y, Activation act) {
  if (act == Activation::kNone) return y;
  const __m512 f = widen(y);
  const __mmask16 pos = _mm512_cmp_ps_mask(f, _mm512_setzero_ps(), _CMP_GT_OQ);
  if (act == Activation::kRelu) return _mm256_maskz_mov_epi16(pos, y);
  return _mm256_mask_blend_epi16(pos, cvt(_mm512_mul_ps(f, _mm512_set1_ps(0.01f))), y);
}

// g * act'(a), a the activation's output: g where a > 0, else bf16(g * slope).
inline __m256i derive(__m256i g, __m256i a, Activation act) {
  if (act == Activation::kNone) return g;
  const __m512 slope = _mm512_set1_ps(act == Activation::kLeakyRelu ? 0.01f : 0.0f);
  const __mmask16 pos = _mm512_cmp_ps_mask(widen(a), _mm512_setzero_ps(), _CMP_GT_OQ);
  return _mm256_mask_blend_epi16(pos, cvt(_mm512_mul_ps(widen(g), slope)), g);
}

// Two rows' values as row pairs: row r in the low half of each 32-bit lane, row r + 1 in the high.
inline __m512i pair_of(__m256i y0, __m256i y1) {
  return _mm512_or_si512(_mm512_cvtepu16_epi32(y0), _mm512_slli_epi32(_mm512_cvtepu16_epi32(y1), 16));
}

// Rows r and r + 1 into rm (masked columns), and their pair into rp unless it is null.
inline void store_pair(uint16_t* rm0, uint16_t* rm1, uint32_t* rp, __mmask16 k, __m256i y0, __m256i y1) {
  _mm256_mask_storeu_epi16(rm0, k, y0);
  _mm256_mask_storeu_epi16(rm1, k, y1);
  if (rp) _mm512_mask_storeu_epi32(rp, k, pair_of(y0, y1));
}

inline __m512 dot(__m512 acc, __m512i a, __m512i b) { return _mm512_dpbf16_ps(acc, (__m512bh)a, (__m512bh)b); }

// acc[r][v] = sum over k of A(r, k) B(k, v): A's pair k of row r at a[r * lda + k] (broadcast), B's
// pair k at b + k * ldb (16 pairs per vector, NV vectors).
template <int MR, int NV>
inline void tile(const uint32_t* a, int64_t lda, const uint32_t* b, int64_t ldb, int64_t k_count,
                 __m512 (&acc)[MR][NV]) {
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_setzero_ps();
  for (int64_t k = 0; k < k_count; ++k) {
    __m512i bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) bv[v] = _mm512_loadu_si512(b + k * ldb + 16 * v);
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      const __m512i x = _mm512_set1_epi32(static_cast<int>(a[r * lda + k]));
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = dot(acc[r][v], x, bv[v]);
    }
  }
}

// ---- forward ----------------------------------------------------------------------------------

struct ForwardArgs {
  const uint32_t* a;  // rm pairs
  const uint32_t* w;  // wf
  const float* bias;
  int64_t m, out, k_pairs, out16;
  Activation act;
  uint16_t* y_rm;
  uint32_t* y_rp;
};

template <int MR, int NV>
void forward_tile(const ForwardArgs& f, int64_t r0, int64_t c0) {
  __m512 acc[MR][NV];
  tile<MR, NV>(f.a + r0 * f.k_pairs, f.k_pairs, f.w + c0, f.out16, f.k_pairs, acc);
  const int64_t ldy = bf16_rm_ld(f.out);
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) {
    const int64_t c = c0 + 16 * v;
    const __mmask16 k = cols_mask(f.out - c);
    const __m512 bias = _mm512_maskz_loadu_ps(k, f.bias + c);
#pragma GCC unroll 8
    for (int r = 0; r < MR; r += 2) {
      const int64_t row = r0 + r;
      const __m256i y0 = activate(cvt(_mm512_add_ps(acc[r][v], bias)), f.act);
      const __m256i y1 = activate(cvt(_mm512_add_ps(acc[r + 1][v], bias)), f.act);
      uint32_t* rp = f.y_rp ? f.y_rp + (row >> 1) * f.out16 + c : nullptr;
      store_pair(f.y_rm + row * ldy + c, f.y_rm + (row + 1) * ldy + c, nullptr, k, y0, y1);
      // rp's row past an odd m is zero (computed in rm).
      if (rp) _mm512_mask_storeu_epi32(rp, k, pair_of(y0, row + 1 < f.m ? y1 : _mm256_setzero_si256()));
    }
  }
}

// Rows [r0, rows) of the tiles of vectors [c0, c0 + NV): full tiles of MR rows, then an even tail.
template <int NV, int MR = tile_rows<NV>()>
void forward_rows(const ForwardArgs& f, int64_t r0, int64_t rows, int64_t c0) {
  if constexpr (MR >= 2) {
    for (; r0 + MR <= rows; r0 += MR) forward_tile<MR, NV>(f, r0, c0);
    if (r0 < rows) forward_rows<NV, MR - 2>(f, r0, rows, c0);
  }
}

template <template <int> class Cols, typename Args>
void over_vectors(const Args& args, int64_t rows, int64_t width) {
  const int64_t vectors = (width + 15) / 16;
  int64_t v = 0;
  for (; v + 4 <= vectors; v += 4) Cols<4>::run(args, rows, 16 * v);
  switch (vectors - v) {
    case 3: Cols<3>::run(args, rows, 16 * v); break;
    case 2: Cols<2>::run(args, rows, 16 * v); break;
    case 1: Cols<1>::run(args, rows, 16 * v); break;
    default: break;
  }
}

template <int NV>
struct ForwardCols {
  static void run(const ForwardArgs& f, int64_t rows, int64_t c0) { forward_rows<NV>(f, 0, rows, c0); }
};

void forward(const uint16_t* a_rm, const uint16_t* wf, const float* bias, int64_t m, int64_t out, int64_t in,
             Activation act, uint16_t* y_rm, uint16_t* y_rp) {
  const ForwardArgs f{reinterpret_cast<const uint32_t*>(a_rm), reinterpret_cast<const uint32_t*>(wf), bias, m, out,
                      bf16_rm_ld(in) / 2, bf16_rp_ld(out), act, y_rm, reinterpret_cast<uint32_t*>(y_rp)};
  over_vectors<ForwardCols>(f, bf16_even_rows(m), out);
}

// ---- input gradient ---------------------------------------------------------------------------

struct InputGradArgs {
  const uint32_t* g;  // rm pairs
  const uint32_t* w;  // wb
  const uint16_t* a_in;
  int64_t m, in, q_count, in16;
  Activation act;
  uint16_t* gi_rm;
  uint32_t* gi_rp;
  float* db;
};

template <int MR, int NV>
void input_grad_tile(const InputGradArgs& f, int64_t r0, int64_t c0) {
  __m512 acc[MR][NV];
  tile<MR, NV>(f.g + r0 * f.q_count, f.q_count, f.w + c0, f.in16, f.q_count, acc);
  const int64_t ld = bf16_rm_ld(f.in);
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) {
    const int64_t c = c0 + 16 * v;
    const __mmask16 k = cols_mask(f.in - c);
    __m512 sum = _mm512_maskz_loadu_ps(k, f.db + c);
#pragma GCC unroll 8
    for (int r = 0; r < MR; r += 2) {
      const int64_t row = r0 + r;
      const __m256i y0 = derive(cvt(acc[r][v]), load_bits(f.a_in + row * ld + c, k), f.act);
      const __m256i y1 = derive(cvt(acc[r + 1][v]), load_bits(f.a_in + (row + 1) * ld + c, k), f.act);
      sum = _mm512_add_ps(_mm512_add_ps(sum, widen(y0)), widen(y1));
      store_pair(f.gi_rm + row * ld + c, f.gi_rm + (row + 1) * ld + c, f.gi_rp + (row >> 1) * f.in16 + c, k, y0, y1);
    }
    _mm512_mask_storeu_ps(f.db + c, k, sum);
  }
}

template <int NV, int MR = tile_rows<NV>()>
void input_grad_rows(const InputGradArgs& f, int64_t r0, int64_t rows, int64_t c0) {
  if constexpr (MR >= 2) {
    for (; r0 + MR <= rows; r0 += MR) input_grad_tile<MR, NV>(f, r0, c0);
    if (r0 < rows) input_grad_rows<NV, MR - 2>(f, r0, rows, c0);
  }
}

template <int NV>
struct InputGradCols {
  static void run(const InputGradArgs& f, int64_t rows, int64_t c0) { input_grad_rows<NV>(f, 0, rows, c0); }
};

void input_grad(const uint16_t* g_rm, const uint16_t* wb, const uint16_t* a_in_rm, Activation act, int64_t m,
                int64_t out, int64_t in, uint16_t* gi_rm, uint16_t* gi_rp, float* db) {
  std::fill(db, db + in, 0.0f);
  const InputGradArgs f{reinterpret_cast<const uint32_t*>(g_rm), reinterpret_cast<const uint32_t*>(wb), a_in_rm, m,
                        in, bf16_rm_ld(out) / 2, bf16_rp_ld(in), act, gi_rm, reinterpret_cast<uint32_t*>(gi_rp), db};
  over_vectors<InputGradCols>(f, bf16_even_rows(m), in);
}

// ---- weight gradient --------------------------------------------------------------------------

struct WeightGradArgs {
  const uint32_t* g;  // rp, ldg pairs a row pair
  const uint32_t* a;  // rp, lda
  int64_t p_count, out, in, ldg, lda;
  float* dw;
};

template <int MR, int NV>
void weight_grad_tile(const WeightGradArgs& f, int64_t o0, int64_t c0) {
  // The broadcast operand is g's pair (p, o): row o of the tile reads g + o + p * ldg.
  __m512 acc[MR][NV];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_setzero_ps();
  for (int64_t p = 0; p < f.p_count; ++p) {
    __m512i bv[NV];
    const uint32_t* b = f.a + p * f.lda + c0;
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) bv[v] = _mm512_loadu_si512(b + 16 * v);
    const uint32_t* g = f.g + p * f.ldg + o0;
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      const __m512i x = _mm512_set1_epi32(static_cast<int>(g[r]));
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = dot(acc[r][v], x, bv[v]);
    }
  }
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) {
    const __mmask16 k = cols_mask(f.in - c0 - 16 * v);
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) _mm512_mask_storeu_ps(f.dw + (o0 + r) * f.in + c0 + 16 * v, k, acc[r][v]);
  }
}

template <int NV, int MR = tile_rows<NV>()>
void weight_grad_rows(const WeightGradArgs& f, int64_t o0, int64_t rows, int64_t c0) {
  if constexpr (MR >= 1) {
    for (; o0 + MR <= rows; o0 += MR) weight_grad_tile<MR, NV>(f, o0, c0);
    if (o0 < rows) weight_grad_rows<NV, MR - 1>(f, o0, rows, c0);
  }
}

template <int NV>
struct WeightGradCols {
  static void run(const WeightGradArgs& f, int64_t rows, int64_t c0) { weight_grad_rows<NV>(f, 0, rows, c0); }
};

void weight_grad(const uint16_t* g_rp, const uint16_t* a_rp, int64_t m, int64_t out, int64_t in, float* dw) {
  const WeightGradArgs f{reinterpret_cast<const uint32_t*>(g_rp), reinterpret_cast<const uint32_t*>(a_rp),
                         bf16_even_rows(m) / 2, out, in, bf16_rp_ld(out), bf16_rp_ld(in), dw};
  over_vectors<WeightGradCols>(f, out, in);
}

// ---- loss, input, weights ---------------------------------------------------------------------

double loss_backward(const uint16_t* x_hat_rm, const float* x, int64_t m, int64_t cols, float norm, float grad_output,
                     uint16_t* g_rm, uint16_t* g_rp, float* db) {
  const int64_t ld = bf16_rm_ld(cols), ldp = bf16_rp_ld(cols), rows = bf16_even_rows(m);
  const __m512 vn = _mm512_set1_ps(norm), vg = _mm512_set1_ps(grad_output);
  double squares[16];
  double sum = 0;
  for (int64_t c = 0; c < cols; c += 16) {
    const __mmask16 k = cols_mask(cols - c);
    __m512d sq_lo = _mm512_setzero_pd(), sq_hi = _mm512_setzero_pd();
    __m512 s = _mm512_setzero_ps();
    for (int64_t r = 0; r < rows; r += 2) {
      __m256i g[2];
      for (int h = 0; h < 2; ++h) {
        g[h] = _mm256_setzero_si256();
        if (r + h >= m) continue;
        const __m512 d = _mm512_sub_ps(widen(load_bits(x_hat_rm + (r + h) * ld + c, k)),
                                       _mm512_maskz_loadu_ps(k, x + (r + h) * cols + c));
        const __m512d d_lo = _mm512_cvtps_pd(_mm512_castps512_ps256(d));
        const __m512d d_hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(d), 1)));
        sq_lo = _mm512_add_pd(sq_lo, _mm512_mul_pd(d_lo, d_lo));
        sq_hi = _mm512_add_pd(sq_hi, _mm512_mul_pd(d_hi, d_hi));
        g[h] = cvt(_mm512_mul_ps(_mm512_mul_ps(vn, d), vg));
      }
      s = _mm512_add_ps(_mm512_add_ps(s, widen(g[0])), widen(g[1]));
      store_pair(g_rm + r * ld + c, g_rm + (r + 1) * ld + c, reinterpret_cast<uint32_t*>(g_rp) + (r >> 1) * ldp + c, k,
                 g[0], g[1]);
    }
    _mm512_mask_storeu_ps(db + c, k, s);
    _mm512_storeu_pd(squares, sq_lo);
    _mm512_storeu_pd(squares + 8, sq_hi);
    for (int64_t i = 0; i < std::min<int64_t>(16, cols - c); ++i) sum += squares[i];
  }
  return sum;
}

void cast_input(const float* x, int64_t m, int64_t cols, uint16_t* rm, uint16_t* rp) {
  const int64_t ld = bf16_rm_ld(cols), ldp = bf16_rp_ld(cols);
  for (int64_t r = 0; r < bf16_even_rows(m); r += 2)
    for (int64_t c = 0; c < cols; c += 16) {
      const __mmask16 k = cols_mask(cols - c);
      const __m256i y0 = cvt(_mm512_maskz_loadu_ps(k, x + r * cols + c));
      const __m256i y1 = r + 1 < m ? cvt(_mm512_maskz_loadu_ps(k, x + (r + 1) * cols + c)) : _mm256_setzero_si256();
      store_pair(rm + r * ld + c, rm + (r + 1) * ld + c, reinterpret_cast<uint32_t*>(rp) + (r >> 1) * ldp + c, k, y0,
                 y1);
    }
}

void pack_layer(const float* w, const float* b, int64_t out, int64_t in, uint16_t* wf, uint16_t* wb, float* bias) {
  const int64_t out16 = bf16_rp_ld(out), in16 = bf16_rp_ld(in);
  uint32_t* f = reinterpret_cast<uint32_t*>(wf);
  uint32_t* bk = reinterpret_cast<uint32_t*>(wb);
  // wb: rows 2q and 2q + 1 side by side.
  for (int64_t q = 0; q < bf16_rm_ld(out) / 2; ++q)
    for (int64_t i = 0; i < in16; i += 16) {
      const __mmask16 k = cols_mask(in - i);
      const __m256i y0 = cvt(_mm512_maskz_loadu_ps(k, w + 2 * q * in + i));
      const __m256i y1 = 2 * q + 1 < out ? cvt(_mm512_maskz_loadu_ps(k, w + (2 * q + 1) * in + i)) : _mm256_setzero_si256();
      _mm512_storeu_si512(bk + q * in16 + i, pair_of(y0, y1));
    }
  // wf: columns 2p and 2p + 1 of 16 rows, gathered.
  const __m512i rows = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                          _mm512_set1_epi32(static_cast<int>(in)));
  for (int64_t p = 0; p < bf16_rm_ld(in) / 2; ++p)
    for (int64_t o = 0; o < out16; o += 16) {
      const __mmask16 k = cols_mask(out - o);
      const float* base = w + o * in + 2 * p;
      const __m256i y0 = cvt(_mm512_mask_i32gather_ps(_mm512_setzero_ps(), k, rows, base, 4));
      const __m256i y1 = 2 * p + 1 < in ? cvt(_mm512_mask_i32gather_ps(_mm512_setzero_ps(), k, rows, base + 1, 4))
                                        : _mm256_setzero_si256();
      _mm512_storeu_si512(f + p * out16 + o, pair_of(y0, y1));
    }
  for (int64_t o = 0; o < out; o += 16) {
    const __mmask16 k = cols_mask(out - o);
    _mm512_mask_storeu_ps(bias + o, k, widen(cvt(_mm512_maskz_loadu_ps(k, b + o))));
  }
}

void round_to_bf16(float* v, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = cols_mask(n - i);
    _mm512_mask_storeu_ps(v + i, k, widen(cvt(_mm512_maskz_loadu_ps(k, v + i))));
  }
}

}  // namespace

const Bf16Kernels& bf16_kernels_avx512bf16() {
  static const Bf16Kernels kernels{"avx512_bf16", pack_layer,  cast_input, forward,
                                   loss_backward, weight_grad, input_grad, round_to_bf16};
  return kernels;
}

}  // namespace balerbench
