// fused_cuda_engine.cpp: see fused_cuda_engine.h. Built only with BALERBENCH_CUDA_ENGINE on
// (harness/CMakeLists.txt; fused_cuda_absent.cpp otherwise). It uses what Debian's CPU LibTorch 1.13
// also has (data pointers, sizes, device indices) and the CUDA runtime, so that it compiles on a
// machine without a GPU; the kernels are in fused_cuda_kernels.cu.
#include "harness/engine/cuda/fused_cuda_engine.h"

#include <ATen/ATen.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>

#include "common/error.h"
#include "harness/engine/cuda/fused_cuda_device_guard.h"
#include "harness/engine/cuda/fused_cuda_kernels.h"
#include "harness/engine/cuda/fused_cuda_layers.h"
#include "harness/engine/flat_adam.h"
#include "harness/engine/fused_engine.h"
#include "harness/engine/trainer.h"

namespace balerbench {
namespace {

using fused_cuda::chain_of;
using fused_cuda::DeviceGuard;
using fused_cuda::LayerTable;

// False until a GPU run has passed the checks docs/fused_cuda.md lists (tests/gpu/test_fused_cuda.cpp,
// compute-sanitizer memcheck and racecheck, the 50-epoch trajectory against libtorch): then set it to
// true, and `auto` takes the fused engine for fp32 on CUDA (it is first in the registry).
constexpr bool kVerifiedOnGpu = false;

// Rows per tile_step block: 64 blocks at batch 512. The first number to tune on a GPU: more blocks
// fill more of the SMs (132 on an H100), but each tile writes, and reduce_adam reads back, a whole
// gradient (244 KB for AE): docs/fused_cuda.md estimates 8 rows as the best of 4, 8 and 16. Halved
// while a block's shared memory does not fit the device, down to kRowsPerThread.
constexpr int kPreferredTileRows = 8;
// The smallest opt-in shared memory per block of the GPUs this is built for (sm_86 and sm_89: 99 KB;
// sm_80 163 KB, sm_90 227 KB): a model whose tile of kRowsPerThread rows fits is taken everywhere.
constexpr std::size_t kSharedBytesEverywhere = 99 * 1024;

// Checks that FlatAdam seated each layer's weight and bias in `flat` where the layer table says.
void check_seats(const LayerTable& net, AutoEncoder& model, const at::Tensor& flat) {
  std::map<std::string, at::Tensor> params;
  for (const auto& p : model.named_parameters(true)) params[p.key()] = p.value();
  const auto offset_of = [&flat](const at::Tensor& t) {
    const int64_t bytes = static_cast<const char*>(t.data_ptr()) - static_cast<const char*>(flat.data_ptr());
    const int64_t offset = bytes / static_cast<int64_t>(flat.element_size());
    if (bytes < 0 || offset + t.numel() > flat.numel() || !t.is_contiguous())
      throw std::logic_error("fused CUDA engine: the model's parameters are not seated in the optimizer's flat buffer");
    return offset;
  };
  const auto& layers = model.architecture().layers;
  if (net.params != flat.numel())  // the kernels' one-thread-per-element loops find every element in a layer
    throw std::logic_error("fused CUDA engine: the optimizer's flat buffer holds " + std::to_string(flat.numel()) +
                           " elements, the chain's layers " + std::to_string(net.params));
  for (int i = 0; i < net.layers; ++i) {  // chain_of placed them as FlatAdam seats them: a check
    const std::string& name = layers[static_cast<std::size_t>(i)].name;
    if (offset_of(params.at(name + ".weight")) != net.weight_offset[i] ||
        offset_of(params.at(name + ".bias")) != net.bias_offset[i])
      throw std::logic_error("fused CUDA engine: layer " + name + " is not where the layer table puts it in the "
                             "optimizer's flat buffer");
  }
}

// The precisions the engine runs, and on what: fp32 on the SIMT cores (fused_cuda_kernels.cu), the
// others on tensor cores (fused_cuda_mma.cu), each with float32 master weights and data.
struct CudaMode {
  bool known = false;
  bool mma = false;
  fused_cuda::MmaMode mma_mode = fused_cuda::kMmaTf32;
};

CudaMode cuda_mode(Precision precision) {
  switch (precision) {
    case Precision::kFp32: return {true, false, fused_cuda::kMmaTf32};
    case Precision::kTf32: return {true, true, fused_cuda::kMmaTf32};
    case Precision::kAmpBf16: return {true, true, fused_cuda::kMmaBf16};
    case Precision::kAmpFp16:
    case Precision::kAmpFp16NoScale: return {true, true, fused_cuda::kMmaFp16};
    default: return {};
  }
}

// Bytes of shared memory one block needs at `rows` rows per tile (fp32) or one MMA tile.
std::size_t block_bytes(const LayerTable& net, const CudaMode& mode, int rows) {
  return mode.mma ? fused_cuda::mma_shared_bytes(net, mode.mma_mode) : fused_cuda::tile_shared_bytes(net, rows);
}

}  // namespace

bool fused_cuda_built() { return true; }

std::string fused_cuda_unsupported_reason(const AutoEncoder& model, const PrecisionPolicy& policy) {
  // The model's layers as the CPU fused engine takes them (chains of Linear layers, LeakyReLU(0.01),
  // ReLU or nothing), asked for its CPU fp32 case.
  std::string why = fused_unsupported_reason(model, at::kFloat, at::kFloat, c10::Device(c10::kCPU));
  if (!why.empty()) return why;
  const CudaMode mode = cuda_mode(policy.mode);
  if (!mode.known || policy.param_dtype != at::kFloat || policy.data_dtype != at::kFloat)
    return std::string("the fused engine on CUDA runs fp32, tf32, amp_bf16, amp_fp16_noscale and amp_fp16, not ") +
           policy.name();
  const Architecture& arch = model.architecture();
  if (arch.layers.size() > static_cast<std::size_t>(fused_cuda::kMaxLayers))
    return arch.model_name + " has " + std::to_string(arch.layers.size()) + " layers; the fused engine on CUDA takes " +
           std::to_string(fused_cuda::kMaxLayers) + " at most";
  // A chain: the first layer reads the features, each the previous layer's output, the last writes
  // the features back (the kernels size the tile's activations from these widths).
  if (arch.layers.empty()) return arch.model_name + " has no layers; the fused engine on CUDA trains a chain of them";
  const auto width_of = [](const LayerSpec& l, bool in) {
    return l.name + (in ? " reads " + std::to_string(l.in_features) : " writes " + std::to_string(l.out_features));
  };
  if (arch.layers.front().in_features != arch.n_features)
    return arch.model_name + " is not a chain the fused engine on CUDA takes: its first layer " +
           width_of(arch.layers.front(), true) + " features, the data has " + std::to_string(arch.n_features);
  for (std::size_t i = 0; i + 1 < arch.layers.size(); ++i)
    if (arch.layers[i].out_features != arch.layers[i + 1].in_features)
      return arch.model_name + " is not a chain the fused engine on CUDA takes: layer " + std::to_string(i) + " (" +
             width_of(arch.layers[i], false) + ") does not feed layer " + std::to_string(i + 1) + " (" +
             width_of(arch.layers[i + 1], true) + ")";
  if (arch.layers.back().out_features != arch.n_features)
    return arch.model_name + " is not a chain the fused engine on CUDA takes: its last layer " +
           width_of(arch.layers.back(), false) + " features, the data has " + std::to_string(arch.n_features);
  const int rows = mode.mma ? fused_cuda::kMmaTileRows : fused_cuda::kRowsPerThread;
  const std::size_t bytes = block_bytes(chain_of(arch), mode, rows);
  if (bytes > kSharedBytesEverywhere)
    return arch.model_name + " at " + std::to_string(arch.n_features) + " features needs " + std::to_string(bytes / 1024) +
           " KB of shared memory for a tile of " + std::to_string(rows) + " rows in " + policy.name() +
           "; the fused engine on CUDA keeps to " + std::to_string(kSharedBytesEverywhere / 1024) + " KB";
  return "";
}

std::string fused_cuda_summary() {
  return std::string("built for sm_80 and sm_90: fp32, tf32, amp_bf16, amp_fp16_noscale and amp_fp16 (auto ") +
         (kVerifiedOnGpu ? "takes it)" : "passes it by: not yet verified on a GPU)");
}

std::string fused_cuda_auto_skip() { return kVerifiedOnGpu ? "" : "fused on CUDA: not yet verified on a GPU"; }

std::unique_ptr<Engine> make_fused_cuda_training(AutoEncoder& model, const TrainingSetup& setup) {
  return std::make_unique<FusedCudaEngine>(model, setup);
}

// Device buffers, allocated once (LibTorch's caching allocator), sized for max_rows.
struct FusedCudaEngine::Buffers {
  LayerTable net;
  int max_tiles = 0;
  at::Tensor partials;     // (max_tiles, params or padded_params) float32: each tile's gradient
  at::Tensor tile_sq_err;  // (max_tiles) float64: each tile's sum of squares
  at::Tensor weights_t;    // fp32: (params) float32, the transposed weights the forward pass reads
  at::Tensor weights_mma;  // tensor cores: (padded_params) in the mode's type, zero padding
  at::Tensor loss_sum;     // (1) float64: the epoch's batch losses
  at::Tensor adam_steps;   // loss scaling: (1) int64, Adam's steps taken (skipped ones not counted)
  at::Tensor blocks_done;  // loss scaling: (1) int32, adam_scaled's count of finished blocks
};

FusedCudaEngine::FusedCudaEngine(AutoEncoder& model, FlatAdam& opt, LossKind loss, int64_t max_rows, int tile_rows,
                                 Precision precision, GradScaler* scaler)
    : opt_(opt), loss_(loss), max_rows_(max_rows), precision_(precision), scaler_(scaler),
      buffers_(std::make_unique<Buffers>()) {
  const at::Tensor& params = opt.flat_params();
  if (!params.is_cuda() || params.scalar_type() != at::kFloat)
    throw InputError("the fused CUDA engine trains float32 parameters on a CUDA device, not " +
                     std::string(c10::toString(params.scalar_type())) + " on " + params.device().str());
  const PrecisionPolicy policy = resolve_precision(precision, at::kFloat, params.device());
  const std::string why = fused_cuda_unsupported_reason(model, policy);
  if (!why.empty()) throw InputError(why);
  precision_ = policy.mode;  // auto resolved
  const CudaMode mode = cuda_mode(precision_);
  mma_ = mode.mma;
  mma_mode_ = mode.mma_mode;
  if (policy.loss_scaling != (scaler != nullptr))
    throw std::logic_error(std::string("fused CUDA engine: ") + policy.name() +
                           (scaler ? " does not scale its loss, yet a GradScaler was given" : " needs its GradScaler"));
  if (max_rows < 1 || max_rows > INT_MAX)
    throw InputError("fused CUDA engine: max_rows must be in 1 .. 2^31-1 (got " + std::to_string(max_rows) + ")");
  device_ = params.device().has_index() ? params.device().index() : 0;
  const DeviceGuard device(device_);
  check(device.code(), "cudaSetDevice");
  Buffers& b = *buffers_;
  b.net = chain_of(model.architecture());
  check_seats(b.net, model, params);
  choose_tile_rows(tile_rows);
  b.max_tiles = static_cast<int>((max_rows + tile_rows_ - 1) / tile_rows_);
  // Poisoned: an element a kernel failed to write shows up as NaN in the first step's gradient.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  b.partials = at::full({b.max_tiles, mma_ ? b.net.padded_params : b.net.params}, nan, params.options());
  b.tile_sq_err = at::full({b.max_tiles}, nan, params.options().dtype(at::kDouble));
  if (mma_) {  // the padding must be zero (0 x NaN is NaN); convert_weights writes the rest
    const at::ScalarType stored = mma_mode_ == fused_cuda::kMmaTf32   ? at::kFloat
                                  : mma_mode_ == fused_cuda::kMmaBf16 ? at::kBFloat16
                                                                      : at::kHalf;
    b.weights_mma = at::zeros({b.net.padded_params}, params.options().dtype(stored));
  } else {
    b.weights_t = at::full_like(params, nan);
  }
  b.loss_sum = at::zeros({1}, params.options().dtype(at::kDouble));
  if (scaler_) {
    b.adam_steps = at::full({1}, opt.steps(), params.options().dtype(at::kLong));
    b.blocks_done = at::zeros({1}, params.options().dtype(at::kInt));
  }
  opt.set_external_path(mma_ ? "reduce_mma kernel (fused CUDA engine)" : "reduce_adam kernel (fused CUDA engine)");
  check(stream_.create(device_), "cudaStreamCreate");  // blocking: see the header
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");  // the buffers' fills
  refresh_weight_copy();
}

void FusedCudaEngine::choose_tile_rows(int tile_rows) {
  const Buffers& b = *buffers_;
  const CudaMode mode = cuda_mode(precision_);
  std::size_t max_bytes = 0;
  if (mma_)
    check(fused_cuda::max_mma_shared_bytes_per_block(device_, mma_mode_, &max_bytes), "the device's shared memory");
  else
    check(fused_cuda::max_shared_bytes_per_block(device_, &max_bytes), "the device's shared memory");
  if (tile_rows < 0) throw InputError("fused CUDA engine: tile_rows must be at least 1 (0: the engine's choice)");
  if (mma_ && tile_rows != 0 && tile_rows != fused_cuda::kMmaTileRows)
    throw InputError(std::string("fused CUDA engine: ") + resolve_precision(precision_, at::kFloat, c10::kCUDA).name() +
                     " runs tiles of " + std::to_string(fused_cuda::kMmaTileRows) + " rows (one MMA block), not " +
                     std::to_string(tile_rows));
  tile_rows_ = mma_ ? fused_cuda::kMmaTileRows : tile_rows > 0 ? tile_rows : kPreferredTileRows;
  while (!mma_ && block_bytes(b.net, mode, tile_rows_) > max_bytes && tile_rows_ > fused_cuda::kRowsPerThread)
    tile_rows_ /= 2;
  if (block_bytes(b.net, mode, tile_rows_) > max_bytes)
    throw InputError("fused CUDA engine: a tile of " + std::to_string(tile_rows_) + " rows needs " +
                     std::to_string(block_bytes(b.net, mode, tile_rows_)) + " bytes of shared memory; this GPU has " +
                     std::to_string(max_bytes));
  check(mma_ ? fused_cuda::prepare_mma_step(mma_mode_, max_bytes) : fused_cuda::prepare_tile_step(max_bytes),
        "opting in to shared memory");
}

void FusedCudaEngine::refresh_weight_copy() {
  Buffers& b = *buffers_;
  const float* params = opt_.flat_params().data_ptr<float>();
  if (mma_)
    check(fused_cuda::launch_convert_weights(b.net, mma_mode_, params, b.weights_mma.data_ptr(), stream_.get()),
          "convert_weights");
  else
    check(fused_cuda::launch_transpose_weights(b.net, params, b.weights_t.data_ptr<float>(), stream_.get()),
          "transpose_weights");
}

FusedCudaEngine::FusedCudaEngine(AutoEncoder& model, const TrainingSetup& s)
    : FusedCudaEngine(model, s.opt, s.options.loss, std::min(s.options.batch_size, s.train_rows), 0,
                      s.options.precision.mode, s.scaler) {
  const std::string why = fused_cuda_unsupported_reason(model, s.options.precision);
  if (!why.empty()) throw InputError(why);
  timer_ = &s.timer;
}

// The members do it: stream_ waits for its work and is destroyed first, then the buffers are freed.
FusedCudaEngine::~FusedCudaEngine() = default;

int FusedCudaEngine::StreamOwner::create(int device) {
  device_ = device;
  cudaStream_t stream = nullptr;
  const cudaError_t code = cudaStreamCreateWithFlags(&stream, cudaStreamDefault);
  if (code == cudaSuccess) stream_ = stream;
  return code;
}

FusedCudaEngine::StreamOwner::~StreamOwner() {
  if (!stream_) return;
  const DeviceGuard device(device_);
  cudaStreamSynchronize(static_cast<cudaStream_t>(stream_));  // nothing left in flight on the buffers
  cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
}

void FusedCudaEngine::zero_async(void* device_ptr, std::size_t bytes) {
  check(cudaMemsetAsync(device_ptr, 0, bytes, static_cast<cudaStream_t>(stream_.get())), "cudaMemsetAsync");
}

void FusedCudaEngine::check(int code, const char* what) const {
  if (code != 0)
    throw std::runtime_error(std::string("fused CUDA engine: ") + what + ": " + fused_cuda::error_text(code) +
                             " (hint: rerun under compute-sanitizer, docs/fused_cuda.md)");
}

int64_t FusedCudaEngine::shared_bytes_per_block() const {
  return static_cast<int64_t>(block_bytes(buffers_->net, cuda_mode(precision_), tile_rows_));
}

EngineStatus FusedCudaEngine::status() const {
  const Buffers& b = *buffers_;
  EngineStatus st;
  st.details["shards"] = b.max_tiles;  // tiles of a full batch, one block each
  const std::string name = resolve_precision(precision_, at::kFloat, c10::Device(c10::kCUDA, device_)).name();
  st.details["products"] = "cuda " + name + (mma_ ? " on tensor cores (" : " (") + std::to_string(launches_per_step()) +
                " launches per step: " + (mma_ ? "mma_step, " : "tile_step, ") + std::to_string(b.max_tiles) +
                " blocks of " + std::to_string(fused_cuda::kTileThreads) + " threads, " + std::to_string(tile_rows_) +
                " rows and " + std::to_string(shared_bytes_per_block() / 1024) + " KB shared each; " +
                (mma_ ? "reduce_mma" : "reduce_adam") + (scaler_ ? ", adam_scaled)" : ")");
  st.note = std::to_string(steps_) + " steps";
  return st;
}

void FusedCudaEngine::begin_epoch() {
  Buffers& b = *buffers_;
  const DeviceGuard device(device_);
  check(device.code(), "cudaSetDevice");
  // LibTorch's work so far (the epoch's shuffled rows, any write of the parameters) is done.
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  zero_async(b.loss_sum.data_ptr<double>(), sizeof(double));
  found_inf_dirty_ = false;
  if (scaler_)  // found_inf as GradScaler's unscale_ finds it: clear
    zero_async(scaler_->found_inf().data_ptr<float>(), sizeof(float));
  refresh_weight_copy();
}

void FusedCudaEngine::step(const at::Tensor& xb) {
  const DeviceGuard device(device_);
  check(device.code(), "cudaSetDevice");
  launch_step(xb, true);
  ++steps_;
  if (scaler_) scaler_->count_external_update();
}

void FusedCudaEngine::synchronize() {
  const DeviceGuard device(device_);
  check(device.code(), "cudaSetDevice");
  check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_.get())), "cudaStreamSynchronize");
}

double FusedCudaEngine::epoch_loss_sum() {
  const DeviceGuard device(device_);
  check(device.code(), "cudaSetDevice");
  synchronize();
  double sum = 0;
  check(cudaMemcpy(&sum, buffers_->loss_sum.data_ptr<double>(), sizeof sum, cudaMemcpyDeviceToHost), "cudaMemcpy");
  if (scaler_) {  // Adam's steps as the device counted them (a skipped step is not one)
    int64_t adam_steps = 0;
    check(cudaMemcpy(&adam_steps, buffers_->adam_steps.data_ptr<int64_t>(), sizeof adam_steps, cudaMemcpyDeviceToHost),
          "cudaMemcpy");
    opt_.set_external_steps(adam_steps);
  }
  return sum;
}

double FusedCudaEngine::forward_backward(const at::Tensor& xb) {
  const DeviceGuard device(device_);
  check(device.code(), "cudaSetDevice");
  zero_async(buffers_->loss_sum.data_ptr<double>(), sizeof(double));
  if (scaler_)
    zero_async(scaler_->found_inf().data_ptr<float>(), sizeof(float));
  launch_step(xb, false);
  found_inf_dirty_ = scaler_ != nullptr;  // only adam_scaled clears it: the next step must
  return epoch_loss_sum();
}

at::Tensor FusedCudaEngine::encode(const at::Tensor&) {
  throw std::logic_error("fused CUDA engine: training only; compress and decompress run the reference engine");
}

at::Tensor FusedCudaEngine::decode(const at::Tensor&) {
  throw std::logic_error("fused CUDA engine: training only; compress and decompress run the reference engine");
}

void FusedCudaEngine::launch_step(const at::Tensor& xb, bool adam) {
  Buffers& b = *buffers_;
  const int64_t n = xb.dim() == 2 ? xb.size(0) : 0;
  if (!xb.is_cuda() || xb.scalar_type() != at::kFloat || !xb.is_contiguous() || n < 1 || n > max_rows_ ||
      xb.size(1) != b.net.n_features)
    throw std::logic_error("fused CUDA engine: a batch of " + std::to_string(n) + " rows does not fit the engine");
  if ((xb.device().has_index() ? xb.device().index() : 0) != device_)
    throw std::logic_error("fused CUDA engine: the batch is on " + xb.device().str() + ", the engine on cuda:" +
                           std::to_string(device_));
  const double features = b.net.n_features;
  const bool mean = loss_ == LossKind::kMseMean;
  if (found_inf_dirty_) {  // forward_backward left the flag as it found the gradient
    zero_async(scaler_->found_inf().data_ptr<float>(), sizeof(float));
    found_inf_dirty_ = false;
  }
  // mse_loss's norm (2, or 2/numel for the mean) and the gradient of the division by n_features.
  const bool profiled = timer_ && timer_->enabled();
  {
    std::optional<PhaseTimer::Scope> s;
    if (profiled) s.emplace(*timer_, Phase::kBackward);  // forward, loss and backward: one kernel
    launch_tiles(xb, mean ? 2.0 / (static_cast<double>(n) * features) : 2.0, mean ? 1.0 : 1.0 / features);
  }
  std::optional<PhaseTimer::Scope> s;
  if (profiled) s.emplace(*timer_, Phase::kOptimizer);
  // With loss scaling reduce_mma only unscales and checks; adam_scaled then steps (or skips).
  const fused_cuda::ReduceAdamArgs r =
      reduce_args(mean ? 1.0 / (static_cast<double>(n) * features) : 1.0 / features, adam && !scaler_);
  const int tiles = static_cast<int>((n + tile_rows_ - 1) / tile_rows_);
  if (!mma_) {
    check(fused_cuda::launch_reduce_adam(b.net, tiles, r, stream_.get()), "reduce_adam");
    return;
  }
  check(fused_cuda::launch_reduce_mma(b.net, mma_mode_, tiles, r, stream_.get()), "reduce_mma");
  if (scaler_ && adam) check(fused_cuda::launch_adam_scaled(b.net, mma_mode_, scaled_adam_args(r), stream_.get()), "adam_scaled");
}

void FusedCudaEngine::launch_tiles(const at::Tensor& xb, double norm, double grad_output) {
  Buffers& b = *buffers_;
  if (mma_) {
    fused_cuda::MmaStepArgs t;
    t.x = xb.data_ptr<float>();
    t.rows = static_cast<int>(xb.size(0));
    t.weights_mma = b.weights_mma.data_ptr();
    t.partials = b.partials.data_ptr<float>();
    t.tile_sq_err = b.tile_sq_err.data_ptr<double>();
    t.norm = static_cast<float>(norm);
    t.grad_output = static_cast<float>(grad_output);
    t.scale = scaler_ ? scaler_->scale_tensor().data_ptr<float>() : nullptr;
    check(fused_cuda::launch_mma_step(b.net, mma_mode_, t, stream_.get()), "mma_step");
    return;
  }
  fused_cuda::TileStepArgs t;
  t.x = xb.data_ptr<float>();
  t.rows = static_cast<int>(xb.size(0));
  t.params = opt_.flat_params().data_ptr<float>();
  t.weights_t = b.weights_t.data_ptr<float>();
  t.partials = b.partials.data_ptr<float>();
  t.tile_sq_err = b.tile_sq_err.data_ptr<double>();
  t.norm = static_cast<float>(norm);
  t.grad_output = static_cast<float>(grad_output);
  check(fused_cuda::launch_tile_step(b.net, tile_rows_, t, stream_.get()), "tile_step");
}

fused_cuda::ReduceAdamArgs FusedCudaEngine::reduce_args(double batch_scale, bool adam) {
  Buffers& b = *buffers_;
  fused_cuda::ReduceAdamArgs r;
  r.partials = b.partials.data_ptr<float>();
  r.tile_sq_err = b.tile_sq_err.data_ptr<double>();
  r.grads = opt_.flat_grads().data_ptr<float>();
  r.params = opt_.flat_params().data_ptr<float>();
  r.exp_avg = opt_.flat_exp_avg().data_ptr<float>();
  r.exp_avg_sq = opt_.flat_exp_avg_sq().data_ptr<float>();
  if (mma_)
    r.weights_mma = b.weights_mma.data_ptr();
  else
    r.weights_t = b.weights_t.data_ptr<float>();
  if (scaler_) {
    r.scale = scaler_->scale_tensor().data_ptr<float>();
    r.found_inf = scaler_->found_inf().data_ptr<float>();
  }
  r.loss_sum = b.loss_sum.data_ptr<double>();
  r.batch_scale = batch_scale;
  r.adam = adam;
  // dense_loops.inc's adam: the bias corrections in double, then each value rounded to float.
  const double b1 = opt_.beta1(), b2 = opt_.beta2();
  r.beta1 = static_cast<float>(b1);
  r.one_minus_beta1 = static_cast<float>(1 - b1);
  r.beta2 = static_cast<float>(b2);
  r.one_minus_beta2 = static_cast<float>(1 - b2);
  r.eps = static_cast<float>(opt_.eps());
  if (!adam) return r;
  const auto step = static_cast<double>(opt_.count_external_step());
  const float bias_correction1 = static_cast<float>(1 - std::pow(b1, step));
  r.bias_correction2_sqrt = static_cast<float>(std::sqrt(1 - std::pow(b2, step)));
  r.neg_step = -static_cast<float>(opt_.lr()) / bias_correction1;
  return r;
}

// adam_scaled's arguments: Adam's (the bias corrections from the device's step count) and the scaler's.
fused_cuda::ScaledAdamArgs FusedCudaEngine::scaled_adam_args(const fused_cuda::ReduceAdamArgs& r) {
  Buffers& b = *buffers_;
  fused_cuda::ScaledAdamArgs a;
  a.adam = r;
  a.beta1 = opt_.beta1();
  a.beta2 = opt_.beta2();
  a.lr = static_cast<float>(opt_.lr());
  a.scale = scaler_->scale_tensor().data_ptr<float>();
  a.growth_tracker = scaler_->growth_tracker_tensor().data_ptr<int>();
  a.skipped = scaler_->skipped_tensor().data_ptr<float>();
  a.adam_steps = b.adam_steps.data_ptr<int64_t>();
  a.blocks_done = reinterpret_cast<unsigned*>(b.blocks_done.data_ptr<int>());
  const GradScalerOptions& o = scaler_->options();
  a.growth_factor = o.growth_factor;
  a.backoff_factor = o.backoff_factor;
  a.growth_interval = static_cast<int>(std::min<int64_t>(o.growth_interval, INT_MAX));
  return a;
}

}  // namespace balerbench
