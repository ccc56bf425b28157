// cycle.cpp: see cycle.h.
#include "harness/engine/cycle.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <random>

#include <sys/resource.h>

#include "datasets/cycle_files.h"
#include "datasets/dataset.h"
#include "datasets/error.h"
#include "datasets/normalizer.h"
#include "datasets/paths.h"
#include "harness/base/clock.h"
#include "harness/energy/emissions_csv.h"
#include "harness/energy/energy_session.h"
#include "harness/engine/codec.h"
#include "harness/engine/memory_peak.h"
#include "harness/engine/phase_timer.h"
#include "harness/engine/precision.h"
#include "harness/engine/run_setup.h"
#include "harness/engine/runtime.h"
#include "harness/engine/torch_compat.h"
#include "harness/engine/trainer.h"
#include "harness/engine/training_session.h"
#include "harness/monitor/live_metrics.h"
#include "harness/monitor/monitor.h"
#include "harness/engine/system_description.h"
#include "models/autoencoder.h"

namespace balerbench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr char kOutFolderHint[] = "give --out a folder that can be created and written";

using Layout = CycleFiles;  // datasets/cycle_files.h: --out DIR's layout, or a Baler project's

void write_json(const fs::path& path, const json& j) {
  const std::string text = j.dump(2) + "\n";
  write_file_atomic(path.string(), std::vector<uint8_t>(text.begin(), text.end()));
}

// A Baler project's model.pt holds the model's Baler dtype, whatever precision trained it.
std::optional<at::ScalarType> saved_dtype(const Layout& L, const AutoEncoder& model) {
  if (!L.baler_project) return std::nullopt;
  return model.baler_dtype();
}

// Baler's decompressed data: the model's Baler dtype, or float64 when de-normalized (numpy
// promotes the float32 output times the float64 range).
at::Tensor as_baler_decompresses(const at::Tensor& decoded, const Normalization* norm, const AutoEncoder& model) {
  if (!norm) return decoded.to(model.baler_dtype());
  return norm->invert(decoded.to(at::kDouble));
}

std::vector<int64_t> feature_shape(const std::vector<int64_t>& shape) {
  return std::vector<int64_t>(shape.begin() + 1, shape.end());
}

std::shared_ptr<AutoEncoder> load_trained_model(const RunConfig& c, const Layout& L, int64_t features, int64_t latent) {
  if (!fs::exists(L.model()))
    throw InputError(L.model() + ": no trained model", "run `balerbench train` with the same --out first");
  auto model = make_model(c.model_name, features, latent);
  load_state_dict(*model, L.model());
  return model;
}

Normalization training_normalization(const RunConfig& c, const Layout& L, int64_t features) {
  if (!c.normalizes()) return identity(features);
  if (!fs::exists(L.norm()))
    throw InputError(L.norm() + ": no normalization features", "run `balerbench train` with the same --out first");
  const NpyArray a = read_npy(L.norm());
  if (a.numel() == 0)
    throw InputError(L.norm() + ": the model was trained without normalization",
                     "use the same apply_normalization/custom_norm settings as "
                     "for training");
  return Normalization::from_npy(a, features, L.norm());
}

json versions_json(const RunConfig& c) {
  return {{"libtorch", torch_version_string()},
          {"threads", at::get_num_threads()},
          {"flush_denormal", c.flush_denormal}};
}

int64_t file_bytes(const std::string& p) { return fs::exists(p) ? static_cast<int64_t>(fs::file_size(p)) : -1; }

NpyArray names_array(const Dataset& ds) {
  // Baler's CFD files store names as an empty float64 array.
  if (ds.names.empty()) return NpyArray::from_doubles({0}, {});
  return NpyArray::from_strings(ds.names);
}

json cuda_graph_json(c10::Device device, const TrainResult& r) {
  if (!device.is_cuda()) return {{"used", false}, {"note", "CUDA only"}};
  json j = {{"used", r.cuda_graph}, {"replays", r.graph_replays}};
  if (!r.cuda_graph_note.empty()) j["note"] = r.cuda_graph_note;
  return j;
}

json train_report(const RunConfig& c, const Dataset& ds, const AutoEncoder& model, const c10::Device& device,
                  const TrainResult& r, const Normalization& norm) {
  json epochs = json::array();
  double epoch_s = 0;
  for (const auto& e : r.epoch_records) {
    json row = {{"epoch", e.epoch}, {"train_loss", e.train_loss}, {"val_loss", e.val_loss},
                {"lr", e.lr},       {"duration_s", e.duration_s}, {"early_stopping_counter", e.early_stopping_counter},
                {"eval_duration_s", e.eval_duration_s}};
    if (r.loss_scaling) {
      row["loss_scale"] = e.loss_scale;
      row["skipped_steps"] = e.skipped_steps;
    }
    epochs.push_back(row);
    epoch_s += e.duration_s;
  }
  const auto n_run = static_cast<int64_t>(r.epoch_records.size());
  const Architecture& a = model.architecture();
  return {{"command", "train"},
          {"dataset", dataset_json(ds)},
          {"model",
           {{"name", a.model_name},
            {"dtype", dtype_name(model.dtype())},
            {"baler_dtype", a.dtype},
            {"n_features", a.n_features},
            {"latent", a.latent},
            {"parameters", count_parameters(model)}}},
          {"device", device.str()},
          {"epochs_run", n_run},
          {"early_stopped", r.early_stopped},
          {"train_rows", r.train_rows},
          {"val_rows", r.val_rows},
          {"zero_range_features", norm.zero_range_features()},
          {"final_train_loss", r.epoch_records.back().train_loss},
          {"final_val_loss", r.epoch_records.back().val_loss},
          {"train_s", r.duration_s},
          {"mean_epoch_duration_s", epoch_s / static_cast<double>(n_run)},
          {"rows_per_s", static_cast<double>(r.train_rows * n_run) / std::max(epoch_s, 1e-12)},
          {"precision", precision_json(r)},
          {"engine", engine_json(r)},
          {"threads", r.threads},
          {"cuda_graph", cuda_graph_json(device, r)},
          {"optimizer", {{"name", "adam"}, {"path", r.optimizer_path}}},
          {"epochs", epochs},
          {"versions", versions_json(c)}};
}

// The original data shape: stored by balerbench's compress; for a file
// compressed by Baler, read from the input file as Baler does.
std::vector<int64_t> original_shape_of(const NpzMembers& m, const RunConfig& c, const std::string& src, int64_t rows) {
  std::vector<int64_t> shape;
  if (auto s = m.find("original_shape"); s != m.end()) {
    for (double v : s->second.to_doubles()) shape.push_back(static_cast<int64_t>(v));
  } else {
    shape = load_dataset(c.input_path).original_shape;
  }
  if (shape.size() < 2 || shape[0] != rows)
    throw InputError(src + ": original_shape does not match the latent code's " + std::to_string(rows) + " rows");
  return shape;
}

// The config's model must be the one the file was compressed with.
void check_decompress_model(const NpzMembers& m, const RunConfig& c, const std::string& src, int64_t features,
                            int64_t latent, int dims) {
  if (auto n = m.find("model_name"); n != m.end() && n->second.to_strings() != std::vector<std::string>{c.model_name})
    throw InputError(
        src + ": compressed with model " + n->second.to_strings().at(0) + " but the config says " + c.model_name,
        "decompress with the config used to compress");
  const int64_t expected = latent_size(features, c.compression_ratio);
  if (expected != latent)
    throw InputError(src + ": the latent code has " + std::to_string(latent) + " columns but " + c.model_name +
                         " with compression_ratio " + nlohmann::json(c.compression_ratio).dump() + " gives " +
                         std::to_string(expected),
                     "decompress with the config used to compress");
  if (dims != model_data_dimension(c.model_name))
    throw InputError(src + ": the compressed data are " + std::to_string(dims) + "D but " + c.model_name + " is for " +
                     std::to_string(model_data_dimension(c.model_name)) + "D data");
}

// The power limit in force for the trial labels: the first GPU's (NVML, or the
// simulated one), in W.
std::string power_limit_label(const EnergySession* session) {
  if (!session) return "none";
  for (const GpuLabel& g : session->gpus())
    if (g.power_limit_w) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g", *g.power_limit_w);
      return buf;
    }
  return "none";
}

// The live side of one command: metrics for the progress line, and the
// exporters when the config's monitoring section asks for them. Opened before
// the energy session, so a port in use fails before anything is measured.
struct LiveRun {
  LiveRun(const RunConfig& c, const char* command)
      : live(command), run_id(make_run_id()), monitor(open_monitor(c.monitoring, live, run_id)) {}
  // Feeds the session's snapshots to the live metrics, and starts the trial (ended by finish(), or
  // when the command throws).
  void begin(EnergySession* session, const RunConfig& c, const PrecisionPolicy& policy) {
    if (session) feed_live_metrics(live, *session);
    TrialLabels t;
    t.experiment = c.monitoring.experiment;
    t.batch_size = c.batch_size;
    t.precision = policy.name();
    t.power_limit_w = power_limit_label(session);
    trial = std::make_unique<LiveTrial>(&live, t);
  }
  // After the energy session has finished (no more snapshots).
  void finish(json& report) {
    if (monitor) report["monitoring"] = monitor->finish();  // lingers with the trial's final values
    if (trial) trial->end();
  }
  LiveMetrics live;
  std::string run_id;
  std::unique_ptr<Monitor> monitor;
  std::unique_ptr<LiveTrial> trial;
};

// Ends the session, stores energy_report.json and emissions.csv in `dir`, puts the report under
// "energy", and adds the GPUs' memory at the phase's peak (NVML) to "memory".
void finish_energy(EnergySession* session, const fs::path& dir, const std::string& command, json& report) {
  if (!session) return;
  session->finish();
  report["energy"] = session->write_outputs(dir.string(), command);
  const WindowResult* phase = session->phases().find(command);
  if (phase && report.contains("memory")) add_gpu_memory_peak(report["memory"], phase->gpu_memory_peak_mib());
}

}  // namespace

json run_train(const RunConfig& c, const CycleFiles& files, const std::function<void()>& before_training) {
  const auto t_total = Clock::now();
  const Layout& L = files;
  check_output_folder(L.training.string(), kOutFolderHint);  // before any work, not after training
  if (c.energy.enabled) check_emissions_csv((L.training / "emissions.csv").string());
  check_output_file(L.model(), kOutFolderHint);  // a Baler project keeps model.pt in compressed_output/
  configure_runtime(c);
  LiveRun run(c, "train");
  const std::unique_ptr<EnergySession> energy = open_energy_session(c.energy, resolve_device(c.device), run.run_id);
  const Dataset ds = load_dataset(c.input_path);
  const c10::Device device = resolve_device(c.device);
  TrainingSession session(c, ds, device, energy.get(), &run.live);
  AutoEncoder& model = session.model();
  const Normalization& norm = session.normalization();
  TrainOptions o = session.options();
  if (c.intermittent_model_saving) {
    o.save_every_epochs = c.intermittent_saving_patience;
    o.save_checkpoint = [&](int64_t e) {
      save_state_dict(model, L.checkpoint(e), saved_dtype(L, model));
    };
  }
  if (before_training) before_training();
  session.choose_threads(o);  // a calibration, if any, outside the training's windows and trace
  run.begin(energy.get(), c, session.policy());
  std::unique_ptr<ProfilerTrace> trace;
  if (!c.profile_trace.empty()) trace = std::make_unique<ProfilerTrace>(c.profile_trace);
  MemoryPeakTracker memory(cuda_allocator_index(device));
  memory.start();
  const TrainResult r = session.train(o);
  const MemoryPeak train_memory = memory.finish();
  json trace_json = nullptr;
  if (trace) trace_json = {{"path", c.profile_trace}, {"events", trace->finish()}};

  std::vector<double> losses;
  for (const auto& e : r.epoch_records) losses.push_back(e.train_loss);
  for (const auto& e : r.epoch_records) losses.push_back(e.val_loss);
  save_state_dict(model, L.model(), saved_dtype(L, model));
  write_npy(L.loss(), NpyArray::from_doubles({2, static_cast<int64_t>(r.epoch_records.size())}, losses));
  write_npy(L.norm(), c.normalizes() ? norm.to_npy(feature_shape(ds.original_shape)) : NpyArray::from_doubles({0}, {}));
  json report = train_report(c, ds, model, device, r, norm);
  report["memory"] = train_memory.to_json();
  report["total_duration_s"] = seconds_since(t_total);
  report["system"] = current_system();
  if (c.profile) {
    report["profile"] = profile_json(c, device, r.phases);
    report["profile"]["trace"] = trace_json;
    report["process_cpu_s"] = process_cpu_s();
  }
  write_json(L.training / "run_config.json", c.to_json());
  finish_energy(energy.get(), L.training, "train", report);
  run.finish(report);
  write_json(L.training / "training_report.json", report);
  return report;
}

json run_compress(const RunConfig& c, const CycleFiles& files) {
  const auto t_total = Clock::now();
  const Layout& L = files;
  check_output_folder(L.compressed.string(), kOutFolderHint);
  if (c.energy.enabled) check_emissions_csv((L.compressed / "emissions.csv").string());
  configure_runtime(c);
  LiveRun run(c, "compress");
  const std::unique_ptr<EnergySession> energy = open_energy_session(c.energy, resolve_device(c.device), run.run_id);
  const Dataset ds = load_dataset(c.input_path);
  check_dimensions(c, ds);
  const int64_t features = ds.features();
  const int64_t latent = latent_size(features, c.compression_ratio);
  auto model = load_trained_model(c, L, features, latent);
  const c10::Device device = resolve_device(c.device);
  const PrecisionPolicy policy = apply_precision(c, *model, device);
  const Normalization norm = training_normalization(c, L, features);
  const EngineDecision engine = codec_decision(choose_engine(c.engine, *model, policy, device), policy);
  const std::unique_ptr<FusedDenseEngine> fused = codec_engine(engine, *model, c);
  run.begin(energy.get(), c, policy);
  PhaseTimer timer(device, c.profile, c.profile_sync);
  at::Tensor z;
  MemoryPeakTracker memory(cuda_allocator_index(device));
  memory.start();
  const double encode_s = measure_window(energy.get(), "compress", [&] {
                            z = encode_rows(*model, ds.data, c.normalizes() ? &norm : nullptr,
                                            latent_scalar_type(c, policy.param_dtype), c.codec_chunk_rows, policy,
                                            &timer, fused.get());
                          }).duration_s;
  const MemoryPeak encode_memory = memory.finish();
  std::vector<std::pair<std::string, NpyArray>> members;
  members.emplace_back("data", tensor_to_npy(z, {ds.rows(), latent}));
  members.emplace_back("names", names_array(ds));
  members.emplace_back("normalization_features", c.normalizes() ? norm.to_npy(feature_shape(ds.original_shape))
                                                                : NpyArray::from_doubles({0}, {}));
  if (!L.baler_project) {  // Baler's compressed.npz holds the three keys above only
    members.emplace_back("original_shape",
                         NpyArray::from_int64({static_cast<int64_t>(ds.original_shape.size())}, ds.original_shape));
    members.emplace_back("model_name", NpyArray::from_strings({c.model_name}));
  }
  write_npz(L.compressed_npz(), members, c.extra_compression);
  json report = {{"command", "compress"},
                 {"dataset", dataset_json(ds)},
                 {"latent_shape", {ds.rows(), latent}},
                 {"latent_dtype", dtype_name(z.scalar_type())},
                 {"encode_duration_s", encode_s},
                 {"rows_per_s", static_cast<double>(ds.rows()) / std::max(encode_s, 1e-12)},
                 {"output", L.compressed_npz()},
                 {"output_bytes", file_bytes(L.compressed_npz())},
                 {"precision", policy.to_json()},
                 {"engine", engine_json(engine)},
                 {"device", device.str()},
                 {"memory", encode_memory.to_json()}};
  report["total_duration_s"] = seconds_since(t_total);
  report["system"] = current_system();
  if (c.profile) {
    report["profile"] = profile_json(c, device, timer.totals());
    report["process_cpu_s"] = process_cpu_s();
  }
  finish_energy(energy.get(), L.compressed, "compress", report);
  run.finish(report);
  write_json(L.compressed / "compress_report.json", report);
  return report;
}

json run_decompress(const RunConfig& c, const CycleFiles& files) {
  const auto t_total = Clock::now();
  const Layout& L = files;
  check_output_folder(L.decompressed.string(), kOutFolderHint);
  if (c.energy.enabled) check_emissions_csv((L.decompressed / "emissions.csv").string());
  configure_runtime(c);
  LiveRun run(c, "decompress");
  const std::unique_ptr<EnergySession> energy = open_energy_session(c.energy, resolve_device(c.device), run.run_id);
  const std::string src = L.compressed_npz();
  if (!fs::exists(src))
    throw InputError(src + ": no compressed file", "run `balerbench compress` with the same --out first");
  const NpzMembers m = read_npz(src);
  auto it = m.find("data");
  if (it == m.end()) throw InputError(src + ": no 'data' array (the latent code)", "was it written by compress?");
  const NpyArray& code = it->second;
  if (code.shape.size() != 2 || code.shape[1] == 0)
    throw InputError(src + ": 'data' must be (N, latent), got " + std::to_string(code.shape.size()) + " dimensions");
  const std::vector<int64_t> shape = original_shape_of(m, c, src, code.shape[0]);
  int64_t features = 1;
  for (std::size_t i = 1; i < shape.size(); ++i) features *= shape[i];
  const int dims = static_cast<int>(shape.size()) - 1;
  check_decompress_model(m, c, src, features, code.shape[1], dims);
  auto model = load_trained_model(c, L, features, code.shape[1]);
  const c10::Device device = resolve_device(c.device);
  const PrecisionPolicy policy = apply_precision(c, *model, device);
  const Normalization norm = training_normalization(c, L, features);
  const EngineDecision engine = codec_decision(choose_engine(c.engine, *model, policy, device), policy);
  const std::unique_ptr<FusedDenseEngine> fused = codec_engine(engine, *model, c);
  run.begin(energy.get(), c, policy);
  PhaseTimer timer(device, c.profile, c.profile_sync);
  at::Tensor x;
  MemoryPeakTracker memory(cuda_allocator_index(device));
  memory.start();
  const double decode_s = measure_window(energy.get(), "decompress", [&] {
                            x = decode_rows(*model, npy_to_tensor(code),
                                            c.normalizes() && !L.baler_project ? &norm : nullptr,
                                            c.codec_chunk_rows, policy, &timer, fused.get());
                            if (L.baler_project) x = as_baler_decompresses(x, c.normalizes() ? &norm : nullptr, *model);
                            if (dims == 1) cast_integer_columns(x, c, features);
                          }).duration_s;
  const MemoryPeak decode_memory = memory.finish();
  std::vector<std::pair<std::string, NpyArray>> members;
  members.emplace_back("data", tensor_to_npy(x, shape));
  members.emplace_back("names", m.count("names") ? m.at("names") : NpyArray::from_doubles({0}, {}));
  write_npz(L.decompressed_npz(), members, c.extra_compression);
  json report = {{"command", "decompress"},
                 {"shape", shape},
                 {"dtype", dtype_name(x.scalar_type())},
                 {"decode_duration_s", decode_s},
                 {"rows_per_s", static_cast<double>(shape[0]) / std::max(decode_s, 1e-12)},
                 {"output", L.decompressed_npz()},
                 {"output_bytes", file_bytes(L.decompressed_npz())},
                 {"precision", policy.to_json()},
                 {"engine", engine_json(engine)},
                 {"device", device.str()},
                 {"memory", decode_memory.to_json()}};
  report["total_duration_s"] = seconds_since(t_total);
  report["system"] = current_system();
  if (c.profile) {
    report["profile"] = profile_json(c, device, timer.totals());
    report["process_cpu_s"] = process_cpu_s();
  }
  finish_energy(energy.get(), L.decompressed, "decompress", report);
  run.finish(report);
  write_json(L.decompressed / "decompress_report.json", report);
  return report;
}

json run_info(const RunConfig& c, const CycleFiles& files) {
  const Layout& L = files;
  const int64_t original = file_bytes(c.input_path);
  if (original < 0) throw InputError(c.input_path + ": no such file", "check input_path");
  const int64_t compressed = file_bytes(L.compressed_npz());
  if (compressed < 0) throw InputError(L.compressed_npz() + ": no compressed file", "run `balerbench compress` first");
  // The ratios are file sizes: a truncated or damaged archive would give a ratio it never achieved.
  (void)read_npz(L.compressed_npz());
  const int64_t decompressed = file_bytes(L.decompressed_npz());
  const int64_t model_b = std::max<int64_t>(file_bytes(L.model()), 0);
  const int64_t loss_b = std::max<int64_t>(file_bytes(L.loss()), 0);
  const int64_t norm_b = std::max<int64_t>(file_bytes(L.norm()), 0);
  const int64_t total = compressed + model_b + loss_b + norm_b;
  json r = {{"command", "info"},
            {"original_bytes", original},
            {"compressed_bytes", compressed},
            {"decompressed_bytes", decompressed >= 0 ? json(decompressed) : json(nullptr)},
            {"model_bytes", model_b},
            {"loss_data_bytes", loss_b},
            {"normalization_bytes", norm_b},
            {"compressed_percent_of_original", 100.0 * static_cast<double>(compressed) / static_cast<double>(original)},
            {"compression_ratio", static_cast<double>(original) / static_cast<double>(compressed)},
            {"actual_compression_ratio", static_cast<double>(original) / static_cast<double>(total)}};
  if (decompressed >= 0) {
    const Dataset in = load_dataset(c.input_path);
    const NpzMembers out = read_npz(L.decompressed_npz());
    auto d = out.find("data");
    if (d == out.end() || d->second.shape != in.original_shape)
      throw InputError(L.decompressed_npz() + ": its 'data' does not have the shape of " + c.input_path,
                       "decompress again with this config");
    const at::Tensor y = npy_to_tensor(d->second).to(at::kDouble).reshape({in.rows(), in.features()});
    r["reconstruction"] = reconstruction_json(in, y);
  }
  return r;
}

}  // namespace balerbench
