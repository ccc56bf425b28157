// baler_codec.h: compress (encode) and decompress (decode) whole tables in chunks.
//
// Baler encodes batch by batch and np.concatenates onto the output each time
// (quadratic copying); here each chunk is written into a preallocated output.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <string>

#include "datasets/normalizer.h"
#include "harness/engine/engine.h"
#include "harness/engine/phase_timer.h"
#include "models/autoencoder.h"

namespace balerbench {

// x: (N, n_features) float64 on the CPU, in data units -> latent (N, z) on the
// CPU in `latent_dtype`. Each chunk is normalized (in float64, when `norm` is
// given) and cast to the model's dtype while it is in cache, then encoded by
// `engine` (made for `model`, with chunks of up to chunk_rows rows), without
// gradients. `timer` (optional) times the chunk preparation and copies as
// "data" and the encoder as "compress".
at::Tensor encode_rows(AutoEncoder& model, Engine& engine, const at::Tensor& x, const Normalization* norm,
                       at::ScalarType latent_dtype, int64_t chunk_rows, PhaseTimer* timer = nullptr);
// z: (N, z) on the CPU -> (N, n_features) on the CPU in the model's dtype,
// de-normalized chunk by chunk when `norm` is given; the decoder is
// "decompress".
at::Tensor decode_rows(AutoEncoder& model, Engine& engine, const at::Tensor& z, const Normalization* norm,
                       int64_t chunk_rows, PhaseTimer* timer = nullptr);

// The latent code's dtype: "float64", "float32" or "float16" (a config's latent_dtype), or the
// model's dtype when "" (Baler's default).
at::ScalarType latent_scalar_type(const std::string& latent_dtype, at::ScalarType model_dtype);

}  // namespace balerbench
