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
#include "common/text.h"
#include "harness/engine/bf16_kernels.h"
#include "harness/engine/dense_products.h"
#include "harness/engine/engine_registry.h"
#include "harness/engine/trainer.h"
#include "harness/engine/flat_adam.h"
#include "harness/engine/fused_kernels.h"
#include "harness/engine/fused_worker.h"
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


void FusedDenseEngine::ensure_packed() {
  // The packs are fresh when the engine's own Adam on the pool made them at the end of the last step
  // (reduce_and_step): the only writer of the parameters during a training. Any other way here (the
  // first step, one shard, a profiled step, forward_backward with the caller's optimizer step) packs now.
  if (!packed_) cast_weights_bf16();
  packed_ = false;
}

void FusedDenseEngine::cast_weights_bf16() {
  const Bf16Kernels& k = *workers_.front()->bf16;
  for (Layer& L : layers_)
    k.pack_layer(L.weight.data_ptr<float>(), L.bias.data_ptr<float>(), L.out, L.in, L.wf.data(), L.wb.data(),
                 L.bias_f.data());
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
  build(model, &opt.flat_params(), max_rows, shards, threads, products);
  if (bf16_) {  // amp_bf16's Adam runs by layer, largest first (reduce_and_step): they must cover the buffer
    int64_t covered = 0;
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      bf16_order_.push_back(i);
      covered += layers_[i].out * (layers_[i].in + 1);
    }
    if (covered != flat_grads_.numel())
      throw std::logic_error("fused engine: the layers do not cover the optimizer's flat buffer");
    std::stable_sort(bf16_order_.begin(), bf16_order_.end(),
                     [&](std::size_t a, std::size_t b) { return layers_[a].out * layers_[a].in > layers_[b].out * layers_[b].in; });
  }
  choose_products(products);
  if (pool_ && threads_ > 1 && products.adaptive_threads) governor_ = std::make_unique<ThreadGovernor>(threads_);
}

int fused_setup_threads(int workers) { return workers > 0 ? workers : std::max(1, at::get_num_threads()); }

FusedDenseEngine::FusedDenseEngine(AutoEncoder& model, const TrainingSetup& s)
    : FusedDenseEngine(model, s.opt, s.options.loss, std::min(s.options.batch_size, s.train_rows),
                       fused_shards(&s.options.engine_knobs, s.options.engine_workers),
                       s.options.precision.autocast ? s.options.precision.compute_dtype : at::ScalarType::Undefined,
                       fused_products_choice(&s.options.engine_knobs, s.options.adaptive_threads),
                       fused_setup_threads(s.options.engine_workers)) {
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
                                   const FusedProductsChoice& products, int threads, at::ScalarType compute_dtype)
    : loss_(LossKind::kBalerSum), max_rows_(max_rows) {
  const at::ScalarType dtype = model.dtype();
  const at::ScalarType compute = compute_dtype == at::ScalarType::Undefined ? dtype : compute_dtype;
  const std::string why = fused_unsupported_reason(model, dtype, compute, model.parameters().front().device());
  if (!why.empty()) throw InputError(why);
  bf16_ = compute == at::kBFloat16;
  build(model, nullptr, max_rows, shards, threads, products);
  choose_products(products);
  if (bf16_) cast_weights_bf16();  // the weights do not change during inference
}

int FusedDenseEngine::default_shards() { return std::min(8, available_cpus()); }

const char* FusedDenseEngine::isa() const { return loops_ ? isa_name(loops_->level) : ""; }

EngineStatus FusedDenseEngine::status() const {
  EngineStatus st;
  st.workers = threads_;
  st.details["shards"] = shards();
  if (!products_note_.empty()) st.details["products"] = products_note_;
  if (governor_) st.details["threads"] = governor_->summary();
  if (pool_ && !governor_ && threads_ > 1)
    st.details["threads"] = std::to_string(pool_->tasks_by_caller()) + " chunks by the calling thread, " +
                            std::to_string(pool_->tasks_by_helpers()) + " by the other " + std::to_string(threads_ - 1);
  return st;
}

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
  if (bf16_) {
    const Bf16Kernels& k = *workers_.front()->bf16;
    backend_ = k.name;
    products_note_ = bf16_kernels_note(k, choice.isa);
  } else {
    products_ = &dense_products(level);
    choose_float_products(choice, level);
  }
  if (workers_.size() > 1) {
    // On the pool: OpenBLAS's products then run single-threaded on each pool thread (its OpenMP
    // threads set to one there and on the caller). The count in force is read before the pool's
    // threads start (their on_start sets it too).
    saved_intra_op_threads_ = at::get_num_threads();
    pool_ = std::make_unique<ShardPool>(threads_, 50, [] { at::set_num_threads(1); });
    at::set_num_threads(1);
  }
}

void FusedDenseEngine::choose_float_products(const FusedProductsChoice& choice, IsaLevel level) {
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

namespace {

// The model's Linear layers as views into its parameters (seated in `flat_params` when training:
// their offsets address the optimizer's gradient buffer). `encoder_layers`: those up to and
// including the latent one.
std::vector<FusedDenseEngine::Layer> seated_layers(AutoEncoder& model, const at::Tensor* flat_params,
                                                   std::size_t& encoder_layers) {
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
  std::vector<FusedDenseEngine::Layer> layers;
  for (const auto& spec : model.architecture().layers) {
    FusedDenseEngine::Layer L;
    L.weight = params.at(spec.name + ".weight").detach();
    L.bias = params.at(spec.name + ".bias").detach();
    L.weight_offset = offset_of(L.weight);
    L.bias_offset = offset_of(L.bias);
    L.in = spec.in_features;
    L.out = spec.out_features;
    L.after = *activation_of(spec.after);
    if (spec.part == "encoder") encoder_layers = layers.size() + 1;
    layers.push_back(std::move(L));
  }
  return layers;
}

}  // namespace

void FusedDenseEngine::build(AutoEncoder& model, const at::Tensor* flat_params, int64_t max_rows, int workers,
                             int threads, const FusedProductsChoice& products) {
  const at::TensorOptions options = flat_params ? flat_params->options() : model.parameters().front().options();
  if (max_rows < 1 || workers < 1 || threads < 0)
    throw InputError("fused engine: max_rows and shards must be at least 1, threads at least 0");
  threads_ = threads > 0 ? std::min(threads, workers) : workers;
  layers_ = seated_layers(model, flat_params, encoder_layers_);
  const int64_t n_features = model.architecture().n_features;
  int64_t widest = n_features;
  for (const Layer& L : layers_) widest = std::max({widest, L.in, L.out});
  const Bf16Kernels* kernels = bf16_ ? &bf16_kernels_for(products.isa) : nullptr;
  if (bf16_)
    for (Layer& L : layers_) {
      L.wf.assign(static_cast<std::size_t>(bf16_wf_size(L.out, L.in)), 0);
      L.wb.assign(static_cast<std::size_t>(bf16_wb_size(L.out, L.in)), 0);
      L.bias_f.assign(static_cast<std::size_t>(L.out), 0.0f);
    }
  const int64_t per_worker = (max_rows + workers - 1) / workers;
  for (int w = 0; w < workers; ++w) {
    auto worker = std::make_unique<Worker>();
    const at::Tensor grads = !flat_params ? at::Tensor() : w == 0 ? flat_grads_ : at::zeros_like(flat_grads_);
    worker->allocate(layers_, per_worker, widest, options, kernels, grads);
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
  // reduce_gradients), then Adam on those elements. Parts on 16-element boundaries; amp_bf16's parts
  // are its layers (largest first), each then packed for the next step (bf16_layer_step).
  opt_->begin_cpu_step();
  if (bf16_) {
    pool_->run(static_cast<int>(layers_.size()), [&](int task, int) { bf16_layer_step(bf16_order_[task]); },
               threads_now);
    packed_ = true;
    return;
  }
  const int64_t n = flat_grads_.numel();
  const int parts = static_cast<int>(workers_.size());
  pool_->run(parts, [&](int part, int) {
    const int64_t begin = std::min(n, (n * part / parts) & ~int64_t{15});
    const int64_t end = part + 1 == parts ? n : std::min(n, (n * (part + 1) / parts) & ~int64_t{15});
    sum_and_step(begin, end);
  }, threads_now);
}

void FusedDenseEngine::sum_and_step(int64_t begin, int64_t end) {
  const bool f64 = flat_grads_.scalar_type() == at::kDouble;
  for (std::size_t w = 1; w < workers_.size(); ++w) {
    if (workers_[w]->rows == 0) continue;
    if (f64)
      loops_->f64.add_into(flat_grads_.data_ptr<double>() + begin, workers_[w]->grads.data_ptr<double>() + begin,
                           end - begin);
    else
      loops_->f32.add_into(flat_grads_.data_ptr<float>() + begin, workers_[w]->grads.data_ptr<float>() + begin,
                           end - begin);
  }
  // amp_bf16: each gradient rounded to bfloat16 once, over the whole batch, as autocast's is.
  if (bf16_) workers_.front()->bf16->round_to_bf16(flat_grads_.data_ptr<float>() + begin, end - begin);
  opt_->step_cpu_part(begin, end, loops_);
}

void FusedDenseEngine::bf16_layer_step(std::size_t i) {
  // A layer's weight and bias: summed, rounded, Adam; then packed for the next step's products,
  // while the new weights are in this thread's cache (a layer's weights are only ever read whole).
  Layer& L = layers_[i];
  sum_and_step(L.weight_offset, L.weight_offset + L.out * L.in);
  sum_and_step(L.bias_offset, L.bias_offset + L.out);
  workers_.front()->bf16->pack_layer(L.weight.data_ptr<float>(), L.bias.data_ptr<float>(), L.out, L.in, L.wf.data(),
                                     L.wb.data(), L.bias_f.data());
}

void FusedDenseEngine::reduce_gradients() {
  // Fixed order: worker 0's gradient (already in place) + worker 1's + ...
  c10::AutoGradMode no_grad(false);
  for (std::size_t w = 1; w < workers_.size(); ++w)
    if (workers_[w]->rows > 0) flat_grads_.add_(workers_[w]->grads);
  // amp_bf16: each gradient rounded to bfloat16 once, over the whole batch, as autocast's is.
  if (bf16_) workers_.front()->bf16->round_to_bf16(flat_grads_.data_ptr<float>(), flat_grads_.numel());
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
      if (bf16_) ensure_packed();
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
    if (bf16_) ensure_packed();
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
  // amp_bf16: bfloat16 out, as autocast's model gives it.
  at::Tensor out = at::empty({rows, layers_[last - 1].out}, bf16_ ? x.options().dtype(at::kBFloat16) : x.options());
  const int64_t count = static_cast<int64_t>(workers_.size());
  const int64_t per_worker = workers_[0]->max_rows;
  const int64_t chunks = (rows + per_worker - 1) / per_worker;
  const auto chunk = [&](int64_t c, std::size_t w) {  // chunk c with worker w's buffers
    const int64_t start = c * per_worker, m = std::min(per_worker, rows - start);
    at::Tensor slice = out.narrow(0, start, m);
    if (bf16_)
      workers_[w]->forward_bf16_rows(layers_, x.narrow(0, start, m), first, last, slice);
    else
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
