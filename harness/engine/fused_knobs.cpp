// fused_knobs.cpp: the fused engine's section of the run config: its keys, their defaults, their
// strict reading and their words in the configuration reference (engine_knobs.h). The keys keep
// their names at the config's root ("fused_products"), as configs and stored trials spell them.
#include <string>
#include <vector>

#include "harness/engine/fused_engine.h"

namespace balerbench {
namespace {

constexpr const char* kProducts = "fused_products";
constexpr const char* kIsa = "fused_isa";
constexpr const char* kShards = "fused_shards";
constexpr int64_t kMaxShards = 256;

void set_defaults(EngineKnobs& k) {
  k.set(kProducts, "auto");
  k.set(kIsa, "auto");
  k.set(kShards, 0);  // the machine's CPUs, at most 8 (FusedDenseEngine::default_shards)
}

void read(StrictReader& r, EngineKnobs& k) {
  std::string products = k.get<std::string>(kProducts);
  std::string isa = k.get<std::string>(kIsa);
  int64_t shards = k.get<int64_t>(kShards);
  r.choice(kProducts, products, {"auto", "eigen", "openblas"});
  r.choice(kIsa, isa, {"auto", "generic", "avx2", "avx512"});
  r.integer(kShards, shards, 0);
  if (shards > kMaxShards)
    r.fail(kShards, "at most 256 shards, got " + std::to_string(shards), "0 = the machine's CPUs");
  k.set(kProducts, products);
  k.set(kIsa, isa);
  k.set(kShards, shards);
}

std::vector<ConfigKeyDoc> docs() {
  return {
      {"/fused_products", "the CPU fused engine's matrix products: `eigen` (compiled per instruction-set level, chosen from CPUID), `openblas` (LibTorch's BLAS), or `auto` (Eigen; both are timed on the step's shapes when the engine is made and the report gives the times, with a hint when OpenBLAS was 15% faster)", ""},
      {"/fused_isa", "the instruction-set level of the CPU fused engine's kernels (Eigen's products, its element-wise loops and Adam; with `fused_products = openblas`, the loops and Adam): `generic` (SSE2), `avx2` (with FMA), `avx512`, or `auto` (the widest this CPU and OS run); a level the CPU lacks is an error. The loops give the same bits at every level", ""},
      {"/fused_shards", "the parts the CPU fused engine cuts each batch into, run by the threads: the result depends on the shards alone, never on the threads (0 = this machine's CPUs, at most 8; set it to get another machine's bits)", ""},
  };
}

}  // namespace

const EngineKnobSection& fused_knob_section() {
  static const EngineKnobSection section{set_defaults, read, docs};
  return section;
}

FusedProductsChoice fused_products_choice(const EngineKnobs* knobs, bool adaptive_threads) {
  FusedProductsChoice choice;
  if (knobs) {
    choice.backend = knobs->get<std::string>(kProducts);
    choice.isa = knobs->get<std::string>(kIsa);
  }
  choice.adaptive_threads = adaptive_threads;
  return choice;
}

int fused_shards(const EngineKnobs* knobs, int workers) {
  const int shards = knobs ? static_cast<int>(knobs->get<int64_t>(kShards)) : 0;
  return shards > 0 ? shards : workers > 0 ? workers : FusedDenseEngine::default_shards();
}

}  // namespace balerbench
