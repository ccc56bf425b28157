// trial_stages.h: the stages of one sweep trial (trial.h's measure_trial), in the order they run. Each
// stage takes what it needs as arguments and returns what it did as a value; build_record() alone
// turns those values into the stored record and its result. A stage that fails throws, and the
// record keeps what the stages before it returned.
//
//   start_record      the coordinates and provenance, before anything runs
//   prepare_hardware  cooldown, CPU runtime, the power limit (NVML GPUs or the simulated GPU)
//   describe_setup    the model and the dataset as the result describes them
//   train_to_target   training, with cumulative time and energy per epoch and the target's TTA/ETA
//   measure_codec     compress and decompress of the whole dataset, each in its own window
//   read_energy       the energy session's totals, phases, meters and power series
//   build_record      the record and its result, from the values above
#pragma once

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/energy/energy_session.h"
#include "harness/energy/thermal_wait.h"
#include "harness/engine/memory_peak.h"
#include "harness/engine/trainer.h"
#include "harness/run/run_config.h"
#include "harness/run/training_session.h"
#include "harness/store/store.h"
#include "harness/trial/trial_spec.h"
#include "harness/trial/trial.h"

namespace balerbench {

// The trial's hardware label: the GPUs its meters measured (simulated ones marked), from the energy
// session's report when there is one, else the provenance's.
std::string trial_hardware(const nlohmann::json& provenance, const nlohmann::json* energy_report);

// Throws Interrupted when a stop signal has arrived.
void check_stop(const std::atomic<int>* stop);

// The record's coordinates (from the spec) and provenance (this system as now), before anything runs.
TrialRecord start_record(const TrialSpec& spec, const TrialContext& ctx);

struct HardwareSetup {
  nlohmann::json power_limits = nlohmann::json::array();  // the limits applied, as stored in the result
  std::optional<double> enforced_power_limit_w;
  std::optional<double> max_power_w;  // the experiment's, else the GPUs' maximum limits, else the simulated GPU's
  // Where max_power_w came from: "cost.max_power_w", "gpu_max_limit" (NVML, summed over max_power_gpus
  // GPUs), "simulated_gpu"; empty without one.
  std::string max_power_source;
  int64_t max_power_gpus = 0;
  nlohmann::json gpu_limits;                // NVML's constraints per GPU, read only (null without NVML GPUs)
  std::optional<ThermalWait> thermal_wait;  // with energy.thermal
  int threads = 0;                          // intra-op threads as the trial's config set them
};
// Cooldown, the thermal protocol's wait, the CPU runtime, MaxPower and the GPUs' limits (read only,
// whatever the sweep's axes), and the trial's power limit: NVML GPUs when there are any, else the
// simulated GPU's model (set in `c`). PowerLimitError when a limit is asked for and none can be set.
HardwareSetup prepare_hardware(const TrialSpec& spec, const TrialContext& ctx, RunConfig& c);

// {"model": layers and counts, "dataset": its path, shape, label and bytes}.
nlohmann::json describe_setup(const TrainingSession& session, const std::string& dataset_label, const Dataset& ds,
                              int64_t batch_size);

// The first epoch that met the experiment's target.
struct TargetHit {
  int64_t epochs_to_target = 0;  // 1-based
  double tta_s = 0;
  std::optional<double> eta_j, eta_uncertainty_j;  // with an energy session
  std::optional<MeterUpdates> eta_updates;         // the meter updates inside ETA's window
};

struct Training {
  TrainResult result;
  std::vector<EpochRow> epoch_rows;  // cumulative time and energy at every epoch's end
  std::optional<TargetHit> target;
  double train_s = 0;                // the "fit" window (host clock without meters)
  std::optional<double> train_energy_j, fit_uncertainty_j;
  std::optional<MeterUpdates> fit_updates;  // the meter updates inside the "fit" window
  double begin_unix_s = 0, end_unix_s = 0;
  double eval_s = 0;                 // the evaluations' share of train_s
  nlohmann::json optimizer;          // the power-limit optimiser's profile, or null
  std::optional<double> optimizer_limit_w;      // the last limit the optimiser set
  std::optional<double> optimizer_max_power_w;  // the optimiser's MaxPower
  MemoryPeak memory;
  // A recurrence attempt (batch_size_optimizer): its plan, what it cost, whether the cost bound stopped it.
  nlohmann::json recurrence;
};
// Trains, with a device-synchronised snapshot at every epoch's end for the cumulative time and
// energy of each epoch row, until the epochs run out (or the target is met, when the experiment
// says stop), under the experiment's power-limit optimiser when it has one. A recurrence attempt
// profiles the power limits only when its plan says so, and stops at the end of the first epoch whose
// cost so far passes its cost bound without reaching the target (Zeus's live optimiser checks the
// bound at each epoch's evaluation).
Training train_to_target(TrainingSession& session, EnergySession* energy, const TrialContext& ctx);
// A training whose last epoch's training or validation loss is not finite (NaN, infinity: a learning
// rate too high, an overflow) diverged: its model reconstructs nothing, so its time, energy and ratios
// compare with nothing. An InputError naming the epoch it first went non-finite fails the trial
// (docs/sweeps.md, "Diverged training"); the record keeps what ran.
void check_training_finite(const Training& t, const RunConfig& c);

struct CodecMeasurement {
  at::Tensor latent, reconstruction;
  Measured compress, decompress;  // per pass: with codec_min_window_s, the window's figures / its passes
  MemoryPeak compress_memory, decompress_memory;
  double compress_begin_unix_s = 0, compress_end_unix_s = 0, decompress_end_unix_s = 0;
};
// Compresses and decompresses the whole dataset, each in its own energy window (timed alone
// without meters), on `engine`: make_run_inference_engine's for the session (run/inference.h), the
// engine the session trained with (or the reference engine's autocast).
// With codec_min_window_s, each is repeated inside its window until the window is that long (after a
// warm-up outside it; measure_filled), and the figures are per pass.
CodecMeasurement measure_codec(TrainingSession& session, Engine& engine, EnergySession* energy, const Dataset& ds,
                       const RunConfig& c, const std::atomic<int>* stop);

// With codecs.enabled: the classical codecs on the trial's data beside this trial's Baler (its compress
// and decompress windows, its training), each in its own windows (run/codec_comparison.h), Baler
// measured again on `engine`, the one its compress ran on. Baler's decoder bytes are the model.pt and normalization file `train` would write, written to a temporary
// folder and measured.
nlohmann::json measure_codecs(TrainingSession& session, Engine& engine, EnergySession* energy, const Dataset& ds,
                              const RunConfig& c, const Training& training, const CodecMeasurement& codec);

struct EnergyFigures {
  std::string kind = "none";  // what the totals are: measured, estimated, simulated (or "none")
  std::optional<double> total_energy_j, co2_g;
  std::vector<PhaseRow> phases;
  nlohmann::json report;       // the session's report (meters, carbon, totals, ...), null without a session
  nlohmann::json uncertainty;  // the measurement ± of each figure, null without a session
  // The meter updates inside each figure's window (train, eta, compress, decompress) and the
  // threshold below which a figure is short; null without a measuring meter.
  nlohmann::json meter_updates;
  nlohmann::json thermal_windows;  // per phase: the hottest, slowest and every throttle reason (GPU domains)
  std::vector<SampleRow> samples;
  std::map<std::string, std::optional<double>> gpu_memory_peak_mib;  // per phase window (NVML)
};
// Ends the energy session and reads its figures (EnergyFigures{} without one).
EnergyFigures read_energy(EnergySession* energy, const RunConfig& c, const Training& t, const CodecMeasurement& codec);

// What a trial's stages returned: each set once its stage has run.
struct TrialOutcome {
  std::optional<HardwareSetup> hardware;
  nlohmann::json setup;  // describe_setup's, once the session is built
  std::optional<Training> training;
  std::optional<CodecMeasurement> codec;
  nlohmann::json reconstruction;  // the errors of the codec's reconstruction (result_sections.h)
  nlohmann::json codecs;          // measure_codecs', with codecs.enabled; else null
  std::optional<EnergyFigures> energy;
  std::string device;              // the device the trial ran on
  nlohmann::json window_activity;  // other processes and steal per measured window
  nlohmann::json gpus_at_start, gpus_at_end;  // NVML's temperature, SM clock, throttle reasons (GpuWatch)
};
// Writes into `rec` (from start_record, its result holding the run design) what the stages that ran
// returned: the coordinates resolved (engine, limits), training, codec and energy figures, and the
// result's sections. After a failed stage the record keeps what the stages before it returned.
void build_record(const TrialOutcome& out, const RunConfig& c, const TrialProtocol& ex, TrialRecord& rec);

}  // namespace balerbench
