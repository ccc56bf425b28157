// normalizer.h: Baler's per-feature min-max normalization.
//
// x' = (x - min_j) / range_j over the whole file, stored as (2, F) [min, range]
// (Baler: (2, C) for tables, (2, H, W) for frames). Departure from Baler
// (docs/baler.md, departures 1 and 2): a constant feature gets range 1, so it
// normalizes to 0 and inverts exactly instead of becoming NaN; compress reuses
// the statistics saved at training time instead of recomputing them.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

#include "datasets/npy.h"

namespace balerbench {

struct Normalization {
  at::Tensor min;    // (F,) float64
  at::Tensor range;  // (F,) float64, never 0

  static Normalization fit(const at::Tensor& x);  // x: (N, F)
  static Normalization identity(int64_t features);  // zero minimum and unit range: no normalization
  at::Tensor apply(const at::Tensor& x) const;    // (x - min) / range, in x's dtype
  at::Tensor invert(const at::Tensor& x) const;   // x * range + min, in x's dtype
  int64_t zero_range_features() const { return zero_range_features_; }

  // (2, feature_shape...) float64 array, Baler's normalization_features layout.
  NpyArray to_npy(const std::vector<int64_t>& feature_shape) const;
  // Reads it back; `features` is the expected F (error otherwise).
  static Normalization from_npy(const NpyArray& array, int64_t features, const std::string& where);

 private:
  int64_t zero_range_features_ = 0;
};

}  // namespace balerbench
