// bf16_kernels.h: amp_bf16's training step for the fused engine, on bfloat16 dot products.
//
// Every product of a dense layer's step (forward, weight gradient, input gradient) takes bfloat16
// inputs and accumulates in float32, as LibTorch's CPU autocast does (oneDNN's bfloat16 GEMMs), with
// the bias, the activation, the loss and the activation's derivative fused around the products and
// rounded to bfloat16 where autocast rounds them:
//   forward       y  = bf16(A . W^T + b), then bf16(act(y))   (addmm with its bias, then the activation)
//   loss          d  = float(x_hat) - x; the loss in float; g = bf16((norm * d) * grad_output)
//   weight grad   dW = G^T . A in float32 over the shard's rows (rounded once, after the shards' sum)
//   input grad    gi = bf16(G . W), then bf16(gi * act'(a_in)); the bias gradient its column sums in float
//
// Two levels give the same bits (tests/unit/engine/test_bf16_kernels.cpp checks it):
//   "avx512_bf16": VDPBF16PS (AVX512-BF16: Cooper Lake, Sapphire Rapids and later, AMD Zen 4 and later);
//   "emulated":    the same arithmetic in plain float32 code, for every CPU: the float32 mirror of the
//                  instruction's rounding order, which the hardware level is tested against.
// VDPBF16PS adds, per float32 lane, the product of the odd bfloat16 pair members and then that of the
// even ones, each addition rounded to nearest even, subnormal inputs read as zero and subnormal
// results flushed to zero (Intel's SDM; the same bits measured on AMD Zen 5). A product of two bfloat16
// values is exact in float32, so each step is one correctly rounded addition. The emulation does the
// same; the accumulation order of every output is fixed (one accumulator, pairs in order), so the
// result does not depend on blocking or threads. Every rounding to bfloat16 is VCVTNEPS2BF16's (to
// nearest even, subnormals flushed to zero, a NaN kept quiet), as oneDNN's bfloat16 kernels round;
// c10::BFloat16 differs only for subnormals and NaN payloads.
//
// Layouts, all of bfloat16 bits (uint16_t). Every buffer is zero-filled when made; the kernels write
// only the entries of real rows and columns, so padding stays zero:
//   "rm"  row-major, rows x bf16_rm_ld(cols): cols rounded up to even (a row is whole 32-bit pairs).
//   "rp"  row pairs: (rows / 2) x bf16_rp_ld(cols) pairs of 32 bits, cols rounded up to 16; pair (p, c)
//         is (X[2p][c] in the low half, X[2p + 1][c] in the high half). The weight gradient reads it.
//   "wf"  a weight (out x in) for the forward: (bf16_rm_ld(in) / 2) x bf16_rp_ld(out) pairs,
//         pair (p, o) = (W[o][2p], W[o][2p + 1]).
//   "wb"  the same weight for the input gradient: (bf16_rm_ld(out) / 2) x bf16_rp_ld(in) pairs,
//         pair (q, i) = (W[2q][i], W[2q + 1][i]).
// Rows: the kernels run rows [0, m rounded up to even). With an odd m, row m of the input (rm and rp)
// and of the loss's gradient is zero (cast_input and loss_backward write it so), and every product
// then gives exact zeros for it where they matter (the gradients).
#pragma once

#include <cstdint>
#include <string>

#include "harness/base/precision_mode.h"  // kBf16Emulated
#include "harness/engine/dense_loops.h"

namespace balerbench {

inline int64_t bf16_rm_ld(int64_t cols) { return (cols + 1) & ~int64_t{1}; }
inline int64_t bf16_rp_ld(int64_t cols) { return (cols + 15) & ~int64_t{15}; }
inline int64_t bf16_even_rows(int64_t rows) { return (rows + 1) & ~int64_t{1}; }
// Sizes in bfloat16 elements.
inline int64_t bf16_rm_size(int64_t rows, int64_t cols) { return bf16_even_rows(rows) * bf16_rm_ld(cols); }
inline int64_t bf16_rp_size(int64_t rows, int64_t cols) { return bf16_even_rows(rows) * bf16_rp_ld(cols); }
inline int64_t bf16_wf_size(int64_t out, int64_t in) { return bf16_rm_ld(in) * bf16_rp_ld(out); }
inline int64_t bf16_wb_size(int64_t out, int64_t in) { return bf16_rm_ld(out) * bf16_rp_ld(in); }

struct Bf16Kernels {
  const char* name;  // "avx512_bf16" or "emulated"
  // One layer's weight (out x in, float32) into wf and wb, its bias rounded to bfloat16 and widened.
  void (*pack_layer)(const float* w, const float* b, int64_t out, int64_t in, uint16_t* wf, uint16_t* wb,
                     float* bias);
  // x (m x cols, float32) rounded to bfloat16 into rm and rp (row m zero when m is odd).
  void (*cast_input)(const float* x, int64_t m, int64_t cols, uint16_t* rm, uint16_t* rp);
  // y = act(bf16(a . W^T + bias)) for a (m x in, rm): into y_rm, and into y_rp unless it is null.
  void (*forward)(const uint16_t* a_rm, const uint16_t* wf, const float* bias, int64_t m, int64_t out, int64_t in,
                  Activation act, uint16_t* y_rm, uint16_t* y_rp);
  // The loss against x (m x cols, float32): returns the sum of squared differences (per column in
  // double over the rows, then the columns in order); g = bf16((norm * d) * grad_output) into g_rm and
  // g_rp; db[c] = the column sums of g in float (rows in order).
  double (*loss_backward)(const uint16_t* x_hat_rm, const float* x, int64_t m, int64_t cols, float norm,
                          float grad_output, uint16_t* g_rm, uint16_t* g_rp, float* db);
  // dw (out x in, float32, row-major) = g^T . a over the rows, g (m x out) and a (m x in) both rp.
  void (*weight_grad)(const uint16_t* g_rp, const uint16_t* a_rp, int64_t m, int64_t out, int64_t in, float* dw);
  // gi = bf16(g . W) (m x in), then multiplied by act'(a_in) (a_in: the layer's input, rm, the output
  // of `act`) and rounded: into gi_rm and gi_rp; db[i] = gi's column sums in float (rows in order).
  void (*input_grad)(const uint16_t* g_rm, const uint16_t* wb, const uint16_t* a_in_rm, Activation act, int64_t m,
                     int64_t out, int64_t in, uint16_t* gi_rm, uint16_t* gi_rp, float* db);
  // v[i] = float(bf16(v[i])): a float32 gradient rounded as autocast's bfloat16 gradient is.
  void (*round_to_bf16)(float* v, int64_t n);
};

// Whether this CPU and OS run VDPBF16PS (CPUID AVX512_BF16 with AVX512F/BW/VL and the OS's ZMM state).
bool bf16_dot_supported();
// The kernels that run here: avx512_bf16 where the CPU has it, else the emulation.
const Bf16Kernels& bf16_kernels_native();
// The kernels for the fused engine's fused_isa: "generic" asks for the emulation, every other level
// for bf16_kernels_native().
const Bf16Kernels& bf16_kernels_for(const std::string& isa);
// One line for the engine's status: which kernels ran amp_bf16's products, and why.
std::string bf16_kernels_note(const Bf16Kernels& kernels, const std::string& isa);

// Per level; call through the functions above.
const Bf16Kernels& bf16_kernels_emulated();
const Bf16Kernels& bf16_kernels_avx512bf16();

}  // namespace balerbench
