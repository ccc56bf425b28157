// fused_engine.cpp: see fused_engine.h.
#include "harness/engine/fused_engine.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <utility>

#include "common/error.h"
#include "harness/engine/dense_products.h"
#include "harness/engine/engine_registry.h"
#include "harness/engine/flat_adam.h"
#include "harness/engine/fused_kernels.h"
#include "harness/engine/runtime.h"
#include "harness/engine/shard_pool.h"

namespace balerbench {
using namespace fused_kernels;

std::string fused_unsupported_reason(const AutoEncoder& model, at::ScalarType param_dtype, at::ScalarType compute_dtype,
                                     c10::Device device) {
  const Architecture& arch = model.architecture();
  for (const auto& l : arch.layers) {
    if (l.kind != "linear" || !activation_of(l.after))
      return arch.model_name + " has " + (l.kind != "linear" ? l.kind : l.after) + " (" + l.name +
             "), and the fused engine trains chains of Linear layers with LeakyReLU(0.01), ReLU or nothing between "
             "them";
  }
  if (!device.is_cpu()) return "the fused engine runs on the CPU so far, not on " + device.str();
  const bool full = compute_dtype == param_dtype && (param_dtype == at::kDouble || param_dtype == at::kFloat);
  const bool bf16 = compute_dtype == at::kBFloat16 && param_dtype == at::kFloat;
  if (!full && !bf16) return "the fused engine runs fp64, fp32 and amp_bf16";
  return "";
}


namespace {
enum Part { kForwardEncoder = 1, kForwardDecoder = 2, kLoss = 4, kBackward = 8 };
}  // namespace

struct FusedDenseEngine::Worker {
  int64_t max_rows = 0;
  const DenseProducts* products = nullptr;  // Eigen's kernels, or null for at::mm_out (OpenBLAS)
  const DenseLoops* loops = nullptr;        // the element-wise loops, at the products' level
  std::vector<at::Tensor> acts;  // acts[i]: layer i's output (after its activation), (max_rows, out_i)
  at::Tensor grad_a, grad_b;     // ping-pong gradient buffers, max_rows x widest, flat
  at::Tensor grads;              // worker 0: the optimizer's flat gradients; others: their own
  std::vector<at::Tensor> weight_grads;  // views into `grads`, (out, in)
  double squared_error = 0;
  int64_t rows = 0;

  at::Tensor part;  // this step's rows
  // amp_bf16: bfloat16 activations, input rows, gradients and weight gradients; column sums.
  std::vector<at::Tensor> acts_bf16, weight_grads_bf16;
  at::Tensor part_bf16, grad_bf16_a, grad_bf16_b;
  std::vector<float> sums;
  void forward_bf16(const std::vector<Layer>& layers, std::size_t first, std::size_t last);
  void loss_bf16(const std::vector<Layer>& layers, float norm, float grad_output);
  void backward_bf16(const std::vector<Layer>& layers);
  // A training step in three parts (run back to back, or phase by phase when profiled): layers
  // [first, last) forward; the loss and its gradient; the backward pass.
  template <typename T>
  void forward_layers(const std::vector<Layer>& layers, std::size_t first, std::size_t last);
  template <typename T>
  void loss(const std::vector<Layer>& layers, T norm, T grad_output);
  template <typename T>
  void backward(const std::vector<Layer>& layers);
  // The parts of a step (Part flags) in order, in T.
  template <typename T>
  void run(const std::vector<Layer>& layers, int parts, std::size_t encoder, T norm, T grad_output);
  // Layers [first, last) from input `a`: each output in acts, or the last one in `out` when given.
  template <typename T>
  void chain(const std::vector<Layer>& layers, at::Tensor a, std::size_t first, std::size_t last,
             const at::Tensor* out);
  // The same on Eigen's products, on raw pointers: a step makes no tensor (no view, no dispatch)
  // once the batch is shared out. `a`: m rows; `out`: null for acts.
  template <typename T>
  void chain_eigen(const std::vector<Layer>& layers, const T* a, int64_t m, std::size_t first, std::size_t last,
                   T* out);
  template <typename T>
  void backward_eigen(const std::vector<Layer>& layers);
  // Layers [first, last) on x, the last one's output written to `out` (same rows as x).
  void forward(const std::vector<Layer>& layers, const at::Tensor& x, std::size_t first, std::size_t last,
               at::Tensor& out);
};

namespace {

at::Tensor rows_of(const at::Tensor& buffer, int64_t rows) { return buffer.narrow(0, 0, rows); }

at::Tensor as_matrix(const at::Tensor& flat, int64_t rows, int64_t cols) {
  return flat.narrow(0, 0, rows * cols).view({rows, cols});
}

template <typename T>
void activate_tensor(at::Tensor& t, Activation a) {
  activate(t.data_ptr<T>(), t.numel(), a);
}

}  // namespace

template <typename T>
void FusedDenseEngine::Worker::chain(const std::vector<Layer>& layers, at::Tensor a, std::size_t first, std::size_t last,
                                     const at::Tensor* out) {
  const int64_t m = a.size(0);
  if (products && a.is_contiguous() && (!out || out->is_contiguous())) {
    chain_eigen<T>(layers, a.data_ptr<T>(), m, first, last, out ? out->data_ptr<T>() : nullptr);
    return;
  }
  for (std::size_t i = first; i < last; ++i) {
    at::Tensor y = out && i + 1 == last ? *out : rows_of(acts[i], m);
    if (y.is_contiguous() && products && a.is_contiguous()) {
      // (m x out) = (m x in) . (out x in)^T
      products->of<T>().forward(a.data_ptr<T>(), layers[i].weight.data_ptr<T>(), y.data_ptr<T>(), m, layers[i].out,
                                layers[i].in);
      loops->of<T>().bias_activate(y.data_ptr<T>(), layers[i].bias.data_ptr<T>(), m, layers[i].out, layers[i].after);
    } else if (y.is_contiguous()) {
      at::mm_out(y, a, layers[i].weight.t());
      loops->of<T>().bias_activate(y.data_ptr<T>(), layers[i].bias.data_ptr<T>(), m, layers[i].out, layers[i].after);
    } else {
      at::addmm_out(y, layers[i].bias, a, layers[i].weight.t());
      activate_tensor<T>(y, layers[i].after);
    }
    a = y;
  }
}

template <typename T>
void FusedDenseEngine::Worker::chain_eigen(const std::vector<Layer>& layers, const T* a, int64_t m, std::size_t first,
                                           std::size_t last, T* out) {
  const DenseProductKernels<T>& k = products->of<T>();
  const DenseLoopKernels<T>& e = loops->of<T>();
  for (std::size_t i = first; i < last; ++i) {
    const Layer& L = layers[i];
    T* y = out && i + 1 == last ? out : acts[i].data_ptr<T>();
    k.forward(a, L.weight.data_ptr<T>(), y, m, L.out, L.in);  // (m x out) = (m x in) . (out x in)^T
    e.bias_activate(y, L.bias.data_ptr<T>(), m, L.out, L.after);
    a = y;
  }
}

void FusedDenseEngine::Worker::forward(const std::vector<Layer>& layers, const at::Tensor& x, std::size_t first,
                                       std::size_t last, at::Tensor& out) {
  if (x.scalar_type() == at::kDouble)
    chain<double>(layers, x, first, last, &out);
  else
    chain<float>(layers, x, first, last, &out);
}

template <typename T>
void FusedDenseEngine::Worker::forward_layers(const std::vector<Layer>& layers, std::size_t first, std::size_t last) {
  if (products)  // part is contiguous (split_batch), acts too
    chain_eigen<T>(layers, first == 0 ? part.data_ptr<T>() : acts[first - 1].data_ptr<T>(), rows, first, last, nullptr);
  else
    chain<T>(layers, first == 0 ? part : rows_of(acts[first - 1], rows), first, last, nullptr);
}

template <typename T>
void FusedDenseEngine::Worker::run(const std::vector<Layer>& layers, int parts, std::size_t encoder, T norm,
                                   T grad_output) {
  if (parts & kForwardEncoder) forward_layers<T>(layers, 0, encoder);
  if (parts & kForwardDecoder) forward_layers<T>(layers, encoder, layers.size());
  if (parts & kLoss) loss<T>(layers, norm, grad_output);
  if (parts & kBackward) backward<T>(layers);
}

template <typename T>
void FusedDenseEngine::Worker::loss(const std::vector<Layer>& layers, T norm, T grad_output) {
  // The loss's gradient, with the output layer's bias gradient on the way.
  // acts.back() (max_rows x out) holds x_hat in its first `rows` rows.
  const Layer& out = layers.back();
  squared_error = loops->of<T>().loss_backward(acts.back().data_ptr<T>(), part.data_ptr<T>(), grad_a.data_ptr<T>(), rows,
                                               out.out, norm, grad_output, grads.data_ptr<T>() + out.bias_offset);
}

template <typename T>
void FusedDenseEngine::Worker::backward(const std::vector<Layer>& layers) {
  if (products) {
    backward_eigen<T>(layers);
    return;
  }
  // Layer by layer: dW = g^T a_in; g_in = (g W) * activation'(a_in), with db fused.
  const int64_t m = rows;
  T* grads_base = grads.data_ptr<T>();
  at::Tensor g = as_matrix(grad_a, m, layers.back().out);
  at::Tensor* spare = &grad_b;
  for (std::size_t i = layers.size(); i-- > 0;) {
    const Layer& L = layers[i];
    const at::Tensor a_in = i == 0 ? part : rows_of(acts[i - 1], m);
    if (products)  // dW (out x in) = g^T (out x m) . a_in (m x in)
      products->of<T>().weight_grad(g.data_ptr<T>(), a_in.data_ptr<T>(), weight_grads[i].data_ptr<T>(), m, L.out, L.in);
    else
      at::mm_out(weight_grads[i], g.t(), a_in);
    if (i == 0) break;
    at::Tensor g_in = as_matrix(*spare, m, L.in);
    if (products)  // g_in (m x in) = g (m x out) . W (out x in)
      products->of<T>().input_grad(g.data_ptr<T>(), L.weight.data_ptr<T>(), g_in.data_ptr<T>(), m, L.out, L.in);
    else
      at::mm_out(g_in, g, L.weight);
    const Layer& below = layers[i - 1];
    loops->of<T>().activation_backward_and_bias(g_in.data_ptr<T>(), a_in.data_ptr<T>(), m, L.in, below.after,
                                                grads_base + below.bias_offset);
    spare = spare == &grad_b ? &grad_a : &grad_b;
    g = g_in;
  }
}

template <typename T>
void FusedDenseEngine::Worker::backward_eigen(const std::vector<Layer>& layers) {
  // As backward(), on pointers: g and spare take turns in grad_a and grad_b (m x width, flat);
  // weight_grads[i] is grads + L.weight_offset.
  const int64_t m = rows;
  const DenseProductKernels<T>& k = products->of<T>();
  const DenseLoopKernels<T>& e = loops->of<T>();
  T* grads_base = grads.data_ptr<T>();
  T* g = grad_a.data_ptr<T>();
  T* spare = grad_b.data_ptr<T>();
  for (std::size_t i = layers.size(); i-- > 0;) {
    const Layer& L = layers[i];
    const T* a_in = i == 0 ? part.data_ptr<T>() : acts[i - 1].data_ptr<T>();
    k.weight_grad(g, a_in, grads_base + L.weight_offset, m, L.out, L.in);  // dW (out x in) = g^T . a_in
    if (i == 0) break;
    k.input_grad(g, L.weight.data_ptr<T>(), spare, m, L.out, L.in);  // g_in (m x in) = g (m x out) . W
    const Layer& below = layers[i - 1];
    e.activation_backward_and_bias(spare, a_in, m, L.in, below.after, grads_base + below.bias_offset);
    std::swap(g, spare);
  }
}

void FusedDenseEngine::Worker::forward_bf16(const std::vector<Layer>& layers, std::size_t first, std::size_t last) {
  const int64_t m = rows;
  if (first == 0) rows_of(part_bf16, m).copy_(part);  // autocast casts the first product's input
  at::Tensor a = first == 0 ? rows_of(part_bf16, m) : rows_of(acts_bf16[first - 1], m);
  for (std::size_t i = first; i < last; ++i) {
    at::Tensor y = rows_of(acts_bf16[i], m);
    at::addmm_out(y, layers[i].bias_bf16, a, layers[i].weight_bf16.t());
    activate_bf16(y.data_ptr<BF16>(), y.numel(), layers[i].after);
    a = y;
  }
}

void FusedDenseEngine::Worker::loss_bf16(const std::vector<Layer>& layers, float norm, float grad_output) {
  const Layer& out = layers.back();
  const at::Tensor x_hat = rows_of(acts_bf16.back(), rows);
  squared_error = loss_backward_bf16(x_hat.data_ptr<BF16>(), part.data_ptr<float>(), grad_bf16_a.data_ptr<BF16>(),
                                     rows, out.out, norm, grad_output, sums.data(),
                                     grads.data_ptr<float>() + out.bias_offset);
}

void FusedDenseEngine::Worker::backward_bf16(const std::vector<Layer>& layers) {
  const int64_t m = rows;
  float* grads_base = grads.data_ptr<float>();
  at::Tensor g = as_matrix(grad_bf16_a, m, layers.back().out);
  at::Tensor* spare = &grad_bf16_b;
  for (std::size_t i = layers.size(); i-- > 0;) {
    const Layer& L = layers[i];
    const at::Tensor a_in = i == 0 ? rows_of(part_bf16, m) : rows_of(acts_bf16[i - 1], m);
    at::mm_out(weight_grads_bf16[i], g.t(), a_in);
    weight_grads[i].copy_(weight_grads_bf16[i]);  // the weight cast's backward: bfloat16 -> float32
    if (i == 0) break;
    at::Tensor g_in = as_matrix(*spare, m, L.in);
    at::mm_out(g_in, g, L.weight_bf16);
    const Layer& below = layers[i - 1];
    activation_backward_and_bias_bf16(g_in.data_ptr<BF16>(), a_in.data_ptr<BF16>(), m, L.in, below.after,
                                      sums.data(), grads_base + below.bias_offset);
    spare = spare == &grad_bf16_b ? &grad_bf16_a : &grad_bf16_b;
    g = g_in;
  }
}

void FusedDenseEngine::cast_weights_bf16() {
  c10::AutoGradMode no_grad(false);
  for (Layer& L : layers_) {
    L.weight_bf16.copy_(L.weight);
    L.bias_bf16.copy_(L.bias);
  }
}

FusedDenseEngine::FusedDenseEngine(AutoEncoder& model, const FlatAdam& opt, LossKind loss, int64_t max_rows,
                                   int shards, at::ScalarType compute_dtype, const FusedProductsChoice& products,
                                   int threads)
    : flat_grads_(opt.flat_grads()), loss_(loss), max_rows_(max_rows) {
  const at::ScalarType param_dtype = opt.flat_params().scalar_type();
  const at::ScalarType compute = compute_dtype == at::ScalarType::Undefined ? param_dtype : compute_dtype;
  const std::string why = fused_unsupported_reason(model, param_dtype, compute, opt.flat_params().device());
  if (!why.empty()) throw InputError(why);
  bf16_ = compute == at::kBFloat16;
  build(model, &opt.flat_params(), max_rows, shards, threads);
  choose_products(products);
  if (pool_ && threads_ > 1 && products.adaptive_threads) governor_ = std::make_unique<ThreadGovernor>(threads_);
}

namespace {

// A setup's shards and threads (engine.h): shards as asked, else the workers asked, else the
// machine's default; threads as asked, else LibTorch's intra-op count.
int setup_shards(int shards, int workers) {
  return shards > 0 ? shards : workers > 0 ? workers : FusedDenseEngine::default_shards();
}
int setup_threads(int workers) { return workers > 0 ? workers : std::max(1, at::get_num_threads()); }

}  // namespace

FusedDenseEngine::FusedDenseEngine(AutoEncoder& model, const TrainingSetup& s)
    : FusedDenseEngine(model, s.opt, s.loss, std::min(s.batch_size, s.train_rows), setup_shards(s.shards, s.workers),
                       s.policy.autocast ? s.policy.compute_dtype : at::ScalarType::Undefined, s.products,
                       setup_threads(s.workers)) {
  opt_ = &s.opt;
  // Adam at the engine's level too, also where it runs whole on the caller (one shard, --profile,
  // amp_bf16's float32 master weights); the same bits at every level.
  if (!s.opt.capturable()) s.opt.set_cpu_loops(*loops_);
  timer_ = &s.timer;
}

void FusedDenseEngine::step(const at::Tensor& xb) {
  if (!opt_) throw std::logic_error("fused engine: step() needs the engine made with a TrainingSetup");
  // On the pool, unprofiled: the gradient sum and Adam run on the workers' threads, each on its
  // part of the flat buffers, within pass().
  const bool adam_in_pass = pool_ && !opt_->capturable() && !(timer_ && timer_->enabled());
  loss_sum_ += pass(xb, timer_, adam_in_pass);  // books encode, decode, loss, backward
  if (adam_in_pass) return;
  PhaseTimer::Scope s(*timer_, Phase::kOptimizer);
  opt_->step();  // the engine overwrote the gradients: no zero_grad needed
}

FusedDenseEngine::FusedDenseEngine(AutoEncoder& model, int64_t max_rows, int shards,
                                   const FusedProductsChoice& products, int threads)
    : loss_(LossKind::kBalerSum), max_rows_(max_rows) {
  const at::ScalarType dtype = model.dtype();
  const std::string why = fused_unsupported_reason(model, dtype, dtype, model.parameters().front().device());
  if (!why.empty()) throw InputError(why);
  build(model, nullptr, max_rows, shards, threads);
  choose_products(products);
}

int FusedDenseEngine::default_shards() { return std::min(8, available_cpus()); }

const char* FusedDenseEngine::isa() const { return loops_ ? isa_name(loops_->level) : ""; }

EngineStatus FusedDenseEngine::status() const {
  EngineStatus st{threads_, "", false, 0};
  st.shards = shards();
  st.products = products_note_;
  if (governor_) st.threads_note = governor_->summary();
  if (pool_ && !governor_ && threads_ > 1)
    st.threads_note = std::to_string(pool_->tasks_by_caller()) + " chunks by the calling thread, " +
                      std::to_string(pool_->tasks_by_helpers()) + " by the other " + std::to_string(threads_ - 1);
  return st;
}

namespace {

std::string ms_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g ms", s * 1e3);
  return buf;
}

}  // namespace

double FusedDenseEngine::time_products(bool eigen) {
  // Worker 0's shard, as a full step gives it: every layer's forward product, and in training its
  // two backward products, on buffers filled with small numbers (never on zeros or leftovers).
  Worker& w = *workers_[0];
  const int64_t m = w.max_rows;
  const bool f64 = layers_.front().weight.scalar_type() == at::kDouble;
  const at::Tensor x = at::full({m, layers_.front().in}, 0.25, layers_.front().weight.options());
  const DenseProducts* saved = w.products;
  w.products = eigen ? products_ : nullptr;
  const auto t0 = std::chrono::steady_clock::now();
  at::Tensor out = at::empty({m, layers_.back().out}, x.options());
  if (f64)
    w.chain<double>(layers_, x, 0, layers_.size(), &out);
  else
    w.chain<float>(layers_, x, 0, layers_.size(), &out);
  if (flat_grads_.defined()) {
    w.part = x;
    w.rows = m;
    w.grad_a.fill_(0.125);
    if (f64)
      w.backward<double>(layers_);
    else
      w.backward<float>(layers_);
    w.part = at::Tensor();
    w.rows = 0;
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  w.products = saved;
  return s;
}

void FusedDenseEngine::choose_products(const FusedProductsChoice& choice) {
  if (choice.backend != "auto" && choice.backend != "eigen" && choice.backend != "openblas")
    throw InputError("fused engine: unknown products backend '" + choice.backend + "'", "auto, eigen or openblas");
  IsaLevel level = host_isa_level();
  if (choice.isa != "auto") {
    if (!parse_isa_level(choice.isa, level))
      throw InputError("fused engine: unknown instruction-set level '" + choice.isa + "'", "auto, generic, avx2 or avx512");
    if (!isa_supported(level))
      throw InputError(std::string("fused engine: this CPU cannot run the ") + choice.isa + " products",
                       std::string("use auto (here: ") + isa_name(host_isa_level()) + ")");
  }
  loops_ = &dense_loops(level);  // the loops at the products' level (and Adam's, see the TrainingSetup constructor)
  for (auto& w : workers_) w->loops = loops_;
  if (bf16_) {  // amp_bf16's products stay LibTorch's (oneDNN's bfloat16 kernels)
    backend_ = "libtorch";
    products_note_ = "libtorch (amp_bf16's bfloat16 products)";
    return;
  }
  products_ = &dense_products(level);
  const std::string eigen_name = std::string("eigen ") + isa_name(level);
  std::string why = choice.isa == "auto" ? " (the widest level this CPU runs)" : " (asked)";
  if (choice.backend == "auto") {
    // Alternating rounds on the step's own shapes; one warm-up of each first.
    c10::AutoGradMode no_grad(false);
    struct ThreadsBack {  // the intra-op threads as they were, also when a timing throws
      int saved = at::get_num_threads();
      ~ThreadsBack() { at::set_num_threads(saved); }
    } threads_back;
    at::set_num_threads(1);  // OpenBLAS's products single-threaded, as each worker runs them
    time_products(true);
    time_products(false);
    double e = 1e300, b = 1e300;  // the fastest of 5: a neighbour only ever adds time
    for (int r = 0; r < 5; ++r) {
      e = std::min(e, time_products(true));
      b = std::min(b, time_products(false));
    }
    // The timings ran worker 0's backward, which writes the optimizer's gradient buffer: cleared,
    // so nothing of them is left where a step would read it.
    if (flat_grads_.defined()) flat_grads_.zero_();
    // Measured and said, but not acted on: which products run is a numerical choice (the sums'
    // order), and a timing must not make two runs of one config differ in their bits.
    why = " (auto: one shard's products " + ms_text(e) + " on Eigen, " + ms_text(b) + " on OpenBLAS, fastest of 5" +
          (b * 1.15 < e ? "; OpenBLAS was 15% faster here: fused_products = openblas would use it" : "") +
          (choice.isa != "auto" ? "; the level asked)" : ")");
  } else if (choice.backend == "openblas") {
    products_ = nullptr;
    why = std::string(" (asked); loops ") + isa_name(level);
  }
  backend_ = products_ ? "eigen" : "openblas";
  products_note_ = (products_ ? eigen_name : std::string("openblas")) + why;
  for (auto& w : workers_) w->products = products_;
  if (workers_.size() > 1) {
    // Both backends on the pool: OpenBLAS's products then run single-threaded on each pool thread
    // (its OpenMP threads set to one there and on the caller). The count in force is read before
    // the pool's threads start (their on_start sets it too).
    saved_intra_op_threads_ = at::get_num_threads();
    pool_ = std::make_unique<ShardPool>(threads_, 50, [] { at::set_num_threads(1); });
    at::set_num_threads(1);
  }
}

void FusedDenseEngine::for_each_worker(int threads_now, const std::function<void(int)>& fn) {
  if (pool_) {
    pool_->run(static_cast<int>(workers_.size()), [&](int task, int) { fn(task); }, std::min(threads_now, threads_));
    return;
  }
  at::parallel_for(0, static_cast<int64_t>(workers_.size()), 1, [&](int64_t begin, int64_t end) {
    for (int64_t w = begin; w < end; ++w) fn(static_cast<int>(w));
  });
}

void FusedDenseEngine::build(AutoEncoder& model, const at::Tensor* flat_params, int64_t max_rows, int workers,
                             int threads) {
  const at::TensorOptions options = flat_params ? flat_params->options() : model.parameters().front().options();
  if (max_rows < 1 || workers < 1 || threads < 0)
    throw InputError("fused engine: max_rows and shards must be at least 1, threads at least 0");
  threads_ = threads > 0 ? std::min(threads, workers) : workers;
  std::map<std::string, at::Tensor> params;
  for (const auto& p : model.named_parameters(true)) params[p.key()] = p.value();
  const auto offset_of = [flat_params](const at::Tensor& t) -> int64_t {
    if (!flat_params) return 0;  // inference: no gradient buffer to address
    const at::Tensor& flat = *flat_params;
    const int64_t bytes = static_cast<const char*>(t.data_ptr()) - static_cast<const char*>(flat.data_ptr());
    const int64_t offset = bytes / static_cast<int64_t>(flat.element_size());
    if (bytes < 0 || offset + t.numel() > flat.numel() || !t.is_contiguous())
      throw std::logic_error("fused engine: the model's parameters are not seated in the optimizer's flat buffer");
    return offset;
  };
  const Architecture& arch = model.architecture();
  int64_t widest = arch.n_features;
  for (const auto& spec : arch.layers) {
    Layer L;
    L.weight = params.at(spec.name + ".weight").detach();
    L.bias = params.at(spec.name + ".bias").detach();
    L.weight_offset = offset_of(L.weight);
    L.bias_offset = offset_of(L.bias);
    L.in = spec.in_features;
    L.out = spec.out_features;
    L.after = *activation_of(spec.after);
    widest = std::max({widest, L.in, L.out});
    if (spec.part == "encoder") encoder_layers_ = layers_.size() + 1;
    layers_.push_back(std::move(L));
  }
  if (bf16_)
    for (Layer& L : layers_) {
      L.weight_bf16 = at::empty({L.out, L.in}, options.dtype(at::kBFloat16));
      L.bias_bf16 = at::empty({L.out}, options.dtype(at::kBFloat16));
    }
  const int64_t per_worker = (max_rows + workers - 1) / workers;
  for (int w = 0; w < workers; ++w) {
    auto worker = std::make_unique<Worker>();
    worker->max_rows = per_worker;
    for (const Layer& L : layers_) worker->acts.push_back(at::empty({per_worker, L.out}, options));
    if (bf16_) {
      const auto bf = options.dtype(at::kBFloat16);
      for (const Layer& L : layers_) {
        worker->acts_bf16.push_back(at::empty({per_worker, L.out}, bf));
        worker->weight_grads_bf16.push_back(at::empty({L.out, L.in}, bf));
      }
      worker->part_bf16 = at::empty({per_worker, arch.n_features}, bf);
      worker->grad_bf16_a = at::empty({per_worker * widest}, bf);
      worker->grad_bf16_b = at::empty({per_worker * widest}, bf);
      worker->sums.assign(static_cast<std::size_t>(widest), 0.0f);
    }
    if (flat_params) {
      worker->grad_a = at::empty({per_worker * widest}, options);
      worker->grad_b = at::empty({per_worker * widest}, options);
      worker->grads = w == 0 ? flat_grads_ : at::zeros_like(flat_grads_);
      for (const Layer& L : layers_)
        worker->weight_grads.push_back(worker->grads.narrow(0, L.weight_offset, L.out * L.in).view({L.out, L.in}));
    }
    workers_.push_back(std::move(worker));
  }
}

FusedDenseEngine::~FusedDenseEngine() {
  if (saved_intra_op_threads_ > 0) at::set_num_threads(saved_intra_op_threads_);
}

void FusedDenseEngine::split_batch(const at::Tensor& xb) {
  if (!flat_grads_.defined()) throw std::logic_error("fused engine: built for inference, not for training");
  const int64_t n = xb.size(0);
  if (n < 1 || n > max_rows_ || !xb.is_contiguous() || xb.scalar_type() != flat_grads_.scalar_type() ||
      xb.size(1) != layers_.front().in)
    throw std::logic_error("fused engine: a batch of " + std::to_string(n) + " rows does not fit the engine");
  const int64_t count = static_cast<int64_t>(workers_.size());
  // Worker w takes rows [w * share, (w + 1) * share): worker 0 always has some, so the flat
  // gradient it writes in place is always complete.
  const int64_t share = (n + count - 1) / count;
  for (int64_t w = 0; w < count; ++w) {
    Worker& worker = *workers_[static_cast<std::size_t>(w)];
    const int64_t first = std::min(n, w * share), last = std::min(n, (w + 1) * share);
    worker.rows = last - first;
    worker.squared_error = 0;
    worker.part = worker.rows ? xb.narrow(0, first, worker.rows) : at::Tensor();
  }
}

void FusedDenseEngine::run_parts(int parts, double norm, double grad_output, int threads_now) {
  const bool f64 = flat_grads_.scalar_type() == at::kDouble;
  const std::size_t encoder = encoder_layers_, all = layers_.size();
  for_each_worker(threads_now, [&](int w) {
    c10::AutoGradMode no_grad(false);  // thread-local: these may be pool threads
    Worker& k = *workers_[static_cast<std::size_t>(w)];
    if (k.rows == 0) return;
    if (bf16_) {
      if (parts & kForwardEncoder) k.forward_bf16(layers_, 0, encoder);
      if (parts & kForwardDecoder) k.forward_bf16(layers_, encoder, all);
      if (parts & kLoss) k.loss_bf16(layers_, static_cast<float>(norm), static_cast<float>(grad_output));
      if (parts & kBackward) k.backward_bf16(layers_);
      return;
    }
    if (f64)
      k.run<double>(layers_, parts, encoder, norm, grad_output);
    else
      k.run<float>(layers_, parts, encoder, static_cast<float>(norm), static_cast<float>(grad_output));
  });
}

void FusedDenseEngine::reduce_and_step(int threads_now) {
  // Each part of the flat buffers: worker 0's gradient + worker 1's + ... (the order of
  // reduce_gradients), then Adam on those elements. Parts on 16-element boundaries.
  opt_->begin_cpu_step();
  const int64_t n = flat_grads_.numel();
  const int parts = static_cast<int>(workers_.size());
  const bool f64 = flat_grads_.scalar_type() == at::kDouble;
  pool_->run(parts, [&](int part, int) {
    const int64_t begin = std::min(n, (n * part / parts) & ~int64_t{15});
    const int64_t end = part + 1 == parts ? n : std::min(n, (n * (part + 1) / parts) & ~int64_t{15});
    for (std::size_t w = 1; w < workers_.size(); ++w) {
      if (workers_[w]->rows == 0) continue;
      if (f64)
        loops_->f64.add_into(flat_grads_.data_ptr<double>() + begin, workers_[w]->grads.data_ptr<double>() + begin,
                             end - begin);
      else
        loops_->f32.add_into(flat_grads_.data_ptr<float>() + begin, workers_[w]->grads.data_ptr<float>() + begin,
                             end - begin);
    }
    opt_->step_cpu_part(begin, end, loops_);
  }, threads_now);
}

void FusedDenseEngine::reduce_gradients() {
  // Fixed order: worker 0's gradient (already in place) + worker 1's + ...
  c10::AutoGradMode no_grad(false);
  for (std::size_t w = 1; w < workers_.size(); ++w)
    if (workers_[w]->rows > 0) flat_grads_.add_(workers_[w]->grads);
}

double FusedDenseEngine::forward_backward(const at::Tensor& xb, PhaseTimer* timer) { return pass(xb, timer, false); }

double FusedDenseEngine::pass(const at::Tensor& xb, PhaseTimer* timer, bool adam) {
  split_batch(xb);
  const int64_t n = xb.size(0), features = xb.size(1);
  // mse_loss's norm (2, or 2/numel for the mean) and the gradient of the division by n_features.
  const double norm = loss_ == LossKind::kMseMean ? 2.0 / static_cast<double>(n * features) : 2.0;
  const double grad_output = loss_ == LossKind::kMseMean ? 1.0 : 1.0 / static_cast<double>(features);
  if (timer && timer->enabled()) {
    // Profiled: the same work phase by phase, so the profile's rows mean what they mean for libtorch.
    {
      PhaseTimer::Scope s(*timer, Phase::kEncode);
      if (bf16_) cast_weights_bf16();
      run_parts(kForwardEncoder, norm, grad_output, threads_);
    }
    {
      PhaseTimer::Scope s(*timer, Phase::kDecode);
      run_parts(kForwardDecoder, norm, grad_output, threads_);
    }
    {
      PhaseTimer::Scope s(*timer, Phase::kLoss);
      run_parts(kLoss, norm, grad_output, threads_);
    }
    PhaseTimer::Scope s(*timer, Phase::kBackward);
    run_parts(kBackward, norm, grad_output, threads_);
    reduce_gradients();
  } else {
    // Full batches are timed for the governor, which says how many threads the next one gets.
    const bool timed = governor_ && n == max_rows_;
    const int threads_now = timed ? governor_->threads_for_next_step() : threads_;
    const auto t0 = std::chrono::steady_clock::now();
    if (bf16_) cast_weights_bf16();
    run_parts(kForwardEncoder | kForwardDecoder | kLoss | kBackward, norm, grad_output, threads_now);
    if (adam)
      reduce_and_step(threads_now);
    else
      reduce_gradients();
    if (timed) governor_->record(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  double squared_error = 0;
  for (const auto& w : workers_) squared_error += w->squared_error;  // in worker order
  return loss_ == LossKind::kMseMean ? squared_error / static_cast<double>(n * features)
                                     : squared_error / static_cast<double>(features);
}

at::Tensor FusedDenseEngine::run_layers(const at::Tensor& x_in, std::size_t first, std::size_t last) {
  c10::AutoGradMode no_grad(false);
  const at::Tensor x = x_in.contiguous();
  const int64_t rows = x.size(0);
  at::Tensor out = at::empty({rows, layers_[last - 1].out}, x.options());
  const int64_t count = static_cast<int64_t>(workers_.size());
  const int64_t per_worker = workers_[0]->max_rows;
  const int64_t chunks = (rows + per_worker - 1) / per_worker;
  const auto chunk = [&](int64_t c, std::size_t w) {  // chunk c with worker w's buffers
    const int64_t start = c * per_worker, m = std::min(per_worker, rows - start);
    at::Tensor slice = out.narrow(0, start, m);
    workers_[w]->forward(layers_, x.narrow(0, start, m), first, last, slice);
  };
  if (pool_ && chunks <= 0xFFFF) {
    // Each chunk to whichever thread claims it (a descheduled thread's share goes to the others);
    // a chunk's rows come out the same whichever thread runs them.
    pool_->run(static_cast<int>(chunks), [&](int c, int thread) {
      c10::AutoGradMode no_grad_here(false);
      chunk(c, static_cast<std::size_t>(thread));
    }, threads_);
    return out;
  }
  at::parallel_for(0, count, 1, [&](int64_t begin, int64_t end) {
    c10::AutoGradMode no_grad_here(false);
    for (int64_t w = begin; w < end; ++w)
      for (int64_t c = w; c < chunks; c += count) chunk(c, static_cast<std::size_t>(w));  // chunk c to worker c mod count
  });
  return out;
}

at::Tensor FusedDenseEngine::encode(const at::Tensor& x) { return run_layers(x, 0, encoder_layers_); }
at::Tensor FusedDenseEngine::decode(const at::Tensor& z) { return run_layers(z, encoder_layers_, layers_.size()); }
at::Tensor FusedDenseEngine::forward(const at::Tensor& x) { return run_layers(x, 0, layers_.size()); }

}  // namespace balerbench

namespace balerbench {
namespace {

std::string fused_unsupported(const AutoEncoder& model, const PrecisionPolicy& policy, c10::Device device) {
  return fused_unsupported_reason(model, policy.param_dtype, policy.autocast ? policy.compute_dtype : policy.param_dtype,
                                  device);
}

std::string fused_auto_skip(const AutoEncoder&, const PrecisionPolicy& policy, c10::Device) {
  if (!policy.autocast) return "";
  return std::string(policy.name()) +
         ": the fused bfloat16 step measured slower than LibTorch's oneDNN autocast; --engine fused runs it";
}

std::string fused_inference_unsupported(const PrecisionPolicy& policy) {
  if (!policy.autocast) return "";
  return std::string("fused trains ") + policy.name() + "; compress and decompress run LibTorch's autocast";
}

}  // namespace

const EngineEntry& fused_engine_entry() {
  static const EngineEntry entry{
      EngineKind::kFused, fused_unsupported, fused_auto_skip, fused_inference_unsupported,
      [](AutoEncoder& model, const TrainingSetup& s) -> std::unique_ptr<Engine> {
        return std::make_unique<FusedDenseEngine>(model, s);
      },
      [](AutoEncoder& model, const InferenceSetup& s) -> std::unique_ptr<Engine> {
        return std::make_unique<FusedDenseEngine>(model, s.max_rows, setup_shards(s.shards, s.workers), s.products,
                                                  setup_threads(s.workers));
      }};
  return entry;
}

}  // namespace balerbench
