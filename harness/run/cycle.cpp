// cycle.cpp: `balerbench train` and `info` (cycle.h); compress and decompress are in
// codec_commands.cpp, and what the commands share in cycle_command.h.
#include "harness/run/cycle.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <chrono>
#include <filesystem>

#include "datasets/cycle_files.h"
#include "datasets/dataset.h"
#include "common/error.h"
#include "datasets/normalizer.h"
#include "datasets/npz.h"
#include "common/paths.h"
#include "harness/base/clock.h"
#include "harness/base/cpu_activity.h"
#include "harness/energy/emissions_csv.h"
#include "harness/engine/memory_peak.h"
#include "harness/run/system_description.h"
#include "harness/engine/torch_compat.h"
#include "harness/engine/trainer.h"
#include "harness/run/cycle_command.h"
#include "harness/run/inference.h"
#include "harness/run/result_sections.h"
#include "harness/run/run_runtime.h"
#include "harness/run/training_session.h"
#include "models/architecture.h"
#include "models/autoencoder.h"

namespace balerbench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

json versions_json(const RunConfig& c) {
  return {{"libtorch", torch_version_string()},
          {"threads", at::get_num_threads()},
          {"flush_denormal", c.flush_denormal}};
}

json cuda_graph_json(c10::Device device, const TrainResult& r) {
  if (!device.is_cuda()) return {{"used", false}, {"note", "CUDA only"}};
  json j = {{"used", r.engine_status.cuda_graph}, {"replays", r.engine_status.graph_replays}};
  if (!r.engine_status.note.empty()) j["note"] = r.engine_status.note;
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

}  // namespace

namespace {

// The `train` command's part of the observer: Baler's intermittent model saving.
class CheckpointSaver final : public ForwardingObserver {
 public:
  CheckpointSaver(TrainingObserver* next, AutoEncoder& model, const CycleFiles& files)
      : ForwardingObserver(next), model_(model), files_(files) {}
  void save_checkpoint(int64_t epoch) override {
    save_state_dict(model_, files_.checkpoint(epoch), saved_dtype(files_, model_));
    ForwardingObserver::save_checkpoint(epoch);
  }

 private:
  AutoEncoder& model_;
  const CycleFiles& files_;
};

}  // namespace

json run_train(const RunConfig& c, const CycleFiles& files, TrainingObserver* observer) {
  const auto t_total = Clock::now();
  const CycleFiles& L = files;
  check_output_folder(L.training.string(), out_folder_hint(L));  // before any work, not after training
  if (c.energy.enabled) check_emissions_csv((L.training / "emissions.csv").string());
  check_output_file(L.model(), out_folder_hint(L));  // a Baler project keeps model.pt in compressed_output/
  configure_run_runtime(c);
  LiveRun run(c, "train");
  const std::unique_ptr<EnergySession> energy = open_energy_session(c.energy, run_device(c), run.run_id);
  const Dataset ds = load_dataset(c.input_path);
  const c10::Device device = run_device(c);
  TrainingSession session(c, ds, device, energy.get(), &run.live);
  AutoEncoder& model = session.model();
  const Normalization& norm = session.normalization();
  TrainOptions o = session.options();
  if (c.intermittent_model_saving) o.save_every_epochs = c.intermittent_saving_patience;
  CheckpointSaver saver(observer, model, L);
  saver.before_training();
  session.choose_threads(o);  // a calibration, if any, outside the training's windows and trace
  run.begin(energy.get(), c, session.policy());
  std::unique_ptr<ProfilerTrace> trace;
  if (!c.profile_trace.empty()) trace = std::make_unique<ProfilerTrace>(c.profile_trace);
  MemoryPeakTracker memory(cuda_allocator_index(device));
  memory.start();
  const TrainResult r = session.train(o, &saver);
  const MemoryPeak train_memory = memory.finish();
  json trace_json = nullptr;
  if (trace) trace_json = {{"path", c.profile_trace}, {"events", trace->finish()}};

  std::vector<double> losses;
  for (const auto& e : r.epoch_records) losses.push_back(e.train_loss);
  for (const auto& e : r.epoch_records) losses.push_back(e.val_loss);
  write_decoder_files(L.model(), L.norm(), model, norm, c, ds.original_shape, saved_dtype(L, model));
  write_npy(L.loss(), NpyArray::from_doubles({2, static_cast<int64_t>(r.epoch_records.size())}, losses));
  json report = train_report(c, ds, model, device, r, norm);
  report["memory"] = train_memory.to_json();
  report["total_duration_s"] = seconds_since(t_total);
  report["system"] = current_system();
  if (c.profile) {
    report["profile"] = profile_json(c, device, r.phases);
    report["profile"]["trace"] = trace_json;
    report["process_cpu_s"] = process_cpu_s();
  }
  write_json_file(L.training / "run_config.json", c.to_json());
  finish_energy(energy.get(), L.training, "train", report);
  run.finish(report);
  write_json_file(L.training / "training_report.json", report);
  return report;
}

json run_info(const RunConfig& c, const CycleFiles& files) {
  const CycleFiles& L = files;
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
