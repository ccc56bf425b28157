// cmd_model_info.cpp: `balerbench model-info`: per-layer shapes, parameters,
// MACs and FLOPs per sample and per batch, and docs/reference_tables.md T1's
// "operations" (in*out*batch + out), with totals.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "harness/cli/commands.h"
#include "harness/cli/option_checks.h"
#include "models/architecture.h"

namespace balerbench::cli {
namespace {

struct Args {
  std::string model;
  int64_t features = 0, batch_size = 512;
  double ratio = 0;
  std::string format = "md";
};

std::string group(int64_t v) {  // 31283939 -> "31,283,939"
  std::string s = std::to_string(v < 0 ? -v : v), out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i && (s.size() - i) % 3 == 0) out += ',';
    out += s[i];
  }
  return v < 0 ? "-" + out : out;
}

int run_model_info(const Args& a) {
  const Architecture arch = describe_model(a.model, a.features, latent_size(a.features, a.ratio));
  const int64_t b = a.batch_size;
  nlohmann::json layers = nlohmann::json::array();
  int64_t t1_total = 0;
  for (const auto& l : arch.layers) {
    layers.push_back({{"name", l.name}, {"kind", l.kind}, {"part", l.part}, {"in", l.in_features},
                      {"out", l.out_features}, {"after", l.after}, {"parameters", l.parameters()},
                      {"macs_per_sample", l.macs_per_sample()}, {"flops_per_sample", 2 * l.macs_per_sample()},
                      {"macs_per_batch", l.macs_per_sample() * b}, {"flops_per_batch", 2 * l.macs_per_sample() * b},
                      {"t1_operations_per_batch", l.t1_operations(b)}});
    t1_total += l.t1_operations(b);
  }
  const int64_t macs = arch.macs_per_sample();
  nlohmann::json j = {{"model", arch.model_name}, {"dtype", arch.dtype}, {"n_features", arch.n_features},
                      {"latent", arch.latent}, {"compression_ratio", a.ratio}, {"batch_size", b},
                      {"layers", layers},
                      {"total", {{"parameters", arch.parameters()}, {"macs_per_sample", macs},
                                 {"flops_per_sample", 2 * macs}, {"macs_per_batch", macs * b},
                                 {"flops_per_batch", 2 * macs * b}, {"t1_operations_per_batch", t1_total}}},
                      {"conventions", {{"parameters", "linear: in*out + out; batchnorm: 2*n (affine)"},
                                       {"macs", "linear: in*out per sample (bias adds not counted); batchnorm: n"},
                                       {"flops", "2 per MAC"},
                                       {"t1_operations", "docs/reference_tables.md, T1: in*out*batch + out"}}}};
  if (a.format == "json") {
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("Model %s (%s), %lld features -> latent %lld (compression_ratio %g), batch %lld\n\n",
              arch.model_name.c_str(), arch.dtype.c_str(), static_cast<long long>(arch.n_features),
              static_cast<long long>(arch.latent), a.ratio, static_cast<long long>(b));
  std::printf("| layer | kind | in -> out | after | parameters | MACs/sample | FLOPs/sample | MACs/batch | FLOPs/batch | T1 operations/batch |\n");
  std::printf("|---|---|---|---|---:|---:|---:|---:|---:|---:|\n");
  for (const auto& l : arch.layers)
    std::printf("| %s | %s | %lld -> %lld | %s | %s | %s | %s | %s | %s | %s |\n", l.name.c_str(), l.kind.c_str(),
                static_cast<long long>(l.in_features), static_cast<long long>(l.out_features),
                l.after.empty() ? "-" : l.after.c_str(), group(l.parameters()).c_str(),
                group(l.macs_per_sample()).c_str(), group(2 * l.macs_per_sample()).c_str(),
                group(l.macs_per_sample() * b).c_str(), group(2 * l.macs_per_sample() * b).c_str(),
                group(l.t1_operations(b)).c_str());
  std::printf("| **total** | | | | %s | %s | %s | %s | %s | %s |\n\n", group(arch.parameters()).c_str(),
              group(macs).c_str(), group(2 * macs).c_str(), group(macs * b).c_str(), group(2 * macs * b).c_str(),
              group(t1_total).c_str());
  std::printf("Conventions: parameters = in*out + out (batchnorm: 2n); MACs = in*out per sample, bias adds not\n"
              "counted (batchnorm: n); FLOPs = 2 x MACs; T1 operations = in*out*batch + out, the convention of\n"
              "the published table (docs/reference_tables.md, T1), which counts each bias once per batch.\n");
  return 0;
}

}  // namespace

void register_model_info(CLI::App& app, Action& run) {
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("model-info", "Per-layer parameters, MACs and FLOPs of a Baler model");
  cmd->add_option("--model", a->model, "AE, AE_Dropout_BN, CFD_dense_AE or FPGA_prototype_model")->required();
  cmd->add_option("--features", a->features, "input features (columns, or H*W)")
      ->required()
      ->check(in_range(1, 1e9, "INT"));  // counts of up to 1e9 x 200 weights stay exact in int64
  cmd->add_option("--compression-ratio", a->ratio, "latent = ceil(features / ratio)")->required();
  cmd->add_option("--batch-size", a->batch_size, "batch size for the per-batch columns (default 512)")
      ->check(positive_count());
  cmd->add_option("--format", a->format, "md or json")->check(CLI::IsMember({"md", "json"}));
  cmd->callback([a, &run] { run = [a] { return run_model_info(*a); }; });
}

}  // namespace balerbench::cli
