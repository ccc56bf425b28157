// fused_engine.h: the training step of Baler's dense models written out by hand.
//
// Baler's dense autoencoders (AE, CFD_dense_AE, FPGA_prototype_model) are fixed chains of
// Linear layers, each followed by LeakyReLU(0.01), ReLU or nothing. Their forward and backward
// passes need no autograd graph: this engine keeps every layer's activation in a preallocated
// buffer, runs the layer products as single-threaded GEMMs into those buffers, and fuses the rest
// into plain loops: the activation with the forward product's output, the loss with its gradient,
// the activation's derivative with the bias gradient. The step ends with the model's FlatAdam,
// whose flat gradient buffer the engine writes directly.
//
// Products (fp64, fp32): Eigen's, compiled per instruction-set level and chosen from CPUID
// (dense_products.h), or OpenBLAS's through at::mm_out. `auto` runs Eigen, and times both on the
// step's own shapes when the engine is made (the fastest of 5 rounds each): the times, and a hint
// when OpenBLAS was 15% faster, are in status().details["products"]. It does not switch on them: the products'
// summation order is part of the result, and a timing must not make two runs differ in their bits.
//
// amp_bf16 (bf16_kernels.h): every product on bfloat16 dot products (VDPBF16PS where the CPU has
// them, else their float32 emulation, the same bits) with its epilogue fused, autocast's roundings
// kept; each gradient summed in float32 over the whole batch (the shards in order) and rounded to
// bfloat16 once, as autocast rounds the batch's; the float32 master weights packed into bfloat16 at
// every step.
//
// Threads: the batch is cut into `shards` parts (contiguous rows, in order), each run through the
// whole forward and backward pass with its own buffers. The gradients are then summed in shard
// order, so a result never depends on scheduling: the same inputs give the same bits, run after
// run, whichever threads ran the shards and however many there were. The number of shards is fixed
// when the engine is made (by default the machine's CPUs, at most 8: default_shards()), never by a
// timing: the thread calibration and the governor change how fast a step is, not its bits. The shards go to a pool of threads that claim them
// (shard_pool.h): a thread descheduled by a neighbour leaves its shard to the others, and a
// governor measures whether the step is faster on all threads or on one and switches (a collapse
// under load is noticed within three steps; status().details["threads"] says what happened). With one
// worker it is the same arithmetic as LibTorch's autograd, term by term, up to the summation order
// inside the products.
//
// It implements engine.h's Engine; the LibTorch autograd engine (libtorch_engine.cpp) stays the
// reference. fused_unsupported_reason says which models, precisions and devices this engine takes.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "harness/engine/dense_loops.h"
#include "harness/engine/engine.h"
#include "harness/engine/engine_knobs.h"
#include "harness/engine/fused_layer.h"
#include "harness/engine/loss.h"
#include "harness/engine/phase_timer.h"
#include "harness/engine/precision.h"
#include "models/autoencoder.h"

namespace balerbench {

class FlatAdam;
struct DenseProducts;
class ShardPool;
struct FusedWorker;
class ThreadGovernor;

// The fused engine's products: backend "auto" | "eigen" | "openblas" (auto runs Eigen and reports
// both backends' times on the step's shapes); isa "auto" | "generic" | "avx2" | "avx512", the level
// of Eigen's kernels (auto: the widest this CPU runs).
struct FusedProductsChoice {
  std::string backend = "auto";
  std::string isa = "auto";
  bool adaptive_threads = true;  // training: the governor may run a step on one thread (shard_pool.h)
};

// The fused engine's run-config keys (fused_knobs.cpp): fused_products, fused_isa, fused_shards.
const EngineKnobSection& fused_knob_section();
// The products asked for by `knobs` (null: the defaults).
FusedProductsChoice fused_products_choice(const EngineKnobs* knobs, bool adaptive_threads = true);
// Parts each batch is cut into: `knobs`' fused_shards when set, else `workers` when set, else
// default_shards() (the machine's CPUs, not the timed thread choice: two runs of one config on one
// machine give the same bits whatever the calibration picked). The result depends on the shards
// alone, never on the threads that run them.
int fused_shards(const EngineKnobs* knobs, int workers);
// The threads an engine made from a setup runs on: `workers` when set, else LibTorch's intra-op count.
int fused_setup_threads(int workers);

// Why the fused engine cannot train `model` at `param_dtype` with autocast `autocast` on
// `device`; empty when it can. One line, naming what to use instead.
// `compute_dtype` is what the products run in: the parameters' dtype, or bfloat16 for amp_bf16
// (float32 master weights).
std::string fused_unsupported_reason(const AutoEncoder& model, at::ScalarType param_dtype, at::ScalarType compute_dtype,
                                     c10::Device device);

class FusedDenseEngine final : public Engine {
 public:
  // `model`'s parameters must already be seated in `opt`'s flat buffers (FlatAdam's
  // constructor does that). `max_rows` is the largest batch a step will see; `shards` >= 1 parts per
  // batch, run on `threads` threads (0: as many as shards; at most shards).
  // InputError (with fused_unsupported_reason) when the model cannot be fused.
  // `compute_dtype` kBFloat16 (with float32 parameters) runs amp_bf16 as LibTorch's CPU autocast
  // does: each product in bfloat16 on bfloat16 copies of the weights and activations, the
  // activations in bfloat16, the loss in float32, each weight and bias gradient summed over the batch
  // in float32 and rounded to bfloat16 once. Undefined: the parameters' dtype.
  FusedDenseEngine(AutoEncoder& model, const FlatAdam& opt, LossKind loss, int64_t max_rows, int shards,
                   at::ScalarType compute_dtype = at::ScalarType::Undefined, const FusedProductsChoice& products = {},
                   int threads = 0);
  // For fit (engine_registry.h): as above, with the optimizer it steps and the timer it books to.
  FusedDenseEngine(AutoEncoder& model, const TrainingSetup& setup);
  // Inference only (compress, decompress): encode, decode and forward; forward_backward throws.
  // `compute_dtype` kBFloat16 runs amp_bf16's forward (bfloat16 out, as autocast gives it).
  FusedDenseEngine(AutoEncoder& model, int64_t max_rows, int shards, const FusedProductsChoice& products = {},
                   int threads = 0, at::ScalarType compute_dtype = at::ScalarType::Undefined);
  // The shards of an engine made from a setup that names neither shards nor workers: the CPUs this
  // process may run on (available_cpus()), at most 8. A property of the machine, not of a timing.
  static int default_shards();
  ~FusedDenseEngine() override;
  FusedDenseEngine(const FusedDenseEngine&) = delete;
  FusedDenseEngine& operator=(const FusedDenseEngine&) = delete;

  // Forward and backward on the rows of `xb` (contiguous, at most max_rows): writes the batch's
  // gradient into the optimizer's flat gradient buffer (overwriting it) and returns the batch
  // loss, as batch_loss() defines it. The optimizer step is the caller's. With an enabled `timer`
  // the pass runs phase by phase (encode, decode, loss, backward), each timed; else in one go.
  double forward_backward(const at::Tensor& xb, PhaseTimer* timer = nullptr);

  // Engine: a step is forward_backward and the optimizer's step (made with a TrainingSetup only).
  EngineKind kind() const override { return EngineKind::kFused; }
  EngineStatus status() const override;
  void begin_epoch() override { loss_sum_ = 0; }
  void step(const at::Tensor& xb) override;
  double epoch_loss_sum() override { return loss_sum_; }

  // Inference, in chunks of at most max_rows rows per worker: layers [first, last) of the chain.
  // encode() is [0, latent layer], decode() the rest. No gradient, no autograd.
  at::Tensor encode(const at::Tensor& x) override;
  at::Tensor decode(const at::Tensor& z) override;
  at::Tensor forward(const at::Tensor& x);

  int shards() const { return static_cast<int>(workers_.size()); }
  int threads() const { return threads_; }  // that run the shards (the governor may use one)
  // "eigen" or "openblas", and the instruction-set level of Eigen's products and of the loops.
  const std::string& backend() const { return backend_; }
  const char* isa() const;
  int64_t layers() const { return static_cast<int64_t>(layers_.size()); }

  using Layer = FusedLayer;

 private:
  using Worker = FusedWorker;  // fused_worker.h
  void build(AutoEncoder& model, const at::Tensor* flat_params, int64_t max_rows, int shards, int threads,
             const FusedProductsChoice& products);
  void cast_weights_bf16();
  void ensure_packed();  // amp_bf16: the packs of the parameters as they are now, made if stale
  void sum_and_step(int64_t begin, int64_t end);  // the shards' gradients summed, Adam, on [begin, end)
  void bf16_layer_step(std::size_t layer);         // amp_bf16: sum_and_step of a layer, then its pack
  // A training step in parts: the batch shared out among the workers (contiguous rows, in order),
  // the Part flags of fused_engine.cpp run by every worker on its rows, and the workers' gradients
  // summed into the optimizer's in worker order.
  void split_batch(const at::Tensor& xb);
  void run_parts(int parts, double norm, double grad_output, int threads_now);
  void reduce_gradients();
  // The gradient sum and the optimizer's step together, in parts on the pool's threads.
  void reduce_and_step(int threads_now);
  // forward_backward, and with `adam` (on the pool, unprofiled) the optimizer's step too.
  double pass(const at::Tensor& xb, PhaseTimer* timer, bool adam);
  at::Tensor run_layers(const at::Tensor& x, std::size_t first, std::size_t last);
  // The products' backend and level: as asked, or by measurement (auto); sets products_note_.
  void choose_products(const FusedProductsChoice& choice);
  void choose_float_products(const FusedProductsChoice& choice, IsaLevel level);  // fp64, fp32
  double time_products(bool eigen);  // seconds for one shard's products of a step, this backend
  // Runs fn(worker) for every worker: on the shard pool, else (one shard) LibTorch's intra-op threads.
  void for_each_worker(int threads_now, const std::function<void(int)>& fn);

  std::vector<Layer> layers_;
  std::size_t encoder_layers_ = 0;  // layers up to and including the latent one
  at::Tensor flat_grads_;
  LossKind loss_;
  int64_t max_rows_;
  bool bf16_ = false;
  bool packed_ = false;                  // amp_bf16: the layers' packs hold the parameters as they are
  std::vector<std::size_t> bf16_order_;  // amp_bf16: the layers, largest first (the Adam tasks)
  FlatAdam* opt_ = nullptr;      // made with a TrainingSetup: the optimizer step() steps
  PhaseTimer* timer_ = nullptr;  // and the timer it books to
  double loss_sum_ = 0;          // the epoch's batch losses, on the host
  std::vector<std::unique_ptr<Worker>> workers_;  // one per shard
  int threads_ = 1;                               // the pool's threads (at most the shards)
  const DenseProducts* products_ = nullptr;  // Eigen's kernels; null: OpenBLAS through at::mm_out
  const DenseLoops* loops_ = nullptr;        // the element-wise loops and Adam, at the products' level
  std::string backend_ = "openblas";
  std::string products_note_;
  std::unique_ptr<ShardPool> pool_;          // the shards' threads (fp64, fp32; more than one shard)
  // While the pool runs the workers, LibTorch's own intra-op threads are set to one (restored by the
  // destructor): an OpenMP thread that spins after a parallel region (the gradient sum, Adam) would
  // take the core a pool thread needs at the next step.
  int saved_intra_op_threads_ = 0;
  std::unique_ptr<ThreadGovernor> governor_; // training with more than one thread on the pool
};

}  // namespace balerbench
