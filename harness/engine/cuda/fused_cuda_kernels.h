// fused_cuda_kernels.h: the fused CUDA engine's kernels behind plain C++ (raw device pointers and
// sizes; no CUDA header, no LibTorch): fused_cuda_kernels.cu implements them with nothing but the
// CUDA toolkit, and the engine (fused_cuda_engine.cpp) launches them.
//
// A training step of a chain of Linear layers (Baler's dense autoencoders), fp32, is two launches:
//   tile_step     one block per tile of kTileRows rows of the batch: the tile's input and every
//                 layer's activation stay in shared memory; forward (bias and activation fused),
//                 the loss and its gradient, backward through every layer; each block writes its
//                 tile's weight and bias gradients to its own row of a [tiles x params] buffer and
//                 its tile's sum of squared errors to its own slot (no atomics: the same bits every
//                 run).
//   reduce_adam   one thread per parameter: the tiles' gradients summed in tile order into the flat
//                 gradient buffer, then Adam (torch::optim::Adam's arithmetic, no weight decay) on
//                 the flat parameters, writing the weights' transposed copy the next forward reads;
//                 block 0 also adds the batch loss to the epoch's loss sum (float64, on the device).
// A third kernel, transpose_weights, fills the transposed copy from the parameters (once per epoch).
//
// The tensor-core modes (tf32, bf16, fp16: fused_cuda_mma.cu) keep that shape with warp MMA (wmma,
// float32 accumulators) for the products: tiles of kMmaTileRows rows, every width padded to whole
// 16-wide blocks (zeros), activations and gradients stored in the mode's type as autocast stores
// them, float32 master weights and Adam. Their weights are read from a padded copy in the mode's
// type (MmaMode) that reduce_mma writes after Adam; the tiles' gradients use the padded layout too.
// Loss scaling (amp_fp16) adds a third launch: reduce_mma unscales and flags a non-finite gradient,
// then adam_scaled skips or takes the step and updates the scale as GradScaler.update does.
//
// Layouts (row-major, float32): a batch x (rows, n_features); layer i's weight (out_i, in_i) at
// weight_offset[i] of the flat parameters and its bias (out_i) at bias_offset[i], as FlatAdam seats
// the model's parameters; the transposed copy (in_i, out_i) at the same weight_offset[i] of a second
// flat buffer of the same size.
#pragma once

#include <cstddef>
#include <cstdint>

namespace balerbench {
namespace fused_cuda {

constexpr int kMaxLayers = 16;
constexpr int kTileThreads = 256;   // threads per tile_step block
constexpr int kRowsPerThread = 4;   // rows of one output column a tile_step thread accumulates at once
constexpr int kAdamThreads = 256;   // threads per reduce_adam and transpose_weights block

enum ActivationCode : int { kActNone = 0, kActLeakyRelu = 1, kActRelu = 2 };

// The tensor-core modes: what the products' inputs, the activations and the gradients are stored as.
enum MmaMode : int { kMmaTf32 = 0, kMmaBf16 = 1, kMmaFp16 = 2 };
constexpr int kMmaTileRows = 16;  // one 16-row MMA block per tile
constexpr int kMmaBlock = 16;     // widths padded to whole blocks of 16
constexpr int mma_padded(int width) { return (width + kMmaBlock - 1) / kMmaBlock * kMmaBlock; }

// The chain, as the kernels read it (passed by value as a kernel argument: about 1 KB, of 4 KB).
struct LayerTable {
  int layers = 0;
  int n_features = 0;  // the first layer's in and the last layer's out
  int widest = 0;      // the widest layer input or output
  int64_t params = 0;  // elements of the flat parameter buffer
  int in[kMaxLayers] = {};
  int out[kMaxLayers] = {};
  int act[kMaxLayers] = {};  // ActivationCode after layer i
  int64_t weight_offset[kMaxLayers] = {};
  int64_t bias_offset[kMaxLayers] = {};
  // Floats per tile row before activation i in shared memory: activation 0 is the input tile,
  // activation i + 1 layer i's output. act_row_offset[layers + 1] is the floats of all of them.
  int act_row_offset[kMaxLayers + 2] = {};
  // The tensor-core modes' padded layout (fill_mma_layout): widths padded to kMmaBlock; each layer's
  // weight (pad_out x pad_in, row-major) at pad_weight_offset[i] and its bias (pad_out) at
  // pad_bias_offset[i] of a buffer of padded_params elements; activation i at
  // kMmaTileRows * pad_act_offset[i] elements of the tile's activations.
  int pad_in[kMaxLayers] = {};
  int pad_out[kMaxLayers] = {};
  int pad_widest = 0;
  int64_t pad_weight_offset[kMaxLayers] = {};
  int64_t pad_bias_offset[kMaxLayers] = {};
  int64_t padded_params = 0;
  int pad_act_offset[kMaxLayers + 2] = {};
};

// Fills `net`'s padded layout from its widths (in, out, layers, n_features).
inline void fill_mma_layout(LayerTable& net) {
  int64_t offset = 0;
  net.pad_widest = mma_padded(net.n_features);
  net.pad_act_offset[0] = 0;
  net.pad_act_offset[1] = mma_padded(net.n_features);
  for (int i = 0; i < net.layers && i < kMaxLayers; ++i) {
    net.pad_in[i] = mma_padded(net.in[i]);
    net.pad_out[i] = mma_padded(net.out[i]);
    net.pad_widest = net.pad_widest > net.pad_in[i] ? net.pad_widest : net.pad_in[i];
    net.pad_widest = net.pad_widest > net.pad_out[i] ? net.pad_widest : net.pad_out[i];
    net.pad_weight_offset[i] = offset;
    offset += static_cast<int64_t>(net.pad_in[i]) * net.pad_out[i];
    net.pad_bias_offset[i] = offset;
    offset += net.pad_out[i];
    net.pad_act_offset[i + 2] = net.pad_act_offset[i + 1] + net.pad_out[i];
  }
  net.padded_params = offset;
}

// What tile_step reads and writes; every pointer on the device.
struct TileStepArgs {
  const float* x = nullptr;        // the batch, (rows, n_features)
  int rows = 0;                    // 1 <= rows <= tiles * tile_rows of the buffers below
  const float* params = nullptr;   // flat parameters (weights, biases)
  const float* weights_t = nullptr;  // flat transposed weights
  float* partials = nullptr;       // (tiles, params): each tile's gradient
  double* tile_sq_err = nullptr;   // (tiles): each tile's sum of squared differences
  float norm = 2.0f;               // mse_loss's backward: g = (norm * (x_hat - x)) * grad_output
  float grad_output = 1.0f;
};

// What reduce_adam reads and writes; every pointer on the device.
struct ReduceAdamArgs {
  const float* partials = nullptr;   // (tiles, params)
  const double* tile_sq_err = nullptr;  // (tiles)
  float* grads = nullptr;            // (params): the batch's gradient, written whole
  float* params = nullptr;           // (params): Adam updates them in place
  float* exp_avg = nullptr;          // Adam's moments, (params) each
  float* exp_avg_sq = nullptr;
  float* weights_t = nullptr;        // the transposed copy of the updated weights
  double* loss_sum = nullptr;        // (1): += the batch loss, sum of squares * batch_scale
  double batch_scale = 1.0;          // 1 / n_features (baler_sum) or 1 / (rows * n_features) (mse_mean)
  bool adam = true;                  // false: only the gradient and the loss (tests)
  // Adam's step as the host computed it for this step count (torch::optim::Adam, dense_loops.inc):
  // p += neg_step * m / (sqrt(v) / bias_correction2_sqrt + eps), neg_step = -lr / bias_correction1.
  // Each as dense_loops.inc rounds it to float: beta1, 1 - beta1, ... from the double hyperparameters.
  float beta1 = 0.9f, one_minus_beta1 = 0.1f, beta2 = 0.999f, one_minus_beta2 = 0.001f, eps = 1e-8f;
  float neg_step = 0.0f, bias_correction2_sqrt = 1.0f;
  // The tensor-core modes (reduce_mma): `partials` in the padded layout, and instead of weights_t the
  // padded weights and biases in the mode's type (padded_params elements; the padding stays zero).
  void* weights_mma = nullptr;
  // Loss scaling (amp_fp16): the gradient times 1 / *scale, and *found_inf = 1 where it is not
  // finite; Adam is then adam_scaled's (adam false here). Null: no scaling.
  const float* scale = nullptr;
  float* found_inf = nullptr;
};

// The tensor-core modes' tile step: as TileStepArgs, with the padded weights and biases in the mode's
// type, and the loss scale (null: 1) that the loss's gradient is multiplied by.
struct MmaStepArgs {
  const float* x = nullptr;
  int rows = 0;
  const void* weights_mma = nullptr;
  float* partials = nullptr;       // (tiles, padded_params)
  double* tile_sq_err = nullptr;
  float norm = 2.0f;
  float grad_output = 1.0f;
  const float* scale = nullptr;
};

// amp_fp16's Adam after reduce_mma: skipped when *found_inf, else Adam at step *adam_steps + 1 (the
// bias corrections from the device's count, so that a skipped step is not counted); the block that
// finishes last then does GradScaler.update's bookkeeping (ATen's _amp_update_scale_: back off on
// inf, grow after growth_interval clean steps), counts the step or the skip, and clears found_inf.
struct ScaledAdamArgs {
  ReduceAdamArgs adam;              // grads, params, moments, weights_mma, found_inf, beta1 .. eps
  double beta1 = 0.9, beta2 = 0.999;  // for the bias corrections, in double as the host computes them
  float lr = 1e-3f;
  float* scale = nullptr;           // GradScaler's scale, growth tracker and skipped count
  int* growth_tracker = nullptr;
  float* skipped = nullptr;
  int64_t* adam_steps = nullptr;    // steps taken so far (skipped ones not counted)
  unsigned* blocks_done = nullptr;  // zero between launches (the last block resets it)
  double growth_factor = 2.0, backoff_factor = 0.5;
  int growth_interval = 2000;
};

// Bytes of dynamic shared memory one tile_step block of `tile_rows` rows uses.
std::size_t tile_shared_bytes(const LayerTable& net, int tile_rows);

// Each returns a cudaError_t's value (0: success); error_text names it. Launches are asynchronous on
// `stream` (a cudaStream_t).
// Opt tile_step in to `bytes` of dynamic shared memory: the device's whole opt-in maximum
// (max_shared_bytes_per_block), since the attribute holds for the kernel process-wide, and a second
// engine with a smaller model must not lower it under a larger one's.
int prepare_tile_step(std::size_t bytes);
int max_shared_bytes_per_block(int device, std::size_t* bytes);  // the device's opt-in maximum
int launch_transpose_weights(const LayerTable& net, const float* params, float* weights_t, void* stream);
int launch_tile_step(const LayerTable& net, int tile_rows, const TileStepArgs& args, void* stream);
int launch_reduce_adam(const LayerTable& net, int tiles, const ReduceAdamArgs& args, void* stream);
const char* error_text(int code);

// The tensor-core modes (fused_cuda_mma.cu); weights_mma holds padded_params elements of the mode's
// type (4 bytes for tf32, 2 for bf16 and fp16).
std::size_t mma_element_bytes(MmaMode mode);
std::size_t mma_shared_bytes(const LayerTable& net, MmaMode mode);
int prepare_mma_step(MmaMode mode, std::size_t bytes);  // as prepare_tile_step, for mma_step
int max_mma_shared_bytes_per_block(int device, MmaMode mode, std::size_t* bytes);
int launch_convert_weights(const LayerTable& net, MmaMode mode, const float* params, void* weights_mma, void* stream);
int launch_mma_step(const LayerTable& net, MmaMode mode, const MmaStepArgs& args, void* stream);
int launch_reduce_mma(const LayerTable& net, MmaMode mode, int tiles, const ReduceAdamArgs& args, void* stream);
int launch_adam_scaled(const LayerTable& net, MmaMode mode, const ScaledAdamArgs& args, void* stream);

}  // namespace fused_cuda
}  // namespace balerbench
