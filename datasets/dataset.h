// dataset.h: a Baler input file in memory: the data as one float64 tensor,
// the column names and the original shape.
//
// 1D tables (N, C) are kept as (N, C); 2D frames (N, H, W) are flattened
// row-major to (N, H*W) for the dense models and reshaped back on decompress.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "datasets/npz.h"

namespace balerbench {

struct Dataset {
  at::Tensor data;                      // (N, F) float64, contiguous, on the CPU
  std::vector<std::string> names;       // C names for 1D data; empty for 2D (Baler's CFD files)
  std::vector<int64_t> original_shape;  // (N, C) or (N, H, W)
  std::string source_dtype = "float64"; // dtype of `data` in the file
  int64_t source_item_bytes = 8;        // bytes per element in the file
  std::string source_path;
  // Values with 0 < |x| < 2.2e-308 (float64 subnormals), counted from their bits when loaded: with
  // flush_denormal on, LibTorch reads them as 0 (subnormal_warning says so).
  int64_t subnormal_values = 0;
  // Values with 0 < |x| < 1.2e-38: subnormal once the data or a float32 model holds them in float32.
  int64_t float32_subnormal_values = 0;

  int data_dimension() const { return static_cast<int>(original_shape.size()) - 1; }
  int64_t rows() const { return original_shape.empty() ? 0 : original_shape[0]; }
  int64_t features() const;
  // Per-row shape as text: "24" or "50x50".
  std::string feature_shape_text() const;
};

// Loads `data` (and `names` if present) from an .npz file. Errors: no `data`
// key, non-numeric dtype, rank other than 2 or 3, zero rows or features,
// NaN/Inf (naming the column and count), names not matching the columns.
Dataset load_dataset(const std::string& path);

// Builds a Dataset from an array already in memory (`where` for messages).
Dataset dataset_from_array(const NpyArray& data, std::vector<std::string> names, const std::string& where);

// How many of `x`'s (float64, contiguous) values are subnormal, read from their bits (so that a
// flush-to-zero mode in force changes nothing).
int64_t count_subnormal(const at::Tensor& x);
// How many of `x`'s (float64, contiguous) values are nonzero and smaller in magnitude than float32's
// smallest normal number (1.2e-38).
int64_t count_float32_subnormal(const at::Tensor& x);

// Throws if x (N, F) holds NaN or Inf: names the first bad column and counts.
void check_finite(const at::Tensor& x, const std::vector<std::string>& names, const std::string& where);

// (N, F) float64 tensor -> NpyArray with `shape` (product must match).
NpyArray tensor_to_npy(const at::Tensor& x, const std::vector<int64_t>& shape);

// Integer columns of `type_list` (entries starting with "int"), in place: rounded to nearest
// (balerbench's default) or truncated toward zero (Baler's astype). x: (N, F); InputError when
// type_list does not have F entries. An empty type_list changes nothing.
void cast_integer_columns(at::Tensor& x, const std::vector<std::string>& type_list, bool truncate);

}  // namespace balerbench

namespace balerbench {
// NpyArray (numeric) -> CPU tensor of the same dtype (float16 -> at::kHalf).
at::Tensor npy_to_tensor(const NpyArray& array);
}  // namespace balerbench
