// run_setup.h: what every run sets up from its config, shared by the cycle's commands
// (engine/cycle.cpp), the training session (engine/training_session.cpp) and the sweep's trials:
// dimension checks, the CPU runtime, the precision policy, the validation split, the trainer's
// options, and the report sections both write.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <utility>

#include "datasets/dataset.h"
#include "datasets/normalizer.h"
#include "harness/engine/engine_registry.h"
#include "harness/engine/phase_timer.h"
#include "harness/engine/precision.h"
#include "harness/engine/run_config.h"
#include "harness/engine/trainer.h"
#include "models/autoencoder.h"

namespace balerbench {

// A 2D file with a 1D model, the reverse, or a type_list of the wrong length: InputError.
void check_dimensions(const RunConfig& c, const Dataset& ds);
// Zero minimum and unit range: no normalization.
Normalization identity(int64_t features);
void configure_runtime(const RunConfig& c);
at::ScalarType latent_scalar_type(const RunConfig& c, at::ScalarType model_dtype);
// The config's precision for this model on `device`; moves and converts the model.
PrecisionPolicy apply_precision(const RunConfig& c, AutoEncoder& model, c10::Device device);
// The seeded permutation of n rows that split() draws, as an index on `device` (the data's).
at::Tensor split_permutation(int64_t n, uint64_t seed, c10::Device device);
// Training and validation rows (seeded shuffle); validation undefined when test_size is 0.
std::pair<at::Tensor, at::Tensor> split(const at::Tensor& x, double test_size, uint64_t seed);
TrainOptions train_options(const RunConfig& c);
nlohmann::json precision_json(const TrainResult& r);
// {"name": "fused", "workers": 2, "note": "auto: fused (...)"}: the engine that trained.
nlohmann::json engine_json(const TrainResult& r);
// {"name", "note"?} of a compress or decompress.
nlohmann::json engine_json(const EngineDecision& decision);
nlohmann::json profile_json(const RunConfig& c, c10::Device device, const PhaseTimes& phases);
// This process's CPU time (user + system), in s.
double process_cpu_s();

// The CUDA device whose caching allocator a MemoryPeakTracker follows: the device's index, or -1 off CUDA.
int cuda_allocator_index(c10::Device device);
nlohmann::json dataset_json(const Dataset& ds);
// Integer columns of type_list rounded (or truncated) in place.
void cast_integer_columns(at::Tensor& x, const RunConfig& c, int64_t features);
// Errors of the reconstruction y against the input (see run_setup.cpp).
nlohmann::json reconstruction_json(const Dataset& in, const at::Tensor& y);

}  // namespace balerbench
