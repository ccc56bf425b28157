// bench_bf16.cpp: amp_bf16's products at Baler's widths, one shard's rows on one thread, as the fused
// engine runs them: the hand-written kernels (bf16_kernels.h: VDPBF16PS, or the emulation) against
// oneDNN's bfloat16 matmul primitives (made once per shape and reused, bias and LeakyReLU as
// post-ops where oneDNN fuses them) and against the fp32 step's Eigen products at the same shapes.
//   BM_Bf16Product/<kernel>/<product>/<layer>/<rows>: kernel 0 hand-written, 1 oneDNN, 2 fp32 Eigen;
//     product 0 forward (with bias and activation), 1 weight gradient, 2 input gradient (the hand
//     kernel with the activation's derivative and the bias gradient fused; oneDNN's without them);
//     layer 0-7 of AE (24 -> 200 -> 100 -> 50 -> 15 -> 50 -> 100 -> 200 -> 24); rows a shard's.
//   BM_Bf16Pass/<kernel>/<rows>: every product of a step's forward and backward for one shard (24
//     calls; kernel 0 also packs the weights, casts the input and takes the loss, as a step does).
//   BM_Bf16EpilogueFloor/<rows>: the hand-written pass with every product's reduction cut to one pair:
//     its epilogues, packing, cast and loss alone (what a faster dot product, AMX, would leave).
// Compare side by side: --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true.
// Items are floating-point operations, so items_per_second is FLOP/s.
#include <benchmark/benchmark.h>

#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>
#include <random>
#include <string>
#include <vector>

#include "harness/engine/bf16_kernels.h"
#include "harness/engine/dense_products.h"

namespace balerbench {
namespace {

constexpr int64_t kWidths[9] = {24, 200, 100, 50, 15, 50, 100, 200, 24};

std::vector<float> randoms(int64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, 0.2f);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = d(gen);
  return v;
}

// One layer's operands for every kernel, in each kernel's layouts.
struct LayerData {
  int64_t m, in, out;
  std::vector<float> w, b, a32, g32, y32, dw32, gi32, bias, db;
  std::vector<uint16_t> wf, wb, a_rm, a_rp, g_rm, g_rp, y_rm, y_rp, gi_rm, gi_rp;
  LayerData(int layer, int64_t rows) : m(rows), in(kWidths[layer]), out(kWidths[layer + 1]) {
    const Bf16Kernels& k = bf16_kernels_emulated();
    w = randoms(out * in, 1);
    b = randoms(out, 2);
    a32 = randoms(m * in, 3);
    g32 = randoms(m * out, 4);
    y32.resize(static_cast<std::size_t>(m * out));
    dw32.resize(static_cast<std::size_t>(out * in));
    gi32.resize(static_cast<std::size_t>(m * in));
    bias.resize(static_cast<std::size_t>(out));
    db.resize(static_cast<std::size_t>(in));
    const auto sized = [](int64_t n) { return std::vector<uint16_t>(static_cast<std::size_t>(n), 0); };
    wf = sized(bf16_wf_size(out, in));
    wb = sized(bf16_wb_size(out, in));
    a_rm = sized(bf16_rm_size(m, in));
    a_rp = sized(bf16_rp_size(m, in));
    g_rm = sized(bf16_rm_size(m, out));
    g_rp = sized(bf16_rp_size(m, out));
    y_rm = sized(bf16_rm_size(m, out));
    y_rp = sized(bf16_rp_size(m, out));
    gi_rm = sized(bf16_rm_size(m, in));
    gi_rp = sized(bf16_rp_size(m, in));
    k.pack_layer(w.data(), b.data(), out, in, wf.data(), wb.data(), bias.data());
    k.cast_input(a32.data(), m, in, a_rm.data(), a_rp.data());
    k.cast_input(g32.data(), m, out, g_rm.data(), g_rp.data());
  }
  double flops() const { return 2.0 * static_cast<double>(m * in * out); }
};

// oneDNN's matmul for one product, made once: bfloat16 sources, float32 accumulation.
struct OneDnnProduct {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{eng};
  dnnl::matmul prim;
  std::unordered_map<int, dnnl::memory> args;
  std::string impl;
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  dnnl::memory mem(const dnnl::memory::dims& dims, dt type, tag t, void* data) {
    return dnnl::memory({dims, type, t}, eng, data);
  }
  OneDnnProduct(int product, LayerData& d) {
    const int64_t m = d.m, in = d.in, out = d.out;
    dnnl::primitive_attr attr;
    dnnl::memory src, wei, dst, bias;
    if (product == 0) {  // y (m x out) = a (m x in) . W^T, W stored (out x in): weights (in x out) "ba"
      src = mem({m, in}, dt::bf16, tag::ab, d.a_rm.data());
      wei = mem({in, out}, dt::bf16, tag::ba, d.wb.data());  // any bfloat16 buffer of the size
      dst = mem({m, out}, dt::bf16, tag::ab, d.y_rm.data());
      bias = mem({1, out}, dt::f32, tag::ab, d.bias.data());
      dnnl::post_ops ops;
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.01f, 0.0f);  // LeakyReLU(0.01)
      attr.set_post_ops(ops);
    } else if (product == 1) {  // dW (out x in) = g^T . a, g stored (m x out): source (out x m) "ba"
      src = mem({out, m}, dt::bf16, tag::ba, d.g_rm.data());
      wei = mem({m, in}, dt::bf16, tag::ab, d.a_rm.data());
      dst = mem({out, in}, dt::f32, tag::ab, d.dw32.data());
    } else {  // gi (m x in) = g (m x out) . W (out x in)
      src = mem({m, out}, dt::bf16, tag::ab, d.g_rm.data());
      wei = mem({out, in}, dt::bf16, tag::ab, d.wb.data());
      dst = mem({m, in}, dt::bf16, tag::ab, d.gi_rm.data());
    }
    const dnnl::matmul::desc desc = product == 0 ? dnnl::matmul::desc(src.get_desc(), wei.get_desc(), bias.get_desc(),
                                                                      dst.get_desc())
                                                 : dnnl::matmul::desc(src.get_desc(), wei.get_desc(), dst.get_desc());
    const dnnl::matmul::primitive_desc pd(desc, attr, eng);
    impl = pd.impl_info_str();
    prim = dnnl::matmul(pd);
    args = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}};
    if (product == 0) args[DNNL_ARG_BIAS] = bias;
  }
  void run() {
    prim.execute(stream, args);
    stream.wait();
  }
};

void run_hand(const Bf16Kernels& k, int product, LayerData& d) {
  if (product == 0)
    k.forward(d.a_rm.data(), d.wf.data(), d.bias.data(), d.m, d.out, d.in, Activation::kLeakyRelu, d.y_rm.data(),
              d.y_rp.data());
  else if (product == 1)
    k.weight_grad(d.g_rp.data(), d.a_rp.data(), d.m, d.out, d.in, d.dw32.data());
  else
    k.input_grad(d.g_rm.data(), d.wb.data(), d.a_rm.data(), Activation::kLeakyRelu, d.m, d.out, d.in, d.gi_rm.data(),
                 d.gi_rp.data(), d.db.data());
}

void run_fp32(const DenseProducts& p, int product, LayerData& d) {
  if (product == 0)
    p.f32.forward(d.a32.data(), d.w.data(), d.y32.data(), d.m, d.out, d.in);
  else if (product == 1)
    p.f32.weight_grad(d.g32.data(), d.a32.data(), d.dw32.data(), d.m, d.out, d.in);
  else
    p.f32.input_grad(d.g32.data(), d.w.data(), d.gi32.data(), d.m, d.out, d.in);
}

const char* const kKernelNames[3] = {"hand", "onednn", "fp32 eigen"};
const char* const kProductNames[3] = {"forward", "weight_grad", "input_grad"};

// Args: kernel, product, layer, rows.
void BM_Bf16Product(benchmark::State& state) {
  omp_set_num_threads(1);  // one shard per thread, as the engine runs them
  const int kernel = static_cast<int>(state.range(0)), product = static_cast<int>(state.range(1));
  LayerData d(static_cast<int>(state.range(2)), state.range(3));
  std::string label = std::string(kKernelNames[kernel]) + " " + kProductNames[product] + " " + std::to_string(d.m) +
                      "x" + std::to_string(d.in) + "->" + std::to_string(d.out);
  if (kernel == 0) {
    const Bf16Kernels& k = bf16_kernels_native();
    label += std::string(" (") + k.name + ")";
    for (auto _ : state) run_hand(k, product, d);
  } else if (kernel == 1) {
    OneDnnProduct p(product, d);
    label += " (" + p.impl + ")";
    for (auto _ : state) p.run();
  } else {
    const DenseProducts& p = dense_products(host_isa_level());
    label += std::string(" (") + isa_name(p.level) + ")";
    for (auto _ : state) run_fp32(p, product, d);
  }
  state.SetItemsProcessed(static_cast<int64_t>(d.flops()) * state.iterations());
  state.SetLabel(label);
}
BENCHMARK(BM_Bf16Product)
    ->ArgsProduct({{0, 1, 2}, {0, 1, 2}, {0, 1, 2, 3, 4, 5, 6, 7}, {256}})
    ->Unit(benchmark::kMicrosecond);

// Args: rows. The hand-written pass with every reduction cut to one pair (each layer's forward from 2
// inputs, each input gradient from 2 outputs, each weight gradient over 2 rows): what the epilogues
// (rounding, activation, stores, column sums), the packing, the cast and the loss cost without the
// products' arithmetic. The floor a faster dot product (AMX) leaves.
void BM_Bf16EpilogueFloor(benchmark::State& state) {
  const int64_t m = state.range(0);
  const Bf16Kernels& k = bf16_kernels_native();
  std::vector<std::unique_ptr<LayerData>> layers;
  for (int l = 0; l < 8; ++l) layers.push_back(std::make_unique<LayerData>(l, m));
  for (auto _ : state) {
    for (auto& L : layers) k.pack_layer(L->w.data(), L->b.data(), L->out, L->in, L->wf.data(), L->wb.data(), L->bias.data());
    k.cast_input(layers.front()->a32.data(), m, 24, layers.front()->a_rm.data(), layers.front()->a_rp.data());
    for (auto& L : layers)  // 2 inputs: one pair per output
      k.forward(L->a_rm.data(), L->wf.data(), L->bias.data(), m, L->out, 2, Activation::kLeakyRelu, L->y_rm.data(),
                L->y_rp.data());
    LayerData& last = *layers.back();
    benchmark::DoNotOptimize(k.loss_backward(last.y_rm.data(), layers.front()->a32.data(), m, 24, 2.0f, 1.0f / 24,
                                             last.g_rm.data(), last.g_rp.data(), last.db.data()));
    for (int l = 7; l >= 0; --l) {
      LayerData& L = *layers[static_cast<std::size_t>(l)];
      k.weight_grad(L.g_rp.data(), L.a_rp.data(), 2, L.out, L.in, L.dw32.data());  // 2 rows
      if (l > 0)  // 2 outputs: one pair per input
        k.input_grad(L.g_rm.data(), L.wb.data(), L.a_rm.data(), Activation::kLeakyRelu, m, 2, L.in, L.gi_rm.data(),
                     L.gi_rp.data(), L.db.data());
    }
  }
  state.SetLabel("hand pass without its products' reductions, " + std::to_string(m) + " rows (" + k.name + ")");
}
BENCHMARK(BM_Bf16EpilogueFloor)->Arg(256)->Arg(512)->Unit(benchmark::kMicrosecond);

// Args: kernel (0 hand-written with its packing, cast and loss; 1 oneDNN's 24 products; 2 fp32 Eigen's), rows.
void BM_Bf16Pass(benchmark::State& state) {
  omp_set_num_threads(1);
  const int kernel = static_cast<int>(state.range(0));
  std::vector<std::unique_ptr<LayerData>> layers;
  std::vector<std::unique_ptr<OneDnnProduct>> dnnl_products;
  double flops = 0;
  for (int l = 0; l < 8; ++l) {
    layers.push_back(std::make_unique<LayerData>(l, state.range(1)));
    flops += 3 * layers.back()->flops();
    if (kernel == 1)
      for (int p = 0; p < 3; ++p) dnnl_products.push_back(std::make_unique<OneDnnProduct>(p, *layers.back()));
  }
  flops -= layers.front()->flops();  // no input gradient for the first layer
  const Bf16Kernels& k = bf16_kernels_native();
  const DenseProducts& fp32 = dense_products(host_isa_level());
  for (auto _ : state) {
    if (kernel == 0) {
      for (auto& L : layers) k.pack_layer(L->w.data(), L->b.data(), L->out, L->in, L->wf.data(), L->wb.data(), L->bias.data());
      k.cast_input(layers.front()->a32.data(), layers.front()->m, 24, layers.front()->a_rm.data(),
                   layers.front()->a_rp.data());
      LayerData& last = *layers.back();
      benchmark::DoNotOptimize(k.loss_backward(last.y_rm.data(), layers.front()->a32.data(), last.m, 24, 2.0f, 1.0f / 24,
                                               last.g_rm.data(), last.g_rp.data(), last.db.data()));
    }
    for (int p = 0; p < 3; ++p)
      for (int l = 0; l < 8; ++l) {
        if (p == 2 && l == 0) continue;
        if (kernel == 0) run_hand(k, p, *layers[l]);
        else if (kernel == 1) dnnl_products[static_cast<std::size_t>(3 * l + p)]->run();
        else run_fp32(fp32, p, *layers[l]);
      }
  }
  state.SetItemsProcessed(static_cast<int64_t>(flops) * state.iterations());
  state.SetLabel(std::string(kKernelNames[kernel]) + " pass, " + std::to_string(state.range(1)) + " rows" +
                 (kernel == 0 ? std::string(" (") + k.name + ")" : std::string()));
}
BENCHMARK(BM_Bf16Pass)->ArgsProduct({{0, 1, 2}, {256, 512}})->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace balerbench

BENCHMARK_MAIN();
