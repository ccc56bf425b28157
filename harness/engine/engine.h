// engine.h: what an engine does, the one interface between a run and the numerics of Baler's
// autoencoders.
//
// An engine runs one model: a training step at a time (forward, backward and the optimizer's step
// on one batch) and inference (encode, decode). The trainer (trainer.cpp) owns the epochs, the
// shuffling, the evaluation and the schedulers; the codec (codec.cpp) owns the chunks and the
// normalization; an engine owns only what happens to a batch or a chunk.
//
// Implementations, chosen by kind in one place (engine_registry.cpp):
//   libtorch  libtorch_engine.cpp  LibTorch autograd, eager or replaying a captured CUDA graph
//   fused     fused_engine.cpp     the forward, backward and loss written out by hand (CPU)
// A new engine is its files (its factories, and its own run-config keys: engine_knobs.h) and one
// line in the registry.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

#include "harness/engine/engine_choice.h"
#include "harness/engine/loss.h"
#include "harness/engine/phase_timer.h"
#include "harness/engine/precision.h"

namespace balerbench {

class FlatAdam;
class GradScaler;

class Knobs;          // base/knobs.h: the engines' own run-config keys (engine_knobs.h's EngineKnobs)
using EngineKnobs = Knobs;
struct TrainOptions;  // trainer.h: the training's settings, as the run config gave them

// What an engine made for training is given, once, by fit: the settings whole, by reference, and
// what fit made for them.
struct TrainingSetup {
  // Batch size (a full batch's rows; the last batch of an epoch may be shorter), loss, precision
  // policy (the model and data are already in its dtypes), workers (threads sharing each batch,
  // for engines that split it; 0: the intra-op threads), cuda_graphs, profile, and the engines'
  // knobs (engine_knobs.h), among them the fused engine's products and shards.
  const TrainOptions& options;
  FlatAdam& opt;                // the model's parameters, seated in its flat buffers; the step ends with opt.step()
  GradScaler* scaler = nullptr; // amp_fp16's loss scaling, or null
  PhaseTimer& timer;            // books encode, decode, loss, backward and optimizer (when profiling)
  int64_t train_rows = 0;       // rows of the training set (the largest step is min(batch_size, train_rows))
  int64_t features = 0;         // columns of a batch
  c10::Device device = c10::kCPU;  // the model's and the data's
};

// What an engine made for inference only (compress, decompress) is given.
struct InferenceSetup {
  PrecisionPolicy policy;  // autocast as in training
  int64_t max_rows = 0;    // rows of the largest chunk
  int workers = 0;         // 0: the intra-op threads
  const EngineKnobs* knobs = nullptr;  // the run config's engine knobs; null: every knob at its default
};

// What an engine says about itself after a run, for the results.
struct EngineStatus {
  int workers = 0;             // threads that shared each batch; 0: LibTorch's own intra-op pool
  std::string note;            // e.g. why a CUDA graph was not used; "" when nothing to say
  bool cuda_graph = false;     // full batches replayed a captured CUDA graph
  int64_t graph_replays = 0;
  // The engine's own keys for the report's engine section, as it names them: the fused engines'
  // "products" (what ran the products and why), "shards" (parts each batch was cut into) and
  // "threads" (how the workers' threads fared). The reports copy them whole.
  nlohmann::json details = nlohmann::json::object();
  // details[key] as text, "" when the engine did not say it.
  std::string detail(const char* key) const {
    const auto it = details.find(key);
    return it != details.end() && it->is_string() ? it->get<std::string>() : "";
  }
};

class Engine {
 public:
  virtual ~Engine() = default;
  virtual EngineKind kind() const = 0;
  const char* name() const { return engine_name(kind()); }
  virtual EngineStatus status() const = 0;

  // Training (an engine from make_training_engine). begin_epoch() clears the epoch's loss sum;
  // step(xb) runs one batch, xb: (rows <= batch_size, features), contiguous, in the policy's data
  // dtype on the model's device; epoch_loss_sum() is the sum of the batch losses since
  // begin_epoch() (as batch_loss defines them), read from the device once.
  virtual void begin_epoch() = 0;
  virtual void step(const at::Tensor& xb) = 0;
  virtual double epoch_loss_sum() = 0;

  // Inference, without gradients: x (rows, features) -> latent (rows, latent); z -> x_hat. Inputs
  // in the model's dtype on its device; outputs in the compute dtype (bfloat16 or float16 under
  // autocast), at most max_rows rows per call for an inference engine.
  virtual at::Tensor encode(const at::Tensor& x) = 0;
  virtual at::Tensor decode(const at::Tensor& z) = 0;
};

}  // namespace balerbench
