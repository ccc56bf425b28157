// baler_codec.cpp: see baler_codec.h.
#include "harness/codecs/baler_codec.h"

#include <torch/torch.h>

#include "common/error.h"

namespace balerbench {
namespace {

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

at::Tensor encode_rows(AutoEncoder& model, Engine& engine, const at::Tensor& x, const Normalization* norm,
                       at::ScalarType latent_dtype, int64_t chunk_rows, PhaseTimer* timer) {
  torch::NoGradGuard no_grad;
  model.eval();
  PhaseTimer off;
  PhaseTimer& t = timer ? *timer : off;
  const c10::Device device = model.device();
  at::Tensor out = torch::empty({x.size(0), model.architecture().latent}, x.options().dtype(latent_dtype));
  chunked(x, out, chunk_rows, [&](const at::Tensor& c) {
    at::Tensor xn;
    {
      PhaseTimer::Scope s(t, Phase::kData);
      xn = (norm ? norm->apply(c) : c).to(device, model.dtype());
    }
    PhaseTimer::Scope s(t, Phase::kCompress);
    return engine.encode(xn);
  });
  return out;
}

at::Tensor decode_rows(AutoEncoder& model, Engine& engine, const at::Tensor& z, const Normalization* norm,
                       int64_t chunk_rows, PhaseTimer* timer) {
  torch::NoGradGuard no_grad;
  model.eval();
  PhaseTimer off;
  PhaseTimer& t = timer ? *timer : off;
  const c10::Device device = model.device();
  at::Tensor out = torch::empty({z.size(0), model.architecture().n_features}, z.options().dtype(model.dtype()));
  chunked(z, out, chunk_rows, [&](const at::Tensor& c) {
    at::Tensor zc, y;
    {
      PhaseTimer::Scope s(t, Phase::kData);
      zc = c.to(device, model.dtype());
    }
    {
      PhaseTimer::Scope s(t, Phase::kDecompress);
      y = engine.decode(zc);
    }
    PhaseTimer::Scope s(t, Phase::kData);
    y = y.to(model.dtype());  // autocast's float16/bfloat16 back to the master dtype
    return norm ? norm->invert(y) : y;
  });
  return out;
}

at::ScalarType latent_scalar_type(const std::string& latent_dtype, at::ScalarType model_dtype) {
  if (latent_dtype == "float64") return at::kDouble;
  if (latent_dtype == "float32") return at::kFloat;
  if (latent_dtype == "float16") return at::kHalf;
  return model_dtype;
}

}  // namespace balerbench
