// dataset.cpp: loading and validating Baler input files. See dataset.h.
#include "datasets/dataset.h"

#include <ATen/ATen.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "common/error.h"

namespace balerbench {

int64_t Dataset::features() const {
  int64_t f = 1;
  for (std::size_t i = 1; i < original_shape.size(); ++i) f *= original_shape[i];
  return f;
}

std::string Dataset::feature_shape_text() const {
  std::string s;
  for (std::size_t i = 1; i < original_shape.size(); ++i) s += (i > 1 ? "x" : "") + std::to_string(original_shape[i]);
  return s;
}

void check_finite(const at::Tensor& x, const std::vector<std::string>& names, const std::string& where) {
  const at::Tensor bad = ~at::isfinite(x);  // (N, F) bool
  if (!bad.any().item<bool>()) return;
  const at::Tensor per_col = bad.sum(0);  // (F,) int64
  const int64_t col = per_col.nonzero().index({0, 0}).item<int64_t>();
  const int64_t count = per_col[col].item<int64_t>();
  const int64_t nans = at::isnan(x.select(1, col)).sum().item<int64_t>();
  const int64_t first_row = bad.select(1, col).nonzero().index({0, 0}).item<int64_t>();
  const int64_t cols_bad = (per_col > 0).sum().item<int64_t>();
  std::string label = "column " + std::to_string(col);
  if (col < static_cast<int64_t>(names.size())) label += " ('" + names[col] + "')";
  throw InputError(where + ": " + label + " has " + std::to_string(count) + " non-finite values (" +
                       std::to_string(nans) + " NaN, " + std::to_string(count - nans) + " Inf), first at row " +
                       std::to_string(first_row) + "; " + std::to_string(cols_bad) + " column(s) affected",
                   "clean or drop those rows before training");
}

int64_t count_subnormal(const at::Tensor& x) {
  const at::Tensor c = x.contiguous();
  const auto* p = reinterpret_cast<const unsigned char*>(c.data_ptr<double>());
  const int64_t n = c.numel();
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint64_t bits = 0;
    std::memcpy(&bits, p + i * 8, 8);
    const uint64_t exponent = (bits >> 52) & 0x7FF, mantissa = bits & ((uint64_t{1} << 52) - 1);
    count += exponent == 0 && mantissa != 0;
  }
  return count;
}

int64_t count_float32_subnormal(const at::Tensor& x) {
  const at::Tensor c = x.contiguous();
  const double* p = c.data_ptr<double>();
  const double smallest_normal = static_cast<double>(std::numeric_limits<float>::min());
  int64_t count = 0;
  for (int64_t i = 0, n = c.numel(); i < n; ++i) count += p[i] != 0 && std::fabs(p[i]) < smallest_normal;
  return count;
}

Dataset dataset_from_array(const NpyArray& data, std::vector<std::string> names, const std::string& where) {
  if (data.dtype == DType::kUnicode)
    throw InputError(where + ": 'data' holds strings, not numbers", "store a numeric array under 'data'");
  if (data.shape.size() != 2 && data.shape.size() != 3)
    throw InputError(where + ": 'data' has " + std::to_string(data.shape.size()) +
                         " dimensions; expected (N, C) for a table or (N, H, W) for frames");
  if (data.shape[0] == 0) throw InputError(where + ": 'data' has zero rows", "nothing to train on");
  for (std::size_t i = 1; i < data.shape.size(); ++i)
    if (data.shape[i] == 0) throw InputError(where + ": 'data' has a zero-length feature dimension");
  Dataset ds;
  ds.original_shape = data.shape;
  ds.source_dtype = dtype_name(data.dtype);
  ds.source_item_bytes = static_cast<int64_t>(data.itemsize());
  ds.source_path = where;
  const int64_t n = data.shape[0];
  const int64_t f = ds.features();
  ds.data = at::empty({n, f}, at::kDouble);
  if (data.dtype == DType::kFloat64) {
    if (!data.bytes.empty()) std::memcpy(ds.data.data_ptr<double>(), data.bytes.data(), data.bytes.size());
  } else {
    const std::vector<double> v = data.to_doubles();
    if (!v.empty()) std::memcpy(ds.data.data_ptr<double>(), v.data(), v.size() * sizeof(double));
  }
  if (ds.data_dimension() == 1 && !names.empty() && static_cast<int64_t>(names.size()) != f)
    throw InputError(where + ": 'names' has " + std::to_string(names.size()) + " entries but 'data' has " +
                         std::to_string(f) + " columns");
  if (ds.data_dimension() == 2) names.clear();
  ds.names = std::move(names);
  check_finite(ds.data, ds.names, where);
  ds.subnormal_values = count_subnormal(ds.data);
  ds.float32_subnormal_values = count_float32_subnormal(ds.data);
  return ds;
}

Dataset load_dataset(const std::string& path) {
  if (std::error_code ec; !std::filesystem::exists(path, ec))
    throw InputError(path + ": no such file",
                     "check the path (a config's input_path), or make stand-in data there: balerbench data generate "
                     "--kind cms --rows 20000 --out " + path + " (or --kind cfd for frames)");
  NpzMembers members = read_npz(path);
  auto it = members.find("data");
  if (it == members.end()) {
    std::string keys;
    for (const auto& kv : members) keys += (keys.empty() ? "" : ", ") + kv.first;
    throw InputError(path + ": no 'data' array in the .npz (found: " + (keys.empty() ? "nothing" : keys) + ")",
                     "Baler inputs store the table under the key 'data'");
  }
  std::vector<std::string> names;
  auto nit = members.find("names");
  if (nit != members.end()) names = nit->second.to_strings();
  return dataset_from_array(it->second, std::move(names), path);
}

NpyArray tensor_to_npy(const at::Tensor& x, const std::vector<int64_t>& shape) {
  const at::Tensor c = x.contiguous().cpu();
  DType dtype;
  switch (c.scalar_type()) {
    case at::kDouble: dtype = DType::kFloat64; break;
    case at::kFloat: dtype = DType::kFloat32; break;
    case at::kHalf: dtype = DType::kFloat16; break;
    case at::kLong: dtype = DType::kInt64; break;
    case at::kInt: dtype = DType::kInt32; break;
    case at::kBool: dtype = DType::kBool; break;
    default: throw std::logic_error("tensor_to_npy: unsupported tensor dtype");
  }
  return NpyArray::from_bytes(dtype, shape, c.data_ptr(), static_cast<std::size_t>(c.numel()) * c.element_size());
}

}  // namespace balerbench

namespace balerbench {
at::Tensor npy_to_tensor(const NpyArray& a) {
  at::ScalarType t;
  switch (a.dtype) {
    case DType::kFloat64: t = at::kDouble; break;
    case DType::kFloat32: t = at::kFloat; break;
    case DType::kFloat16: t = at::kHalf; break;
    case DType::kInt64: t = at::kLong; break;
    case DType::kInt32: t = at::kInt; break;
    case DType::kUInt8: t = at::kByte; break;
    case DType::kBool: t = at::kBool; break;
    default: throw InputError("a " + dtype_name(a.dtype) + " array cannot be used as numbers");
  }
  at::Tensor out = at::empty(a.shape, at::TensorOptions().dtype(t));
  if (!a.bytes.empty()) std::memcpy(out.data_ptr(), a.bytes.data(), a.bytes.size());
  return out;
}
void cast_integer_columns(at::Tensor& x, const std::vector<std::string>& type_list, bool truncate) {
  if (type_list.empty()) return;
  const int64_t features = x.size(1);
  if (static_cast<int64_t>(type_list.size()) != features)
    throw InputError("type_list has " + std::to_string(type_list.size()) + " entries but the data have " +
                     std::to_string(features) + " columns");
  std::vector<uint8_t> is_int(static_cast<std::size_t>(features));
  for (int64_t j = 0; j < features; ++j) is_int[j] = type_list[j].rfind("int", 0) == 0;
  const at::Tensor mask = at::tensor(is_int, at::kByte).to(x.device(), at::kBool);
  x = at::where(mask, truncate ? x.trunc() : x.round(), x);
}

}  // namespace balerbench
