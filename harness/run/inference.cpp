// inference.cpp: see inference.h.
#include "harness/run/inference.h"

#include <unistd.h>

#include <filesystem>

#include "datasets/dataset.h"
#include "datasets/npy.h"
#include "harness/base/clock.h"

namespace balerbench {

namespace fs = std::filesystem;

std::unique_ptr<Engine> make_run_inference_engine(const EngineDecision& inference, AutoEncoder& model,
                                                  const PrecisionPolicy& policy, const RunConfig& c) {
  return make_inference_engine(inference.engine, model,
                               {policy, c.codec_chunk_rows, 0, &c.engine_knobs});
}

std::unique_ptr<Engine> make_run_inference_engine(TrainingSession& session, const RunConfig& c) {
  return make_run_inference_engine(inference_decision(session.engine(), session.policy(), session.device()),
                                   session.model(), session.policy(), c);
}

at::Tensor encode_table(AutoEncoder& model, Engine& engine, const at::Tensor& x, const Normalization* norm,
                        const RunConfig& c, at::ScalarType param_dtype, PhaseTimer* timer) {
  return encode_rows(model, engine, x, norm, latent_scalar_type(c.latent_dtype, param_dtype), c.codec_chunk_rows,
                     timer);
}

at::Tensor decode_table(AutoEncoder& model, Engine& engine, const at::Tensor& z, const Normalization* norm,
                        const RunConfig& c, int data_dimension, PhaseTimer* timer, Denormalize how) {
  at::Tensor x;
  if (how == Denormalize::kAsBaler) {
    // Baler's decompressed data: the model's Baler dtype, or float64 when de-normalized (numpy
    // promotes the float32 output times the float64 range).
    x = decode_rows(model, engine, z, nullptr, c.codec_chunk_rows, timer);
    x = norm ? norm->invert(x.to(at::kDouble)) : x.to(model.baler_dtype());
  } else {
    x = decode_rows(model, engine, z, norm, c.codec_chunk_rows, timer);
  }
  if (data_dimension == 1) cast_integer_columns(x, c.type_list, c.truncate);
  return x;
}

DecoderBytes write_decoder_files(const std::string& model_path, const std::string& norm_path, const AutoEncoder& model,
                                 const Normalization& norm, const RunConfig& c,
                                 const std::vector<int64_t>& original_shape,
                                 std::optional<at::ScalarType> saved_dtype) {
  save_state_dict(model, model_path, saved_dtype);
  const std::vector<int64_t> features(original_shape.begin() + 1, original_shape.end());
  write_npy(norm_path, c.normalizes() ? norm.to_npy(features) : NpyArray::from_doubles({0}, {}));
  DecoderBytes b;
  b.model_bytes = static_cast<int64_t>(fs::file_size(model_path));
  if (c.normalizes()) b.normalization_bytes = static_cast<int64_t>(fs::file_size(norm_path));
  return b;
}

DecoderBytes measure_decoder_files(const AutoEncoder& model, const Normalization& norm, const RunConfig& c,
                                   const std::vector<int64_t>& original_shape) {
  const fs::path dir = fs::temp_directory_path() /
                       ("balerbench-codecs-" + std::to_string(::getpid()) + "-" + std::to_string(unix_now_s()));
  fs::create_directories(dir);
  DecoderBytes b;
  try {
    b = write_decoder_files((dir / "model.pt").string(), (dir / "normalization_features.npy").string(), model, norm,
                            c, original_shape);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(dir, ec);
    throw;
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  return b;
}

}  // namespace balerbench
