// cycle_command.h: what balerbench's train, compress and decompress commands (run/cycle.cpp,
// run/codec_commands.cpp) share: the output files they check and write, the trained model and
// normalization they load, the live run and energy session around their work, and, for compress
// and decompress, one scaffold (CodecCommand) that runs a command from its checks to its report.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "datasets/cycle_files.h"
#include "datasets/normalizer.h"
#include "harness/energy/energy_session.h"
#include "harness/engine/engine_registry.h"
#include "harness/engine/memory_peak.h"
#include "harness/engine/phase_timer.h"
#include "harness/engine/precision.h"
#include "harness/monitor/live_metrics.h"
#include "harness/monitor/monitor.h"
#include "harness/run/run_config.h"
#include "harness/run/training_session.h"
#include "models/autoencoder.h"

namespace balerbench {

inline constexpr char kOutFolderHint[] = "give --out a folder that can be created and written";
// What to do when an output folder of `files` cannot be written: --out's hint, or for a Baler project
// (which has no --out) what its output/ must be.
std::string out_folder_hint(const CycleFiles& files);
// "run `balerbench COMMAND` with the same --out first", or for a Baler project "... on the same
// --baler-project first": what to run to make a missing input of the cycle.
std::string run_first_hint(const CycleFiles& files, const std::string& command, const std::string& when = "first");

// `j` as indented JSON at `path`, written to a temporary name and renamed.
void write_json_file(const std::filesystem::path& path, const nlohmann::json& j);
// The size of the file at `p` in bytes, or -1 when it does not exist.
int64_t file_bytes(const std::string& p);
// A Baler project's model.pt holds the model's Baler dtype, whatever precision trained it.
std::optional<at::ScalarType> saved_dtype(const CycleFiles& L, const AutoEncoder& model);
// (N, d1, ...) -> (d1, ...).
std::vector<int64_t> feature_shape(const std::vector<int64_t>& shape);
// The model `train` saved, for `features` columns and `latent` latent columns.
std::shared_ptr<AutoEncoder> load_trained_model(const RunConfig& c, const CycleFiles& L, int64_t features,
                                                int64_t latent);
// The normalization `train` saved (the identity when the config does not normalize).
Normalization training_normalization(const RunConfig& c, const CycleFiles& L, int64_t features);

// The live side of one command: metrics for the progress line, and the exporters when the config's
// monitoring section asks for them. Opened before the energy session, so a port in use fails
// before anything is measured.
struct LiveRun {
  LiveRun(const RunConfig& c, const char* command);
  // Feeds the session's snapshots to the live metrics, and starts the trial (ended by finish(), or
  // when the command throws).
  void begin(EnergySession* session, const RunConfig& c, const PrecisionPolicy& policy);
  // After the energy session has finished (no more snapshots).
  void finish(nlohmann::json& report);
  LiveMetrics live;
  std::string run_id;
  std::unique_ptr<Monitor> monitor;
  std::unique_ptr<LiveTrial> trial;
};

// Ends the session, stores energy_report.json and emissions.csv in `dir`, puts the report under
// "energy", and adds the GPUs' memory at the phase's peak (NVML) to "memory".
void finish_energy(EnergySession* session, const std::filesystem::path& dir, const std::string& command,
                   nlohmann::json& report);

// Compress or decompress from its first check to its report file, around the command's own steps:
//   CodecCommand cmd(c, "compress", L.compressed);  // folder and emissions.csv checked, runtime,
//                                                    // live run, energy session
//   ... read the input ...
//   cmd.load_model(L, features, latent);            // model, policy, normalization, engine
//   cmd.measure([&] { ... cmd.engine() ... });       // the command's energy window, memory tracked
//   ... write the output ...
//   return cmd.finish(report);                       // common keys, energy, <name>_report.json
class CodecCommand {
 public:
  // `out_hint`: what to do when `folder` cannot be written (out_folder_hint).
  CodecCommand(const RunConfig& c, const char* name, std::filesystem::path folder, const std::string& out_hint = kOutFolderHint);
  void load_model(const CycleFiles& L, int64_t features, int64_t latent);
  // Runs `work` inside the energy window named after the command (timed alone without meters),
  // with the memory peak tracked; returns its duration in s.
  double measure(const std::function<void()>& work);
  // Runs `work` with the memory peak tracked (for the report), opening no window: for a command
  // whose work opens windows of its own (codecs).
  void track_memory(const std::function<void()>& work);
  // Adds precision, engine, device, memory, total_duration_s, system (and profile when asked) to
  // `report`, ends the energy session and the live run, and writes FOLDER/<name>_report.json.
  nlohmann::json finish(nlohmann::json report);

  AutoEncoder& model() { return *model_; }
  Engine& engine() { return *engine_; }
  PhaseTimer& timer() { return *timer_; }
  EnergySession* energy() { return energy_.get(); }  // null when energy.enabled is false
  const PrecisionPolicy& policy() const { return policy_; }
  const Normalization& normalization() const { return norm_; }

 private:
  const RunConfig& c_;
  std::string name_;
  std::filesystem::path folder_;
  std::chrono::steady_clock::time_point t_total_;
  std::unique_ptr<LiveRun> run_;
  std::unique_ptr<EnergySession> energy_;
  c10::Device device_ = c10::kCPU;
  std::shared_ptr<AutoEncoder> model_;
  PrecisionPolicy policy_;
  Normalization norm_;
  EngineDecision engine_decision_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<PhaseTimer> timer_;
  MemoryPeak memory_;
};

}  // namespace balerbench
