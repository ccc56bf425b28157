// dense_products.h: the three matrix products of a dense layer's training step, for the fused
// engine (fused_engine.cpp), on Eigen compiled once per instruction-set level and chosen at run time.
//
// Shapes, for a layer with `in` inputs and `out` outputs on `m` rows (all row-major, contiguous):
//   forward      Y  (m x out) = A (m x in) . W^T       W: (out x in), as torch.nn.Linear stores it
//   weight_grad  dW (out x in) = G^T . A               G: (m x out), the gradient at the layer's output
//   input_grad   Gi (m x in)  = G . W                  the gradient at the layer's input
// Each writes its output (no accumulation) and allocates nothing on the heap for these sizes.
//
// The kernels: dense_products_{generic,avx2,avx512}.cpp compile the same source
// (dense_products_eigen.inc) with different -m flags, each with Eigen renamed into its own namespace
// so that no template instantiation of one level can be chosen by the linker for another. The host's
// level is read from CPUID (with the OS's support for the wider registers) when first asked: a
// build node with AVX-512 never hands an older compute node an instruction it lacks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "harness/engine/isa_level.h"

namespace balerbench {

template <typename T>
struct DenseProductKernels {
  void (*forward)(const T* a, const T* w, T* y, int64_t m, int64_t out, int64_t in);
  void (*weight_grad)(const T* g, const T* a, T* dw, int64_t m, int64_t out, int64_t in);
  void (*input_grad)(const T* g, const T* w, T* gi, int64_t m, int64_t out, int64_t in);
};

struct DenseProducts {
  IsaLevel level = IsaLevel::kGeneric;
  DenseProductKernels<float> f32;
  DenseProductKernels<double> f64;
  template <typename T>
  const DenseProductKernels<T>& of() const;
};
template <>
inline const DenseProductKernels<float>& DenseProducts::of<float>() const { return f32; }
template <>
inline const DenseProductKernels<double>& DenseProducts::of<double>() const { return f64; }

// The kernels of `level`; std::invalid_argument when this CPU cannot run it.
const DenseProducts& dense_products(IsaLevel level);

// Per level (dense_products_*.cpp); call only through dense_products().
const DenseProducts& dense_products_generic();
const DenseProducts& dense_products_avx2();
const DenseProducts& dense_products_avx512();

}  // namespace balerbench
