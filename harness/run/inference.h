// inference.h: compress and decompress as every run does them, written once for the compress,
// decompress and codecs commands (codec_commands.cpp) and a sweep's trials (trial/trial_stages.cpp):
// the inference engine made from the run config, the encode and decode of a whole table with the
// config's latent dtype, chunk rows and integer columns, and the decoder's files (model.pt and the
// normalization) that a reader of the latent code must have.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "datasets/normalizer.h"
#include "harness/codecs/baler_codec.h"
#include "harness/engine/engine_registry.h"
#include "harness/run/run_config.h"
#include "harness/run/training_session.h"
#include "models/autoencoder.h"

namespace balerbench {

// The engine of compress and decompress for `inference` (inference_decision's), made for `model`
// with the config's chunk rows and fused-engine settings.
std::unique_ptr<Engine> make_run_inference_engine(const EngineDecision& inference, AutoEncoder& model,
                                                  const PrecisionPolicy& policy, const RunConfig& c);
// The same for the model a session trained, on the engine it trained with (or the reference engine
// when that one cannot run the policy's inference).
std::unique_ptr<Engine> make_run_inference_engine(TrainingSession& session, const RunConfig& c);

// x: (N, n_features) float64 in data units -> the latent code (N, latent) in the config's
// latent_dtype (the model's dtype, `param_dtype`, when it names none).
at::Tensor encode_table(AutoEncoder& model, Engine& engine, const at::Tensor& x, const Normalization* norm,
                        const RunConfig& c, at::ScalarType param_dtype, PhaseTimer* timer = nullptr);

// How decode_table de-normalizes: in the model's dtype chunk by chunk (balerbench's own), or as
// Baler does, in float64 after the cast to the model's Baler dtype (a Baler project's files).
enum class Denormalize { kInModelDtype, kAsBaler };
// z: (N, latent) -> (N, n_features), de-normalized when `norm` is given; for 1D data
// (`data_dimension` 1) the config's integer columns are cast as Baler casts them.
at::Tensor decode_table(AutoEncoder& model, Engine& engine, const at::Tensor& z, const Normalization* norm,
                        const RunConfig& c, int data_dimension, PhaseTimer* timer = nullptr,
                        Denormalize how = Denormalize::kInModelDtype);

// The sizes of the decoder's files as written, in bytes; the normalization's is 0 when the config
// does not normalize.
struct DecoderBytes {
  int64_t model_bytes = 0;
  int64_t normalization_bytes = 0;
};
// model.pt (in `saved_dtype` when given: a Baler project's) and the normalization features, for data
// of `original_shape` (N, d1, ...); an empty array when the config does not normalize, as `train`
// writes it.
DecoderBytes write_decoder_files(const std::string& model_path, const std::string& norm_path, const AutoEncoder& model,
                                 const Normalization& norm, const RunConfig& c,
                                 const std::vector<int64_t>& original_shape,
                                 std::optional<at::ScalarType> saved_dtype = std::nullopt);
// The same files written into a temporary folder of this process's own and removed: what a reader
// of a trial's latent code would need, by size.
DecoderBytes measure_decoder_files(const AutoEncoder& model, const Normalization& norm, const RunConfig& c,
                                   const std::vector<int64_t>& original_shape);

}  // namespace balerbench
