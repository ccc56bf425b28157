// run_setup.cpp: see run_setup.h.
#include "harness/engine/run_setup.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/version.h>

#include <sys/resource.h>

#include <algorithm>
#include <random>
#include <vector>

#include "datasets/error.h"
#include "harness/engine/runtime.h"
#include "models/architecture.h"

namespace balerbench {

using nlohmann::json;

// A 2D file with a 1D model, the reverse, or a data_dimension that disagrees.
void check_dimensions(const RunConfig& c, const Dataset& ds) {
  const int model_dim = model_data_dimension(c.model_name);
  const int data_dim = ds.data_dimension();
  if (c.data_dimension && *c.data_dimension != data_dim)
    throw InputError(ds.source_path + ": data_dimension is " + std::to_string(*c.data_dimension) +
                         " in the config but 'data' has shape of a " + std::to_string(data_dim) + "D file",
                     "remove data_dimension: balerbench reads it from the array's shape");
  if (model_dim != data_dim)
    throw InputError(ds.source_path + ": model " + c.model_name + " is for " +
                         (model_dim == 1 ? "1D tables" : "2D frames") + " but 'data' is " +
                         (data_dim == 1 ? "a 1D table (N, C)" : "2D frames (N, H, W)"),
                     data_dim == 2 ? "use model_name CFD_dense_AE for frames" : "use model_name AE for tables");
  if (!c.type_list.empty() && data_dim == 1 && static_cast<int64_t>(c.type_list.size()) != ds.features())
    throw InputError("type_list has " + std::to_string(c.type_list.size()) + " entries but " + ds.source_path +
                         " has " + std::to_string(ds.features()) + " columns",
                     "one type per column");
}

Normalization identity(int64_t features) {
  Normalization n;
  n.min = at::zeros({features}, at::kDouble);
  n.range = at::ones({features}, at::kDouble);
  return n;
}

void configure_runtime(const RunConfig& c) {
  configure_cpu_runtime(static_cast<int>(c.threads), c.flush_denormal);
  at::globalContext().setDeterministicAlgorithms(c.deterministic_algorithm,
                                                 /*warn_only=*/false);
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
  // Baler's deterministic_algorithm picks deterministic kernels. PyTorch 2.1+ also fills every new
  // tensor with NaN under it, a debugging aid that costs a fill kernel per allocation: on an H100,
  // 35 extra kernels in each amp_fp16 training step, more than a tenth of the step. Every tensor
  // balerbench allocates is written before it is read, so the kernels stay deterministic without it.
  at::globalContext().setDeterministicFillUninitializedMemory(false);
#endif
}

at::ScalarType latent_scalar_type(const RunConfig& c, at::ScalarType model_dtype) {
  if (c.latent_dtype == "float64") return at::kDouble;
  if (c.latent_dtype == "float32") return at::kFloat;
  if (c.latent_dtype == "float16") return at::kHalf;
  return model_dtype;
}

// The config's precision for this model on this device, with the model moved
// to the device and converted to the policy's parameter dtype.
PrecisionPolicy apply_precision(const RunConfig& c, AutoEncoder& model, c10::Device device) {
  PrecisionPolicy p = resolve_precision(c.precision, model.baler_dtype(), device);
  model.to(device, p.param_dtype);
  return p;
}

int cuda_allocator_index(c10::Device device) { return device.is_cuda() ? std::max<int>(0, device.index()) : -1; }

double process_cpu_s() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// The "profile" section of a report: phase times and how they were taken.
json profile_json(const RunConfig& c, c10::Device device, const PhaseTimes& phases) {
  return {{"phases", phases.to_json()},
          {"sync", c.profile_sync},
          {"timer", device.is_cuda() ? (c.profile_sync ? "host clock, device synchronised at each edge" : "CUDA events")
                                     : "host clock"},
          {"phase_sum_s", phases.sum_s()}};
}

at::Tensor split_permutation(int64_t n, uint64_t seed, c10::Device device) {
  std::vector<int64_t> idx(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) idx[i] = i;
  std::mt19937_64 rng(seed + 1);
  for (int64_t i = n - 1; i > 0; --i) std::swap(idx[i], idx[rng() % static_cast<uint64_t>(i + 1)]);
  return at::tensor(idx, at::kLong).to(device);  // index_select wants the index on the data's device
}

// (N, F) split into train and validation rows with a seeded shuffle (sklearn's
// train_test_split shuffles too; its exact permutation is numpy's, not ours).
std::pair<at::Tensor, at::Tensor> split(const at::Tensor& x, double test_size, uint64_t seed) {
  if (test_size <= 0) return {x, at::Tensor()};
  const int64_t n = x.size(0);
  const auto n_val = static_cast<int64_t>(std::ceil(test_size * static_cast<double>(n)));
  if (n_val >= n)
    throw InputError("test_size " + std::to_string(test_size) + " leaves no training rows out of " + std::to_string(n),
                     "lower test_size");
  const at::Tensor perm = split_permutation(n, seed, x.device());
  return {x.index_select(0, perm.narrow(0, n_val, n - n_val)), x.index_select(0, perm.narrow(0, 0, n_val))};
}

json engine_json(const TrainResult& r) {
  json j = engine_json(EngineDecision{r.engine, r.engine_note});
  if (r.engine_workers > 0) j["workers"] = r.engine_workers;  // an engine that split the batches
  return j;
}

json engine_json(const EngineDecision& decision) {
  json j = {{"name", engine_name(decision.engine)}};
  if (!decision.note.empty()) j["note"] = decision.note;
  return j;
}

json dataset_json(const Dataset& ds) {
  return {{"path", ds.source_path},
          {"shape", ds.original_shape},
          {"dtype", ds.source_dtype},
          {"features", ds.features()},
          {"data_dimension", ds.data_dimension()}};
}

TrainOptions train_options(const RunConfig& c) {
  TrainOptions o;
  o.epochs = c.epochs;
  o.batch_size = c.batch_size;
  o.lr = c.lr;
  o.loss = parse_loss_kind(c.loss);
  o.shuffle = c.shuffle;
  o.seed = static_cast<uint64_t>(c.seed);
  o.early_stopping = c.early_stopping;
  o.early_stopping_patience = c.early_stopping_patience;
  o.min_delta = c.min_delta;
  o.lr_scheduler = c.lr_scheduler;
  o.lr_scheduler_patience = c.lr_scheduler_patience;
  o.progress = c.progress;
  o.progress_context.line_interval_s = c.progress_interval_s;
  o.scaler = {c.grad_scaler.init_scale, c.grad_scaler.growth_factor, c.grad_scaler.backoff_factor,
              c.grad_scaler.growth_interval};
  o.engine = c.engine;
  o.cuda_graphs = c.cuda_graphs;
  o.profile = c.profile;
  o.profile_sync = c.profile_sync;
  return o;
}

// The policy, the dtypes actually used and, with loss scaling, the scale
// history.
json precision_json(const TrainResult& r) {
  json j = r.precision.to_json();
  j["grad_scaler"] = r.loss_scaling ? r.scaler.to_json() : json(nullptr);
  return j;
}

// Integer columns of type_list: rounded to nearest (departure 3) or truncated
// toward zero (Baler).
void cast_integer_columns(at::Tensor& x, const RunConfig& c, int64_t features) {
  if (c.type_list.empty()) return;
  if (static_cast<int64_t>(c.type_list.size()) != features)
    throw InputError("type_list has " + std::to_string(c.type_list.size()) + " entries but the data have " +
                     std::to_string(features) + " columns");
  std::vector<uint8_t> is_int(static_cast<std::size_t>(features));
  for (int64_t j = 0; j < features; ++j) is_int[j] = c.type_list[j].rfind("int", 0) == 0;
  const at::Tensor mask = at::tensor(is_int, at::kByte).to(x.device(), at::kBool);
  x = at::where(mask, c.truncate ? x.trunc() : x.round(), x);
}

// Errors of y against the input. Normalized errors divide by each column's
// range for tables (columns have different units) and by the global range for
// frames (every pixel is the same quantity; a pixel that barely changes over
// time would otherwise dominate).
json reconstruction_json(const Dataset& in, const at::Tensor& y) {
  const at::Tensor diff = y - in.data;
  at::Tensor scale;
  if (in.data_dimension() == 1) {
    scale = Normalization::fit(in.data).range;
  } else {
    const double range = (in.data.max() - in.data.min()).item<double>();
    scale = at::full({in.features()}, range > 0 ? range : 1.0, at::kDouble);
  }
  const at::Tensor ndiff = diff / scale;
  const at::Tensor col_rmse = ndiff.pow(2).mean(0).sqrt();
  const int64_t worst = col_rmse.argmax().item<int64_t>();
  json where;
  if (in.data_dimension() == 2) {
    const int64_t w = in.original_shape[2];
    where = "pixel (" + std::to_string(worst / w) + ", " + std::to_string(worst % w) + ")";
  } else {
    where = worst < static_cast<int64_t>(in.names.size()) ? json(in.names[worst]) : json(worst);
  }
  return {{"rmse", diff.pow(2).mean().sqrt().item<double>()},
          {"max_abs_error", diff.abs().max().item<double>()},
          {"normalized_rmse", ndiff.pow(2).mean().sqrt().item<double>()},
          {"normalization", in.data_dimension() == 1 ? "per-column range" : "global range"},
          {"worst_feature", where},
          {"worst_feature_normalized_rmse", col_rmse[worst].item<double>()}};
}

}  // namespace balerbench
