// training_session.h: one training run as `balerbench train` (run/cycle.cpp) and a sweep trial
// (trial/trial.cpp) both do it, written once:
//   - the energy session, with the device synchronised at every mark on CUDA, and its windows;
//   - the data normalized and split on the device, the model built and put in the policy's dtype;
//   - the live trial, begun and ended RAII-style so that every exit path ends it;
//   - training with the hooks both commands need (an energy window per phase, live progress and
//     epoch metrics) with the evaluation the trainer runs every epoch.
// The training engine is chosen here, once, for both commands.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "datasets/dataset.h"
#include "datasets/normalizer.h"
#include "harness/energy/energy_session.h"
#include "harness/engine/engine_registry.h"
#include "harness/engine/precision.h"
#include "harness/run/thread_calibration.h"
#include "harness/run/run_config.h"
#include "harness/engine/trainer.h"
#include "harness/monitor/live_metrics.h"
#include "models/autoencoder.h"

namespace balerbench {

// The config's training options: its TrainSettings, whole, and its engine choice (kAuto until a
// session resolves it and adds its precision policy and hooks: TrainingSession::options).
TrainOptions train_options(const RunConfig& c);

// The energy session of one command or trial, or nullptr when energy.enabled is false.
std::unique_ptr<EnergySession> open_energy_session(const EnergySettings& settings, c10::Device device,
                                                   const std::string& run_id);

// Seconds, and joules when measuring, of one window.
struct Measured {
  double duration_s = 0;
  std::optional<double> energy_j;
  std::optional<double> uncertainty_j;  // the meters' ± of energy_j (energy_window.h); empty when unquantified
  int64_t repeats = 1;                  // measure_repeated: the work ran this many times in the window
};
// Runs `work` inside the window `phase` of `energy` (device synchronised at both edges); without an
// energy session, times it on the host clock.
Measured measure_window(EnergySession* energy, const std::string& phase, const std::function<void()>& work);
// Work too short for a meter (a RAPL counter updates every ~1 ms, NVML's every 20-100 ms): run twice
// outside any window (a warm-up, then once timed), then as many times as fill `min_window_s`
// (at most 100,000) inside one window. The figures returned are per run (the window's / repeats,
// its ± too), with `repeats` set.
Measured measure_repeated(EnergySession* energy, const std::string& phase, double min_window_s,
                          const std::function<void()>& work);
// The same made sure: one warm-up run outside any window, then runs inside one window until it has
// lasted `min_window_s` by the host's clock (at least one run, at most 100,000), so a window of N meter
// updates holds them even when a run's time varies. A run that leaves work on a device should
// synchronise (the window's closing mark does in any case). Figures per run, with `repeats` set.
Measured measure_filled(EnergySession* energy, const std::string& phase, double min_window_s,
                        const std::function<void()>& work);

// The live trial of a command or sweep trial: begun on construction, ended by end() or on
// destruction, whichever comes first (a failed or interrupted trial ends too).
class LiveTrial {
 public:
  LiveTrial(LiveMetrics* live, const TrialLabels& labels);
  ~LiveTrial() { end(); }
  LiveTrial(const LiveTrial&) = delete;
  LiveTrial& operator=(const LiveTrial&) = delete;
  void end();

 private:
  LiveMetrics* live_;
};

class TrainingSession {
 public:
  // Builds the model for `ds` (seeded from config.seed), puts it and the normalized rows on
  // `device` in the precision policy's dtypes, and splits off the validation rows. `energy` and
  // `live` may be null; both outlive the session.
  TrainingSession(const RunConfig& config, const Dataset& ds, c10::Device device, EnergySession* energy,
                  LiveMetrics* live);

  AutoEncoder& model() { return *model_; }
  const AutoEncoder& model() const { return *model_; }
  const PrecisionPolicy& policy() const { return policy_; }
  // The engine that trains (config.engine resolved for this model, policy and device).
  const EngineDecision& engine() const { return engine_; }
  const Normalization& normalization() const { return norm_; }
  const at::Tensor& train_rows() const { return x_train_; }
  const at::Tensor& val_rows() const { return x_val_; }  // undefined without a validation split
  int64_t features() const { return features_; }
  int64_t latent() const { return latent_; }
  c10::Device device() const { return device_; }

  // The config's training options with this session's policy and engine.
  TrainOptions options() const;
  // Trains with `options` (from options()), evaluating every epoch as they ask (validation loss,
  // relative error). The session observes the training first (an energy window per "train" and
  // "evaluation" phase, every epoch to the live metrics, the live power on the progress line) and
  // passes every event on to `observer`.
  // The thread count for training with `options`: config.threads when set, else on the CPU a
  // calibration of a few real steps (thread_calibration.h). Call it before measuring anything, so
  // the calibration is outside every window; train() calls it when nobody did.
  const ThreadChoice& choose_threads(const TrainOptions& options);
  TrainResult train(const TrainOptions& options, TrainingObserver* observer = nullptr);

 private:
  const RunConfig& config_;
  c10::Device device_;
  EnergySession* energy_;
  LiveMetrics* live_;
  int64_t features_ = 0, latent_ = 0;
  Normalization norm_;
  std::shared_ptr<AutoEncoder> model_;
  PrecisionPolicy policy_;
  EngineDecision engine_;
  std::optional<ThreadChoice> threads_;
  // The CPUs' activity when the session began: the thread calibration's "load now" window starts here,
  // overlapping the data's preparation, instead of a fresh wait.
  CpuActivity began_ = read_cpu_activity();
  at::Tensor x_train_, x_val_;
};

}  // namespace balerbench
