// cycle_command.cpp: see cycle_command.h.
#include "harness/run/cycle_command.h"

#include <cstdio>

#include "common/error.h"
#include "datasets/npy.h"
#include "common/paths.h"
#include "harness/base/clock.h"
#include "harness/base/cpu_activity.h"
#include "harness/energy/emissions_csv.h"
#include "harness/run/run_runtime.h"
#include "harness/run/system_description.h"
#include "harness/run/inference.h"
#include "harness/run/result_sections.h"
#include "models/architecture.h"
#include "common/atomic_file.h"

namespace balerbench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

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

}  // namespace

void write_json_file(const fs::path& path, const json& j) {
  const std::string text = j.dump(2) + "\n";
  write_file_atomic(path.string(), std::vector<uint8_t>(text.begin(), text.end()));
}

int64_t file_bytes(const std::string& p) { return fs::exists(p) ? static_cast<int64_t>(fs::file_size(p)) : -1; }

// A Baler project's model.pt holds the model's Baler dtype, whatever precision trained it.
std::optional<at::ScalarType> saved_dtype(const CycleFiles& L, const AutoEncoder& model) {
  if (!L.baler_project) return std::nullopt;
  return model.baler_dtype();
}

std::vector<int64_t> feature_shape(const std::vector<int64_t>& shape) {
  return std::vector<int64_t>(shape.begin() + 1, shape.end());
}

std::shared_ptr<AutoEncoder> load_trained_model(const RunConfig& c, const CycleFiles& L, int64_t features, int64_t latent) {
  if (!fs::exists(L.model()))
    throw InputError(L.model() + ": no trained model", run_first_hint(L, "train"));
  auto model = make_model(c.model_name, features, latent);
  load_state_dict(*model, L.model());
  return model;
}

Normalization training_normalization(const RunConfig& c, const CycleFiles& L, int64_t features) {
  if (!c.normalizes()) return Normalization::identity(features);
  if (!fs::exists(L.norm()))
    throw InputError(L.norm() + ": no normalization features", run_first_hint(L, "train"));
  const NpyArray a = read_npy(L.norm());
  if (a.numel() == 0)
    throw InputError(L.norm() + ": the model was trained without normalization",
                     "use the same apply_normalization/custom_norm settings as "
                     "for training");
  return Normalization::from_npy(a, features, L.norm());
}

LiveRun::LiveRun(const RunConfig& c, const char* command)
    : live(command), run_id(make_run_id()), monitor(open_monitor(c.monitoring, live, run_id)) {}

void LiveRun::begin(EnergySession* session, const RunConfig& c, const PrecisionPolicy& policy) {
  if (session) feed_live_metrics(live, *session);
  TrialLabels t;
  t.experiment = c.monitoring.experiment;
  t.batch_size = c.batch_size;
  t.precision = policy.name();
  t.power_limit_w = power_limit_label(session);
  trial = std::make_unique<LiveTrial>(&live, t);
}

void LiveRun::finish(json& report) {
  if (monitor) report["monitoring"] = monitor->finish();  // lingers with the trial's final values
  if (trial) trial->end();
}

// Ends the session, stores energy_report.json and emissions.csv in `dir`, puts the report under
// "energy", and adds the GPUs' memory at the phase's peak (NVML) to "memory".
void finish_energy(EnergySession* session, const fs::path& dir, const std::string& command, json& report) {
  if (!session) return;
  session->finish();
  report["energy"] = session->write_outputs(dir.string(), command);
  const WindowResult* phase = session->phases().find(command);
  if (phase && report.contains("memory")) add_gpu_memory_peak(report["memory"], phase->gpu_memory_peak_mib());
}

std::string out_folder_hint(const CycleFiles& files) {
  if (!files.baler_project) return kOutFolderHint;
  return "a Baler project writes into its output/ folder and the training/, compressed_output/ and "
         "decompressed_output/ folders in it: each must be a folder (not a file) that can be written";
}

std::string run_first_hint(const CycleFiles& files, const std::string& command, const std::string& when) {
  return "run `balerbench " + command + "` " +
         (files.baler_project ? "on the same --baler-project " : "with the same --out ") + when;
}

CodecCommand::CodecCommand(const RunConfig& c, const char* name, fs::path folder, const std::string& out_hint)
    : c_(c), name_(name), folder_(std::move(folder)), t_total_(std::chrono::steady_clock::now()) {
  check_output_folder(folder_.string(), out_hint);
  if (c.energy.enabled) check_emissions_csv((folder_ / "emissions.csv").string());
  configure_run_runtime(c);
  run_ = std::make_unique<LiveRun>(c, name);
  device_ = run_device(c);
  energy_ = open_energy_session(c.energy, device_, run_->run_id);
}

void CodecCommand::load_model(const CycleFiles& L, int64_t features, int64_t latent) {
  model_ = load_trained_model(c_, L, features, latent);
  policy_ = apply_precision(c_.precision, *model_, device_);
  norm_ = training_normalization(c_, L, features);
  engine_decision_ = inference_decision(choose_engine(c_.engine, *model_, policy_, device_), policy_, device_);
  engine_ = make_run_inference_engine(engine_decision_, *model_, policy_, c_);
  run_->begin(energy_.get(), c_, policy_);
  timer_ = std::make_unique<PhaseTimer>(device_, c_.profile, c_.profile_sync);
}

double CodecCommand::measure(const std::function<void()>& work) {
  MemoryPeakTracker memory(cuda_allocator_index(device_));
  memory.start();
  const double duration_s = measure_window(energy_.get(), name_, work).duration_s;
  memory_ = memory.finish();
  return duration_s;
}

void CodecCommand::track_memory(const std::function<void()>& work) {
  MemoryPeakTracker memory(cuda_allocator_index(device_));
  memory.start();
  work();
  memory_ = memory.finish();
}

json CodecCommand::finish(json report) {
  report["precision"] = policy_.to_json();
  report["engine"] = engine_json(engine_decision_);
  if (engine_) report["engine"].update(engine_->status().details);
  report["device"] = device_.str();
  report["memory"] = memory_.to_json();
  report["total_duration_s"] = seconds_since(t_total_);
  report["system"] = current_system();
  if (c_.profile) {
    report["profile"] = profile_json(c_, device_, timer_->totals());
    report["process_cpu_s"] = process_cpu_s();
  }
  finish_energy(energy_.get(), folder_, name_, report);
  run_->finish(report);
  write_json_file(folder_ / (name_ + "_report.json"), report);
  return report;
}

}  // namespace balerbench
