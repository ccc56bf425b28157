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

// The chain, as the kernels read it (passed by value as a kernel argument: under 1 KB).
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
};

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
};

// Bytes of dynamic shared memory one tile_step block of `tile_rows` rows uses.
std::size_t tile_shared_bytes(const LayerTable& net, int tile_rows);

// Each returns a cudaError_t's value (0: success); error_text names it. Launches are asynchronous on
// `stream` (a cudaStream_t).
int prepare_tile_step(const LayerTable& net, int tile_rows);  // opts in to the shared memory it needs
int max_shared_bytes_per_block(int device, std::size_t* bytes);  // the device's opt-in maximum
int launch_transpose_weights(const LayerTable& net, const float* params, float* weights_t, void* stream);
int launch_tile_step(const LayerTable& net, int tile_rows, const TileStepArgs& args, void* stream);
int launch_reduce_adam(const LayerTable& net, int tiles, const ReduceAdamArgs& args, void* stream);
const char* error_text(int code);

}  // namespace fused_cuda
}  // namespace balerbench
