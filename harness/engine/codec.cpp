// codec.cpp: see codec.h.
#include "harness/engine/codec.h"

#include <torch/torch.h>

#include "datasets/error.h"

namespace balerbench {
namespace {

c10::Device model_device(AutoEncoder& model) {
  const auto params = model.parameters();
  return params.empty() ? c10::Device(c10::kCPU) : params.front().device();
}

// Applies `step` to chunks of `in` and writes each result into `out`.
template <typename Step>
void chunked(const at::Tensor& in, at::Tensor& out, int64_t chunk_rows, Step step) {
  const int64_t rows = in.size(0);
  for (int64_t start = 0; start < rows; start += chunk_rows) {
    const int64_t n = std::min(chunk_rows, rows - start);
    out.narrow(0, start, n).copy_(step(in.narrow(0, start, n)));
  }
}

}  // namespace

c10::Device resolve_device(const std::string& name) {
  c10::Device device(c10::kCPU);
  try {
    device = c10::Device(name);
  } catch (const std::exception&) {
    throw InputError("invalid device '" + name + "'", "cpu, cuda or cuda:N");
  }
  if (device.is_cuda() && !torch::cuda::is_available())
    throw InputError("device '" + name + "' requested but no CUDA GPU is available to this LibTorch build",
                     "use --set device=cpu");
  return device;
}

at::Tensor encode_rows(AutoEncoder& model, const at::Tensor& x, const Normalization* norm,
                       at::ScalarType latent_dtype, int64_t chunk_rows) {
  torch::NoGradGuard no_grad;
  model.eval();
  const c10::Device device = model_device(model);
  at::Tensor out = torch::empty({x.size(0), model.architecture().latent}, x.options().dtype(latent_dtype));
  chunked(x, out, chunk_rows, [&](const at::Tensor& c) {
    const at::Tensor xn = norm ? norm->apply(c) : c;
    return model.encode(xn.to(device, model.dtype()));
  });
  return out;
}

at::Tensor decode_rows(AutoEncoder& model, const at::Tensor& z, const Normalization* norm, int64_t chunk_rows) {
  torch::NoGradGuard no_grad;
  model.eval();
  const c10::Device device = model_device(model);
  at::Tensor out = torch::empty({z.size(0), model.architecture().n_features}, z.options().dtype(model.dtype()));
  chunked(z, out, chunk_rows, [&](const at::Tensor& c) {
    const at::Tensor y = model.decode(c.to(device, model.dtype()));
    return norm ? norm->invert(y) : y;
  });
  return out;
}

}  // namespace balerbench
