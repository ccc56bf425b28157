// fused_cuda_engine.h: the fused engine on a CUDA GPU (issue 38): a training step of Baler's dense
// models in two kernel launches (fused_cuda_kernels.h: tile_step, reduce_adam), fp32, no autograd.
//
// `engine: fused` keeps its name on CUDA: the registry resolves the name by device, and this engine's
// own entry (fused_cuda_entry.cpp) serves CUDA devices. A build without this engine (BALERBENCH_CUDA_ENGINE off: CMake found no CUDA
// compiler, or LibTorch has no CUDA) compiles fused_cuda_absent.cpp instead, whose functions below
// say so. The engine's numerics are those of the CPU fused engine and of LibTorch's autograd (the
// same losses, the same Adam, the same parameter layout: FlatAdam's flat buffers), up to the
// summation order inside the products. See docs/fused_cuda.md.
//
// Streams: the engine launches on a stream of its own, created blocking (cudaStreamDefault), so that
// it orders itself with LibTorch's work on the legacy default stream both ways; and at the
// boundaries it waits explicitly: begin_epoch() waits for the whole device (the epoch's shuffled rows
// and the parameters as LibTorch left them), epoch_loss_sum() and synchronize() for its stream.
// Device: every public member that calls the CUDA runtime sets the engine's device for its own
// duration and restores the caller's current device on return (or on a throw).
// Inference (compress, decompress) on CUDA is not fused: the entry makes the reference engine's.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <memory>
#include <string>

#include "harness/engine/cuda/fused_cuda_kernels.h"
#include "harness/engine/engine.h"
#include "harness/engine/loss.h"
#include "harness/engine/precision.h"
#include "models/autoencoder.h"

namespace balerbench {

class FlatAdam;
class GradScaler;

// True when this build has the CUDA fused engine (fused_cuda_engine.cpp), false when it has
// fused_cuda_absent.cpp.
bool fused_cuda_built();

// Why the fused engine cannot train `model` at `policy` on the CUDA device `device`; "" when it can.
// Without the engine built: "built without the CUDA fused engine (BALERBENCH_CUDA_ENGINE)".
std::string fused_cuda_unsupported_reason(const AutoEncoder& model, const PrecisionPolicy& policy);

// What this binary's fused engine does on CUDA, for `balerbench system`: "built for sm_80 and sm_90:
// fp32, tf32, ... (auto: ...)", or "not built (...)".
std::string fused_cuda_summary();

// Why `auto` passes the CUDA fused engine by: "fused on CUDA: not yet verified on a GPU" until a GPU
// run has verified it (docs/fused_cuda.md lists the checks; fused_cuda_engine.cpp, kVerifiedOnGpu).
std::string fused_cuda_auto_skip();

// The engine for fit (engine_registry.h's make_training); std::logic_error without the engine built.
std::unique_ptr<Engine> make_fused_cuda_training(AutoEncoder& model, const TrainingSetup& setup);

class FusedCudaEngine final : public Engine {
 public:
  // `model`'s parameters seated in `opt`'s flat buffers on a CUDA device, float32; `max_rows` the
  // largest batch a step will see; `tile_rows` the rows of one tile_step block in fp32 (0: the
  // engine's choice, kPreferredTileRows in fused_cuda_engine.cpp; tests try others; the tensor-core
  // modes take 0 or fused_cuda::kMmaTileRows); `precision` fp32, tf32, amp_bf16, amp_fp16_noscale or
  // amp_fp16, which needs `scaler` (its loss scaling runs in the engine's kernels, on the scaler's
  // state). InputError with fused_cuda_unsupported_reason when it cannot run.
  FusedCudaEngine(AutoEncoder& model, FlatAdam& opt, LossKind loss, int64_t max_rows, int tile_rows = 0,
                  Precision precision = Precision::kFp32, GradScaler* scaler = nullptr);
  // For fit: as above, with the timer it books to (tile_step as backward, reduce_adam as optimizer).
  FusedCudaEngine(AutoEncoder& model, const TrainingSetup& setup);
  ~FusedCudaEngine() override;
  FusedCudaEngine(const FusedCudaEngine&) = delete;
  FusedCudaEngine& operator=(const FusedCudaEngine&) = delete;

  EngineKind kind() const override { return EngineKind::kFused; }
  EngineStatus status() const override;
  void begin_epoch() override;
  void step(const at::Tensor& xb) override;  // tile_step, reduce_adam (with Adam); no wait
  double epoch_loss_sum() override;          // waits for the stream; reads 8 bytes
  // Training only: std::logic_error (compress and decompress run the reference engine on CUDA).
  at::Tensor encode(const at::Tensor& x) override;
  at::Tensor decode(const at::Tensor& z) override;

  // The batch's gradient into the optimizer's flat gradient buffer (overwritten whole), without Adam,
  // and its loss as batch_loss() defines it; waits for the device (tests). With loss scaling the
  // gradient is unscaled and the scaler's found_inf says whether it was finite (cleared first; the
  // next step clears it again).
  double forward_backward(const at::Tensor& xb);
  void synchronize();  // waits for the engine's stream
  int tile_rows() const { return tile_rows_; }
  int64_t shared_bytes_per_block() const;
  bool tensor_cores() const { return mma_; }
  int launches_per_step() const { return scaler_ ? 3 : 2; }

 private:
  struct Buffers;
  // tile_step and reduce_adam on the batch; with `adam`, counts an optimizer step and applies it.
  void launch_step(const at::Tensor& xb, bool adam);
  void launch_tiles(const at::Tensor& xb, double norm, double grad_output);
  fused_cuda::ReduceAdamArgs reduce_args(double batch_scale, bool adam);
  fused_cuda::ScaledAdamArgs scaled_adam_args(const fused_cuda::ReduceAdamArgs& r);
  void refresh_weight_copy();  // transpose_weights (fp32) or convert_weights (tensor cores)
  void choose_tile_rows(int tile_rows);
  void check(int code, const char* what) const;
  void zero_async(void* device_ptr, std::size_t bytes);  // a memset on the engine's stream

  // The engine's stream (a cudaStream_t), destroyed with the engine or when its constructor throws
  // after creating it: waits for the stream, then destroys it, on the engine's device.
  class StreamOwner {
   public:
    StreamOwner() = default;
    ~StreamOwner();
    StreamOwner(const StreamOwner&) = delete;
    StreamOwner& operator=(const StreamOwner&) = delete;
    int create(int device);  // a cudaError_t
    void* get() const { return stream_; }

   private:
    void* stream_ = nullptr;
    int device_ = 0;
  };

  FlatAdam& opt_;
  LossKind loss_;
  int64_t max_rows_;
  int device_ = 0;
  int tile_rows_ = 0;
  PhaseTimer* timer_ = nullptr;
  Precision precision_ = Precision::kFp32;
  bool mma_ = false;  // tensor cores: fused_cuda_mma.cu
  fused_cuda::MmaMode mma_mode_ = fused_cuda::kMmaTf32;
  GradScaler* scaler_ = nullptr;
  bool found_inf_dirty_ = false;  // forward_backward left found_inf set or not: the next step clears it
  std::unique_ptr<Buffers> buffers_;
  StreamOwner stream_;  // after buffers_: destroyed (after its wait) before the buffers are freed
  int64_t steps_ = 0;
};

}  // namespace balerbench
