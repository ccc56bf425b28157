// normalizer.cpp: see normalizer.h.
#include "datasets/normalizer.h"

#include <ATen/ATen.h>

#include "datasets/dataset.h"
#include "common/error.h"

namespace balerbench {

Normalization Normalization::fit(const at::Tensor& x) {
  Normalization n;
  const at::Tensor xd = x.to(at::kDouble);
  n.min = std::get<0>(xd.min(0));
  at::Tensor range = std::get<0>(xd.max(0)) - n.min;
  // max - min beyond a double (values near +-1.7e308 of both signs): every normalized value would be 0
  // or NaN, and training would go on with a NaN loss.
  const at::Tensor overflow = ~at::isfinite(range);
  if (overflow.any().item<bool>()) {
    const int64_t col = overflow.nonzero().index({0, 0}).item<int64_t>();
    throw InputError("column " + std::to_string(col) + ": its values span more than a double holds (max - min = inf), "
                         "so min-max normalization cannot scale them",
                     "rescale the data (divide it by a power of ten) before training");
  }
  const at::Tensor zero = range == 0;
  n.zero_range_features_ = zero.sum().item<int64_t>();
  n.range = at::where(zero, at::ones_like(range), range).contiguous();
  n.min = n.min.contiguous();
  return n;
}

at::Tensor Normalization::apply(const at::Tensor& x) const {
  return (x - min.to(x.device(), x.scalar_type())) / range.to(x.device(), x.scalar_type());
}

at::Tensor Normalization::invert(const at::Tensor& x) const {
  return x * range.to(x.device(), x.scalar_type()) + min.to(x.device(), x.scalar_type());
}

NpyArray Normalization::to_npy(const std::vector<int64_t>& feature_shape) const {
  std::vector<int64_t> shape{2};
  shape.insert(shape.end(), feature_shape.begin(), feature_shape.end());
  return tensor_to_npy(at::stack({min, range}), shape);
}

Normalization Normalization::from_npy(const NpyArray& array, int64_t features, const std::string& where) {
  if (array.shape.empty() || array.shape[0] != 2 || array.numel() != 2 * features)
    throw InputError(where + ": normalization features do not match the data (" + std::to_string(features) +
                         " features expected)",
                     "compress/decompress with the training output of the same dataset");
  const std::vector<double> v = array.to_doubles();
  Normalization n;
  at::Tensor t = at::tensor(v, at::kDouble).view({2, features});
  n.min = t[0].contiguous();
  n.range = t[1].contiguous();
  if ((n.range == 0).any().item<bool>() || !at::isfinite(t).all().item<bool>())
    throw InputError(where + ": normalization range has zeros or non-finite values",
                     "the file was not written by balerbench train (Baler stores NaN for constant columns)");
  return n;
}

Normalization Normalization::identity(int64_t features) {
  Normalization n;
  n.min = at::zeros({features}, at::kDouble);
  n.range = at::ones({features}, at::kDouble);
  return n;
}

}  // namespace balerbench
