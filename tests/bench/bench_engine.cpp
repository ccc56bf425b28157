// bench_engine.cpp: Google Benchmark for the engine's hot paths.
//   BM_TrainStep/<dtype>/<optimizer>: one Adam step of Baler's AE (24 columns,
//     latent 15, batch 512): zero_grad, forward, baler_sum loss, backward, step;
//     with the engine's FlatAdam or with torch::optim::Adam.
//   BM_TrainEpoch/<precision>/<profile>: one epoch over 100,000 CMS-like rows
//     (196 batches) in fp64, fp32 or amp_bf16 (bfloat16 autocast), losses
//     accumulated on the device, one host read; /1 with the per-phase timers on.
//   BM_Compress / BM_Decompress: encode / decode 100,000 rows in 65,536-row chunks.
//   BM_Evaluate/<dtype>/<chunk>: the per-epoch evaluation, chunked against the batch-by-batch baseline.
//   BM_EngineEpoch/<precision>/<engine>/<threads>: one epoch as BM_TrainEpoch (64 fp64, 32 fp32,
//     16 amp_bf16), engine 0 = libtorch (autograd), 1 = fused on OpenBLAS's products, 2 = fused on
//     Eigen's (fused_engine.h, dense_products.h), 1 or 2 threads. Each iteration is a whole fit of one
//     epoch: the engine's set-up (its threads, buffers, the thread governor's first steps) included.
//   BM_EngineSteadyEpoch/<precision>/<threads>/<engine>: an epoch of a longer training, as the floor
//     below is one: 64 fp64, 32 fp32, 16 amp_bf16; engine 0 libtorch, 1 fused (Eigen's products, or
//     amp_bf16's bfloat16 dot products); fits of 4 epochs, the time of each of epochs 2 to 4 (the
//     epoch's own duration_s; the set-up and the first epoch are counted apart, in the counters
//     setup_ms and first_epoch_ms, per fit).
//   BM_GemmFloor/<dtype>/<threads>/<products>: the same epoch's products alone (8 forward, 15 backward
//     per batch, into preallocated buffers), each of `threads` workers on its share of every batch
//     with single-threaded products (0 OpenBLAS on LibTorch's threads, 1 Eigen on the engine's
//     pool), as the fused engine splits it: the floor the fused engine is held to.
//   BM_FusedBreakdown/<dtype>/<threads>: a fused epoch (Eigen) split into products, the rest of
//     forward and backward (activations, loss, bias gradients, the workers' gradient sum) and Adam.
// Compare engines side by side: --benchmark_filter='Engine|Gemm|Breakdown'
//   --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true (medians, alternating).
// Items are rows, so items_per_second is rows/s.
#include <benchmark/benchmark.h>

#include <torch/torch.h>
#include <torch/version.h>
#include <ATen/Parallel.h>

#include <chrono>
#include <cmath>
#include <memory>
#include <vector>
#include <cstdlib>

#include "datasets/normalizer.h"
#include "datasets/synthetic.h"
#include "harness/codecs/baler_codec.h"
#include "harness/engine/dense_products.h"
#include "harness/engine/shard_pool.h"
#include "harness/engine/engine_registry.h"
#include "harness/engine/flat_adam.h"
#include "harness/engine/fused_engine.h"
#include "harness/engine/precision.h"
#include "harness/engine/runtime.h"
#include "harness/engine/trainer.h"
#include "models/autoencoder.h"

namespace balerbench {
namespace {

constexpr int64_t kRows = 100000;

// CMS-like rows, normalized as training sees them: (kRows, 24) float64.
const at::Tensor& cms_rows() {
  static const at::Tensor x = [] {
    const SyntheticData d = generate_cms_like(kRows, 0);
    const at::Tensor t = torch::tensor(d.values, torch::kDouble).view({kRows, 24});
    return Normalization::fit(t).apply(t).contiguous();
  }();
  return x;
}

at::ScalarType dtype_of(const benchmark::State& state) { return state.range(0) == 64 ? at::kDouble : at::kFloat; }

// Args: dtype bits; optimizer 0 = the engine's FlatAdam, 1 = torch::optim::Adam (for comparison).
void BM_TrainStep(benchmark::State& state) {
  torch::manual_seed(0);
  auto model = make_model("AE", 24, 15);
  model->to(dtype_of(state));
  const at::Tensor x = cms_rows().narrow(0, 0, 512).to(dtype_of(state));
  auto step = [&](auto& opt) {
    for (auto _ : state) {
      opt.zero_grad();
      const at::Tensor loss = batch_loss(model->forward(x), x, LossKind::kBalerSum);
      loss.backward();
      opt.step();
    }
  };
  if (state.range(1) == 0) {
    FlatAdam opt(model->parameters(), 1e-3);
    step(opt);
  } else {
    torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(1e-3));
    step(opt);
  }
  state.SetItemsProcessed(state.iterations() * 512);
  state.SetLabel(std::string(state.range(0) == 64 ? "float64" : "float32") +
                 (state.range(1) == 0 ? ", FlatAdam" : ", torch::optim::Adam"));
}
BENCHMARK(BM_TrainStep)->Args({64, 0})->Args({64, 1})->Args({32, 0})->Args({32, 1})->Unit(benchmark::kMicrosecond);

// Args: precision (0 fp64, 1 fp32, 2 amp_bf16); profile (0 off, 1 per-phase timers on).
void BM_TrainEpoch(benchmark::State& state) {
  static const char* const names[] = {"fp64", "fp32", "amp_bf16"};
  const PrecisionPolicy p = resolve_precision(parse_precision(names[state.range(0)], "bench"), at::kDouble,
                                                c10::Device(c10::kCPU));
  torch::manual_seed(0);
  auto model = make_model("AE", 24, 15);
  model->to(p.param_dtype);
  const at::Tensor x = cms_rows().to(p.data_dtype);
  TrainOptions o;
  o.epochs = 1;
  o.batch_size = 512;
  o.progress = "none";
  o.precision = p;
  o.profile = state.range(1) != 0;
  for (auto _ : state) benchmark::DoNotOptimize(fit(*model, x, {}, o));
  state.SetItemsProcessed(state.iterations() * kRows);
  state.SetLabel(std::string(p.name()) + (o.profile ? ", profiled" : ""));
}
BENCHMARK(BM_TrainEpoch)
    ->Args({0, 0})
    ->Args({1, 0})
    ->Args({2, 0})
    ->Args({1, 1})
    ->Unit(benchmark::kMillisecond)
    ->MinTime(2.0);

// An AE trained for 3 epochs on the benchmark rows: random weights do not
// produce the subnormal intermediates a trained model does.
std::shared_ptr<AutoEncoder> trained_model() {
  static std::shared_ptr<AutoEncoder> model = [] {
    torch::manual_seed(0);
    auto m = make_model("AE", 24, 15);
    TrainOptions o;
    o.epochs = 3;
    o.progress = "none";
    fit(*m, cms_rows(), {}, o);
    return m;
  }();
  return model;
}

void BM_Compress(benchmark::State& state) {
  auto model = trained_model();
  const auto engine = make_inference_engine(EngineKind::kLibtorch, *model, {{}, state.range(0), 0});
  for (auto _ : state)
    benchmark::DoNotOptimize(encode_rows(*model, *engine, cms_rows(), nullptr, at::kDouble, state.range(0)));
  state.SetItemsProcessed(state.iterations() * kRows);
  state.SetLabel("chunk " + std::to_string(state.range(0)) + " rows");
}
BENCHMARK(BM_Compress)->Arg(512)->Arg(1024)->Arg(4096)->Arg(65536)->Unit(benchmark::kMillisecond);

void BM_Decompress(benchmark::State& state) {
  auto model = trained_model();
  const auto engine = make_inference_engine(EngineKind::kLibtorch, *model, {{}, state.range(0), 0});
  const at::Tensor z = encode_rows(*model, *engine, cms_rows(), nullptr, at::kDouble, 1024);
  for (auto _ : state) benchmark::DoNotOptimize(decode_rows(*model, *engine, z, nullptr, state.range(0)));
  state.SetItemsProcessed(state.iterations() * kRows);
  state.SetLabel("chunk " + std::to_string(state.range(0)) + " rows");
}
BENCHMARK(BM_Decompress)->Arg(512)->Arg(1024)->Arg(4096)->Arg(65536)->Unit(benchmark::kMillisecond);

// The evaluation as it was before chunking (issue 13): batch by batch at the training batch size,
// the validation loss in the data's dtype, then a second pass for the relative error with float64
// copies of every batch. Kept here as the baseline that BM_Evaluate must not be slower than.
double batchwise_evaluation(AutoEncoder& model, const at::Tensor& x, int64_t batch) {
  torch::NoGradGuard no_grad;
  model.eval();
  at::Tensor sum = torch::zeros({}, x.options());
  int64_t batches = 0;
  for (int64_t s = 0; s < x.size(0); s += batch, ++batches) {
    const at::Tensor xb = x.narrow(0, s, std::min(batch, x.size(0) - s));
    sum += batch_loss(model.forward(xb), xb, LossKind::kBalerSum);
  }
  at::Tensor num = torch::zeros({}, x.options().dtype(at::kDouble));
  at::Tensor den = torch::zeros({}, x.options().dtype(at::kDouble));
  for (int64_t s = 0; s < x.size(0); s += batch) {
    const at::Tensor xb = x.narrow(0, s, std::min(batch, x.size(0) - s));
    const at::Tensor x_hat = model.forward(xb);
    num += (x_hat.to(at::kDouble) - xb.to(at::kDouble)).pow(2).sum();
    den += xb.to(at::kDouble).pow(2).sum();
  }
  model.train();
  return sum.item<double>() / static_cast<double>(batches) + std::sqrt(num.item<double>() / den.item<double>());
}

// BM_Evaluate/<dtype>/<chunk>: validation loss and relative error of 100,000 rows at training batch
// 512; chunk 0 is the batch-by-batch baseline above, otherwise evaluate() with that many rows per pass.
void BM_Evaluate(benchmark::State& state) {
  auto model = trained_model();
  const bool f32 = state.range(0) == 1;
  model->to(f32 ? at::kFloat : at::kDouble);
  const at::Tensor x = cms_rows().to(f32 ? at::kFloat : at::kDouble);
  const int64_t chunk = state.range(1);
  for (auto _ : state) {
    if (chunk == 0)
      benchmark::DoNotOptimize(batchwise_evaluation(*model, x, 512));
    else
      benchmark::DoNotOptimize(evaluate(*model, x, {512, LossKind::kBalerSum, {}, chunk}).loss);
  }
  model->to(at::kDouble);
  state.SetItemsProcessed(state.iterations() * kRows);
  state.SetLabel(std::string(f32 ? "fp32 " : "fp64 ") + (chunk ? "chunk " + std::to_string(chunk) : "batchwise (before)"));
}
BENCHMARK(BM_Evaluate)
    ->ArgsProduct({{0, 1}, {0, 512, 1024, 4096, 16384}})
    ->Unit(benchmark::kMillisecond);

// ---- engines ----

constexpr int64_t kBatch = 512;

// A fit of `epochs` on the bench's rows in `mode`, with `engine` and the fused engine's products
// `backend`, quietly.
TrainOptions epoch_options(Precision mode, EngineKind engine, const std::string& backend, int64_t epochs) {
  TrainOptions o;
  o.epochs = epochs;
  o.batch_size = kBatch;
  o.progress = "none";
  o.precision = resolve_precision(mode, at::kDouble, c10::Device(c10::kCPU));
  o.engine = engine;
  o.engine_knobs.set("fused_products", backend);
  return o;
}

// Args: 64 fp64, 32 fp32, 16 amp_bf16 (float32 master weights); engine (0 libtorch, 1 fused on
// OpenBLAS's products, 2 fused on Eigen's at the host's level); threads.
void BM_EngineEpoch(benchmark::State& state) {
  const at::ScalarType dtype = dtype_of(state);
  const Precision mode = state.range(0) == 64 ? Precision::kFp64
                         : state.range(0) == 32 ? Precision::kFp32
                                                : Precision::kAmpBf16;
  at::set_num_threads(static_cast<int>(state.range(2)));
  torch::manual_seed(0);
  auto model = make_model("AE", 24, 15);
  model->to(dtype);
  const at::Tensor x = cms_rows().to(dtype);
  const TrainOptions o = epoch_options(mode, state.range(1) ? EngineKind::kFused : EngineKind::kLibtorch,
                                       state.range(1) == 2 ? "eigen" : "openblas", 1);
  std::string products;
  for (auto _ : state) products = fit(*model, x, {}, o).engine_status.detail("products");
  state.SetItemsProcessed(state.iterations() * kRows);
  state.SetLabel(std::string(o.precision.name()) + ", " + engine_name(o.engine) +
                 (state.range(1) ? " " + products.substr(0, products.find(" (")) : std::string()) + ", " +
                 std::to_string(state.range(2)) + " thread(s)");
  at::set_num_threads(available_cpus());
}
BENCHMARK(BM_EngineEpoch)
    ->ArgsProduct({{32, 64}, {0, 1, 2}, {1, 2}})
    ->ArgsProduct({{16}, {0, 1}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->MinTime(1.0);

// Args: 64 fp64, 32 fp32, 16 amp_bf16; threads; engine (0 libtorch, 1 fused on Eigen, or on
// bfloat16 dot products for amp_bf16).
void BM_EngineSteadyEpoch(benchmark::State& state) {
  const Precision mode = state.range(0) == 64 ? Precision::kFp64
                         : state.range(0) == 32 ? Precision::kFp32
                                                : Precision::kAmpBf16;
  const at::ScalarType dtype = mode == Precision::kFp64 ? at::kDouble : at::kFloat;
  const EngineKind engine = state.range(2) ? EngineKind::kFused : EngineKind::kLibtorch;
  at::set_num_threads(static_cast<int>(state.range(1)));
  torch::manual_seed(0);
  auto model = make_model("AE", 24, 15);
  model->to(dtype);
  const at::Tensor x = cms_rows().to(dtype);
  const TrainOptions o = epoch_options(mode, engine, "eigen", 4);
  double setup_s = 0, first_s = 0;
  int64_t fits = 0;
  std::string products;
  while (state.KeepRunningBatch(3)) {  // three timed epochs per fit
    const auto t0 = std::chrono::steady_clock::now();
    const TrainResult r = fit(*model, x, {}, o);
    const double fit_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double epochs_s = 0;
    for (const EpochRecord& e : r.epoch_records) epochs_s += e.duration_s;
    setup_s += fit_s - epochs_s;
    first_s += r.epoch_records.at(0).duration_s;
    for (std::size_t e = 1; e < r.epoch_records.size(); ++e) state.SetIterationTime(r.epoch_records[e].duration_s);
    products = r.engine_status.detail("products");
    ++fits;
  }
  state.SetItemsProcessed(state.iterations() * kRows);
  state.counters["setup_ms"] = 1e3 * setup_s / static_cast<double>(std::max<int64_t>(fits, 1));
  state.counters["first_epoch_ms"] = 1e3 * first_s / static_cast<double>(std::max<int64_t>(fits, 1));
  state.SetLabel(std::string(o.precision.name()) + ", " + engine_name(engine) +
                 (products.empty() ? std::string() : " " + products.substr(0, products.find(" ("))) + ", " +
                 std::to_string(state.range(1)) + " thread(s), epochs 2-4 of 4");
  at::set_num_threads(available_cpus());
}
BENCHMARK(BM_EngineSteadyEpoch)
    ->ArgsProduct({{16, 32, 64}, {1, 2}, {0, 1}})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->MinTime(2.0);

// The AE's GEMMs for one worker's rows, as the fused engine runs them.
struct GemmWorker {
  std::vector<at::Tensor> w, acts, wgrad, ginput;
  at::Tensor g_out;
  const DenseProducts* eigen = nullptr;  // null: at::mm_out (OpenBLAS)
  GemmWorker(const std::vector<at::Tensor>& weights, int64_t rows, at::ScalarType dtype, const DenseProducts* products)
      : w(weights), eigen(dtype == at::kBFloat16 ? nullptr : products) {
    const auto opt = at::TensorOptions().dtype(dtype);
    for (const auto& W : w) {
      acts.push_back(at::rand({rows, W.size(0)}, opt));
      wgrad.push_back(at::empty_like(W));
      ginput.push_back(at::empty({rows, W.size(1)}, opt));
    }
    g_out = at::rand({rows, w.back().size(0)}, opt);
  }
  template <typename T>
  void run_eigen(const at::Tensor& x) {
    const auto& k = eigen->of<T>();
    const int64_t m = x.size(0);
    const T* a = x.data_ptr<T>();
    for (std::size_t i = 0; i < w.size(); ++i) {
      k.forward(a, w[i].data_ptr<T>(), acts[i].data_ptr<T>(), m, w[i].size(0), w[i].size(1));
      a = acts[i].data_ptr<T>();
    }
    for (std::size_t i = w.size(); i-- > 0;) {
      const T* g = (i + 1 == w.size() ? g_out : ginput[i + 1]).template data_ptr<T>();
      k.weight_grad(g, (i == 0 ? x : acts[i - 1]).template data_ptr<T>(), wgrad[i].data_ptr<T>(), m, w[i].size(0),
                    w[i].size(1));
      if (i > 0) k.input_grad(g, w[i].data_ptr<T>(), ginput[i].data_ptr<T>(), m, w[i].size(0), w[i].size(1));
    }
  }
  void run(const at::Tensor& x) {
    if (eigen) {
      if (x.scalar_type() == at::kDouble)
        run_eigen<double>(x);
      else
        run_eigen<float>(x);
      return;
    }
    at::Tensor a = x;
    for (std::size_t i = 0; i < w.size(); ++i) {
      at::mm_out(acts[i], a, w[i].t());
      a = acts[i];
    }
    for (std::size_t i = w.size(); i-- > 0;) {
      const at::Tensor& g = i + 1 == w.size() ? g_out : ginput[i + 1];
      at::mm_out(wgrad[i], g.t(), i == 0 ? x : acts[i - 1]);
      if (i > 0) at::mm_out(ginput[i], g, w[i]);
    }
  }
};

struct GemmFloor {
  std::vector<std::unique_ptr<GemmWorker>> workers;
  at::Tensor x;
  int64_t share = 0;
  std::unique_ptr<ShardPool> pool;  // Eigen's workers run on the fused engine's pool, as in a step
  GemmFloor(at::ScalarType dtype, int threads, bool eigen = false) {
    torch::manual_seed(0);
    std::vector<at::Tensor> weights;
    const int64_t sizes[9] = {24, 200, 100, 50, 15, 50, 100, 200, 24};
    for (int i = 0; i < 8; ++i) weights.push_back(at::rand({sizes[i + 1], sizes[i]}, at::TensorOptions().dtype(dtype)));
    share = (kBatch + threads - 1) / threads;
    const DenseProducts* products = eigen ? &dense_products(host_isa_level()) : nullptr;
    for (int t = 0; t < threads; ++t) workers.push_back(std::make_unique<GemmWorker>(weights, share, dtype, products));
    if (eigen && threads > 1) pool = std::make_unique<ShardPool>(threads);
    x = cms_rows().narrow(0, 0, kBatch).to(dtype).contiguous();
  }
  void step() {
    const int64_t n = static_cast<int64_t>(workers.size());
    if (pool) {
      pool->run(static_cast<int>(n), [&](int w, int) {
        workers[w]->run(x.narrow(0, w * share, std::min(share, kBatch - w * share)));
      }, static_cast<int>(n));
      return;
    }
    at::parallel_for(0, n, 1, [&](int64_t b, int64_t e) {
      for (int64_t w = b; w < e; ++w) workers[w]->run(x.narrow(0, w * share, std::min(share, kBatch - w * share)));
    });
  }
};

constexpr int64_t kBatchesPerEpoch = (kRows + kBatch - 1) / kBatch;

// Args: dtype bits (64, 32, 16 = bfloat16); threads; products (0 OpenBLAS through at::mm_out on
// LibTorch's threads, 1 Eigen at the host's level on the engine's pool). Time per epoch of full
// batches (196 steps).
void BM_GemmFloor(benchmark::State& state) {
  at::set_num_threads(static_cast<int>(state.range(1)));
  const at::ScalarType dtype = state.range(0) == 16 ? at::kBFloat16 : dtype_of(state);
  const bool eigen = state.range(2) == 1 && dtype != at::kBFloat16;
  GemmFloor floor(dtype, static_cast<int>(state.range(1)), eigen);
  for (auto _ : state)
    for (int64_t b = 0; b < kBatchesPerEpoch; ++b) floor.step();
  state.SetItemsProcessed(state.iterations() * kRows);
  state.SetLabel(std::string(dtype == at::kDouble ? "fp64" : dtype == at::kFloat ? "fp32" : "bf16") + ", GEMMs only, " +
                 (eigen ? std::string("eigen ") + isa_name(host_isa_level()) : std::string("openblas")) + ", " +
                 std::to_string(state.range(1)) + " worker(s)");
  at::set_num_threads(available_cpus());
}
BENCHMARK(BM_GemmFloor)
    ->ArgsProduct({{32, 64}, {1, 2}, {0, 1}})
    ->ArgsProduct({{16}, {1, 2}, {0}})
    ->Unit(benchmark::kMillisecond)
    ->MinTime(1.0);

// Args: dtype bits; threads. Counters: microseconds per step in each part.
void BM_FusedBreakdown(benchmark::State& state) {
  using Clock = std::chrono::steady_clock;
  const at::ScalarType dtype = dtype_of(state);
  const int threads = static_cast<int>(state.range(1));
  at::set_num_threads(threads);
  torch::manual_seed(0);
  auto model = make_model("AE", 24, 15);
  model->to(dtype);
  FlatAdam opt(model->parameters(), 1e-3);
  FusedDenseEngine engine(*model, opt, LossKind::kBalerSum, kBatch, threads, at::ScalarType::Undefined, {"eigen", "auto"});
  GemmFloor floor(dtype, threads, true);
  const at::Tensor x = cms_rows().to(dtype);
  double fwd_bwd_s = 0, adam_s = 0, gemm_s = 0;
  int64_t steps = 0;
  for (auto _ : state)
    for (int64_t b = 0; b + 1 < kBatchesPerEpoch; ++b) {
      const at::Tensor xb = x.narrow(0, b * kBatch, kBatch);
      const auto t0 = Clock::now();
      benchmark::DoNotOptimize(engine.forward_backward(xb));
      const auto t1 = Clock::now();
      opt.step();
      const auto t2 = Clock::now();
      floor.step();
      const auto t3 = Clock::now();
      fwd_bwd_s += std::chrono::duration<double>(t1 - t0).count();
      adam_s += std::chrono::duration<double>(t2 - t1).count();
      gemm_s += std::chrono::duration<double>(t3 - t2).count();
      ++steps;
    }
  const double n = static_cast<double>(std::max<int64_t>(steps, 1));
  state.counters["step_us"] = 1e6 * (fwd_bwd_s + adam_s) / n;
  state.counters["gemm_us"] = 1e6 * gemm_s / n;
  state.counters["rest_fwd_bwd_us"] = 1e6 * (fwd_bwd_s - gemm_s) / n;
  state.counters["adam_us"] = 1e6 * adam_s / n;
  state.SetLabel(std::string(dtype == at::kDouble ? "fp64" : "fp32") + ", " + std::to_string(threads) +
                 " worker(s); the loop also times the GEMM floor, so its own time is not the step's");
  at::set_num_threads(available_cpus());
}
BENCHMARK(BM_FusedBreakdown)->ArgsProduct({{32, 64}, {1, 2}})->Unit(benchmark::kMillisecond)->MinTime(1.0);

}  // namespace
}  // namespace balerbench

// Threads as the engine sets them: every CPU in the affinity mask, or
// BALERBENCH_THREADS=N.
int main(int argc, char** argv) {
  int threads = 0;  // the engine's default
  if (const char* env = std::getenv("BALERBENCH_THREADS")) threads = std::max(1, std::atoi(env));
  const bool flush = std::getenv("BALERBENCH_NO_FLUSH_DENORMAL") == nullptr;
  balerbench::configure_cpu_runtime(threads, flush);
  benchmark::AddCustomContext("flush_denormal", flush ? "true" : "false");
  benchmark::AddCustomContext("threads", std::to_string(at::get_num_threads()));
  benchmark::AddCustomContext("libtorch", TORCH_VERSION);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
