// training_session.cpp: see training_session.h.
#include "harness/run/training_session.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/cuda.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "harness/base/blas_kernel.h"
#include "harness/base/clock.h"
#include "datasets/split.h"
#include "harness/run/result_sections.h"
#include "harness/run/thread_calibration.h"
#include "harness/version.h"
#include "models/architecture.h"

namespace balerbench {

TrainOptions train_options(const RunConfig& c) {
  TrainOptions o;
  static_cast<TrainSettings&>(o) = c;  // the settings whole, as parsed
  o.engine = c.engine;                 // kAuto until the session resolves it (options())
  return o;
}

std::unique_ptr<EnergySession> open_energy_session(const EnergySettings& settings, c10::Device device,
                                                   const std::string& run_id) {
  if (!settings.enabled) return nullptr;
  std::function<void()> sync;
  if (device.is_cuda()) sync = [index = device.index()] { torch::cuda::synchronize(index); };
  return std::make_unique<EnergySession>(settings, std::move(sync), run_id);
}

Measured measure_window(EnergySession* energy, const std::string& phase, const std::function<void()>& work) {
  Measured m;
  const Snapshot begin = energy ? energy->mark() : Snapshot{};
  const auto t0 = SteadyClock::now();
  work();
  if (energy) {
    const WindowResult w = energy->add_window(phase, begin, energy->mark());
    m.duration_s = w.duration_s;
    m.energy_j = w.total_energy_j();
    m.uncertainty_j = w.total_uncertainty_j();
  } else {
    m.duration_s = seconds_since(t0);
  }
  return m;
}

namespace {

// A window of `repeats` runs of the work, as one run's time, energy and +-.
Measured per_repeat(Measured m, int64_t repeats) {
  const auto n = static_cast<double>(repeats);
  m.duration_s /= n;
  if (m.energy_j) *m.energy_j /= n;
  if (m.uncertainty_j) *m.uncertainty_j /= n;
  m.repeats = repeats;
  return m;
}

}  // namespace

Measured measure_repeated(EnergySession* energy, const std::string& phase, double min_window_s,
                          const std::function<void()>& work) {
  work();  // warm-up: first-touch of buffers, caches
  const auto t0 = SteadyClock::now();
  work();
  const double once_s = std::max(seconds_since(t0), 1e-7);
  const auto repeats = static_cast<int64_t>(std::clamp(std::ceil(min_window_s / once_s), 1.0, 100000.0));
  Measured m = measure_window(energy, phase, [&] {
    for (int64_t i = 0; i < repeats; ++i) work();
  });
  return per_repeat(m, repeats);
}

Measured measure_filled(EnergySession* energy, const std::string& phase, double min_window_s,
                        const std::function<void()>& work) {
  work();  // warm-up: first-touch of buffers, caches, kernels
  int64_t repeats = 0;
  Measured m = measure_window(energy, phase, [&] {
    const auto t0 = SteadyClock::now();
    do {
      work();
      ++repeats;
    } while (seconds_since(t0) < min_window_s && repeats < 100000);
  });
  return per_repeat(m, repeats);
}

LiveTrial::LiveTrial(LiveMetrics* live, const TrialLabels& labels) : live_(live) {
  if (live_) live_->begin_trial(labels);
}

void LiveTrial::end() {
  if (live_) live_->end_trial();
  live_ = nullptr;
}

TrainingSession::TrainingSession(const RunConfig& config, const Dataset& ds, c10::Device device, EnergySession* energy,
                                 LiveMetrics* live)
    : config_(config), device_(device), energy_(energy), live_(live) {
  check_dimensions(config, ds);
  std::fputs(subnormal_warning(ds, config).c_str(), stderr);
  features_ = ds.features();
  latent_ = latent_size(features_, config.compression_ratio);
  norm_ = config.normalizes() ? Normalization::fit(ds.data) : Normalization::identity(features_);
  at::manual_seed(static_cast<uint64_t>(config.seed));
  model_ = make_model(config.model_name, features_, latent_);
  policy_ = apply_precision(config.precision, *model_, device);
  engine_ = choose_engine(config.engine, *model_, policy_, device);
  const at::Tensor x = norm_.apply(ds.data).to(device, policy_.data_dtype);  // the whole set lives on the device
  std::tie(x_train_, x_val_) = split(x, config.test_size, static_cast<uint64_t>(config.seed));
}

TrainOptions TrainingSession::options() const {
  TrainOptions o = train_options(config_);
  o.precision = policy_;
  o.engine = engine_.engine;
  return o;
}

const ThreadChoice& TrainingSession::choose_threads(const TrainOptions& o) {
  if (threads_) return *threads_;
  if (config_.threads > 0) {
    threads_ = ThreadChoice{at::get_num_threads(), "config", 0, {}};
  } else if (!device_.is_cpu()) {
    threads_ = ThreadChoice{at::get_num_threads(), "not calibrated on " + device_.str(), 0, {}};
  } else {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    const std::string key = std::string(host) + " " + config_.model_name + " " + std::to_string(features_) + "->" +
                            std::to_string(latent_) + " batch " + std::to_string(o.batch_size) + " " +
                            policy_.name() + " " + engine_name(engine_.engine) + " blas " + query_blas().core +
                            // a new build may be faster or slower at either count: measured again
                            " " + config_.engine_knobs.describe() + " build " + git_revision();
    CalibrationOptions calibration;
    calibration.load_since = began_;
    calibration.same_for_the_run = true;  // a run's repeats of one setting on the same threads
    threads_ = calibrate_threads(*model_, x_train_, o, key, calibration);
  }
  return *threads_;
}

namespace {

// What the session adds to a training's observer: the energy windows of its phases, its epochs in
// the live metrics, the live power on the progress line.
class SessionObserver final : public ForwardingObserver {
 public:
  SessionObserver(TrainingObserver* next, EnergySession* energy, LiveMetrics* live, const TrainOptions& o,
                  int64_t train_rows, bool has_validation)
      : ForwardingObserver(next), energy_(energy), live_(live), epochs_(o.epochs),
        train_rows_(static_cast<double>(train_rows)), has_validation_(has_validation) {}

  void phase(const char* name, bool end) override {
    if (energy_) {
      if (!end)
        phase_begin_ = energy_->mark();
      else
        energy_->add_window(name, phase_begin_, energy_->mark());
    }
    ForwardingObserver::phase(name, end);
  }
  void epoch(const EpochRecord& e) override {
    if (live_)
      live_->on_epoch({e.number(), epochs_, e.train_loss, has_validation_ ? e.val_loss : kNoValue,
                       train_rows_ / std::max(e.duration_s, 1e-12), e.duration_s});
    ForwardingObserver::epoch(e);
  }
  double power_w() override { return live_ ? live_->total_power_w() : ForwardingObserver::power_w(); }

 private:
  EnergySession* energy_;
  LiveMetrics* live_;
  int64_t epochs_;
  double train_rows_;
  bool has_validation_;
  Snapshot phase_begin_;
};

}  // namespace

TrainResult TrainingSession::train(const TrainOptions& o, TrainingObserver* observer) {
  const std::string note = batch_size_note(o.batch_size, x_train_.size(0));
  if (!note.empty()) std::fprintf(stderr, "note: %s\n", note.c_str());
  choose_threads(o);
  SessionObserver session(observer, energy_, live_, o, x_train_.size(0), x_val_.defined());
  TrainResult result = fit(*model_, x_train_, x_val_, o, &session);
  result.engine_note = engine_.note;
  result.threads = threads_->to_json();
  return result;
}

}  // namespace balerbench
