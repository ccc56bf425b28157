// codec.h: compress (encode) and decompress (decode) whole tables in chunks.
//
// Baler encodes batch by batch and np.concatenates onto the output each time
// (quadratic copying); here each chunk is written into a preallocated output.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <string>

#include "models/autoencoder.h"

namespace balerbench {

// "cpu", "cuda", "cuda:N" -> device; InputError when CUDA is asked for but absent.
c10::Device resolve_device(const std::string& name);

// x: (N, n_features) on the CPU, any float dtype -> latent (N, z) on the CPU in `latent_dtype`.
at::Tensor encode_rows(AutoEncoder& model, const at::Tensor& x, at::ScalarType latent_dtype, int64_t chunk_rows);
// z: (N, z) on the CPU -> (N, n_features) on the CPU in the model's dtype.
at::Tensor decode_rows(AutoEncoder& model, const at::Tensor& z, int64_t chunk_rows);

}  // namespace balerbench
