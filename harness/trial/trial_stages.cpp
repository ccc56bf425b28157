// trial_stages.cpp: see trial_stages.h.
#include "harness/trial/trial_stages.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <thread>

#include "common/error.h"
#include "datasets/dataset.h"
#include "harness/base/clock.h"
#include "harness/base/zeus_cost.h"
#include "harness/energy/carbon.h"
#include "harness/energy/simulated_gpu.h"
#include "harness/engine/torch_compat.h"
#include "harness/power/optimizer.h"
#include "harness/power/power_limit.h"
#include "harness/run/codec_comparison.h"
#include "harness/run/inference.h"
#include "harness/run/result_sections.h"
#include "harness/run/run_runtime.h"
#include "harness/run/system_description.h"
#include "harness/trial/interrupted.h"
#include "harness/trial/trial_conditions.h"
#include "models/architecture.h"
#include "models/autoencoder.h"

namespace balerbench {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

void interruptible_sleep(double seconds, const std::atomic<int>* stop) {
  const auto until = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < until) {
    check_stop(stop);
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
    std::this_thread::sleep_for(std::min(std::chrono::milliseconds(100), left));
  }
  check_stop(stop);
}

// The sampler's series as power per interval, labelled with the phase it falls in.
// Snapshots taken at window edges land between the sampler's ticks; intervals
// are merged until they are at least `min_interval_s` long (half the sampling
// period), so a few-millisecond sliver does not show as a spike or a dip. An interval in which a
// meter failed a read (its windows are flagged) is left out: its power is not a measurement.
std::vector<SampleRow> power_series(const EnergySession& s, double min_interval_s,
                                    const std::vector<std::pair<std::string, std::pair<double, double>>>& phases) {
  std::vector<SampleRow> out;
  const std::vector<Snapshot> series = s.sampler().series();
  if (series.size() < 2) return out;
  const auto t0 = series.front().time;
  std::size_t prev = 0;
  for (std::size_t i = 1; i < series.size(); ++i) {
    if (std::chrono::duration<double>(series[i].time - series[prev].time).count() < min_interval_s) continue;
    const WindowResult w = s.counter_window("sample", series[prev], series[i]);
    const double mid_unix = 0.5 * (series[prev].unix_s + series[i].unix_s);
    prev = i;
    const bool failed = std::any_of(w.domains.begin(), w.domains.end(), [](const DomainEnergy& d) { return d.read_failed; });
    if (w.duration_s <= 0 || failed || !(w.total_energy_j() >= 0)) continue;
    SampleRow r;
    r.t_s = std::chrono::duration<double>(series[i].time - t0).count();
    r.power_w = w.total_energy_j() / w.duration_s;
    r.phase = "idle";
    for (const auto& [name, span] : phases)
      if (mid_unix >= span.first && mid_unix <= span.second) r.phase = name;
    out.push_back(r);
  }
  return out;
}

// The first epoch that meets the experiment's target gives TTA, ETA and the epochs to target.
class TargetTracker {
 public:
  explicit TargetTracker(const TargetSpec& target) : target_(target) {}
  // Marks `row` as meeting the target or not; true the first time it does.
  bool on_epoch(const EpochRecord& e, EpochRow& row) {
    if (!target_.enabled()) return false;
    const double metric = target_.metric == "val_loss" ? e.val_loss : e.relative_error.value_or(NAN);
    row.target_met = std::isfinite(metric) && metric <= target_.value;
    if (!row.target_met || hit_) return false;
    hit_ = true;
    return true;
  }
  bool stop() const { return hit_ && target_.stop_when_reached; }

 private:
  const TargetSpec& target_;
  bool hit_ = false;
};

// The Zeus-style power-limit optimiser of the experiment, when it has one: it sets limits through
// the guard (the last one into `t`) and reads the training's time and energy so far.
std::unique_ptr<PowerLimitOptimizer> make_optimizer(const TrialContext& ctx, EnergySession* energy,
                                                    const Snapshot& train_begin, Training& t) {
  const OptimizerSpec& spec = ctx.protocol->optimizer;
  if (!spec.enabled) return nullptr;
  // A recurrence attempt profiles only at a batch size with no kept limit (its spec sets the kept one).
  if (ctx.recurrence && !ctx.recurrence->plan.profile_power_limit) return nullptr;
  if (!ctx.power || !ctx.guard)
    throw PowerLimitError("the power-limit optimiser needs GPUs whose limits NVML can set (none here)", false);
  // The experiment parser refuses the optimiser with energy off: it must never weigh time against 0 J.
  if (!energy) throw std::logic_error("power-limit optimiser without an energy session");
  const auto [lo, hi] = ctx.power->constraints_w(0);
  OptimizerOptions oo{spec.eta,           spec.wait_steps, spec.warmup_steps,
                      spec.profile_steps, spec.pl_step_w,  static_cast<int>(ctx.power->count())};
  PowerLimitGuard* guard = ctx.guard;
  auto optimizer = std::make_unique<PowerLimitOptimizer>(
      oo, power_limit_candidates(lo, hi, spec.pl_step_w),
      [guard, &t](double w) {
        const std::vector<AppliedLimit> applied = guard->apply(w);
        if (applied.empty()) throw PowerLimitError("no GPU power limit was applied: the guard returned no GPU", false);
        t.optimizer_limit_w = applied.front().enforced_w;
      },
      [energy, train_begin]() -> PowerLimitOptimizer::Reading {
        const WindowResult w = energy->counter_window("optimizer", train_begin, energy->mark());
        return {w.duration_s, w.total_energy_j()};
      });
  t.optimizer_max_power_w = optimizer->max_power_w();
  return optimizer;
}

// The row of one epoch, without its cumulative time and energy.
EpochRow epoch_row(const EpochRecord& e) {
  EpochRow row;
  row.epoch = e.epoch;
  row.train_loss = e.train_loss;
  row.val_loss = e.val_loss;
  row.lr = e.lr;
  row.duration_s = e.duration_s;
  row.relative_error = e.relative_error;
  row.eval_s = e.eval_duration_s;
  return row;
}

// The training options of a trial: the session's, with its place in the run and the target's metric.
TrainOptions trial_options(const TrainingSession& session, const TrialContext& ctx) {
  TrainOptions o = session.options();
  o.progress_context.run_ordinal = ctx.run_ordinal;
  o.progress_context.run_count = ctx.run_count;
  o.progress_context.trials_after = std::max<int64_t>(0, ctx.run_count - ctx.run_ordinal);
  o.relative_error = ctx.protocol->target.metric == "relative_error";
  return o;
}

}  // namespace

std::string trial_hardware(const json& provenance, const json* energy_report) {
  std::string gpus;
  if (energy_report)
    for (const GpuLabel& g : gpu_labels((*energy_report)["meters"])) gpus += (gpus.empty() ? "" : " + ") + g.display();
  return hardware_label(provenance, gpus);
}

void check_stop(const std::atomic<int>* stop) {
  if (stop && stop->load() != 0) throw Interrupted{stop->load()};
}

TrialRecord start_record(const TrialSpec& spec, const TrialContext& ctx) {
  const TrialProtocol& ex = *ctx.protocol;
  TrialRecord rec;
  rec.key = spec.key;
  rec.experiment = ex.name;
  rec.grid_index = spec.grid_index;
  rec.repeat = spec.repeat;
  rec.batch_size = spec.batch_size();
  rec.epochs = spec.epochs();
  rec.precision = precision_name(spec.precision());
  rec.engine = engine_name(spec.engine());  // the resolved engine replaces it once the session chose
  rec.power_limit_w = spec.power_limit_w;
  rec.spec = spec.spec;
  rec.started_unix_s = unix_now_s();
  rec.provenance = ctx.provenance.is_null() ? base_provenance() : ctx.provenance;
  rec.provenance["system"] = current_system();  // the BLAS's and LibTorch's threads as now
  rec.provenance["system_fingerprint"] = rec.provenance["system"]["fingerprint"];
  rec.provenance["system_label"] = rec.provenance["system"]["label"];
  rec.system_fingerprint = rec.provenance["system_fingerprint"].get<std::string>();
  rec.hardware = trial_hardware(rec.provenance, nullptr);
  rec.max_power_w = ex.max_power_w;
  return rec;
}

HardwareSetup prepare_hardware(const TrialSpec& spec, const TrialContext& ctx, RunConfig& c) {
  const TrialProtocol& ex = *ctx.protocol;
  check_stop(ctx.stop);
  if (ex.cooldown_s > 0) interruptible_sleep(ex.cooldown_s, ctx.stop);
  HardwareSetup hw;
  if (ex.thermal.enabled) hw.thermal_wait = wait_for_cool_gpus(ex.thermal, ctx);
  configure_run_runtime(c);
  hw.threads = at::get_num_threads();  // as this trial's config set them
  const bool simulated_gpu =
      std::find(c.energy.meters.begin(), c.energy.meters.end(), MeterChoice::kSimulatedGpu) != c.energy.meters.end();
  choose_max_power(ex, ctx, simulated_gpu, hw);
  if (!hw.max_power_w && simulated_gpu) {
    hw.max_power_w = c.energy.simulated_gpu.max_limit_w;
    hw.max_power_source = "simulated_gpu";
  }
  if (!spec.power_limit_w) return hw;
  if (ctx.power && ctx.guard) {
    for (const AppliedLimit& a : ctx.guard->apply(*spec.power_limit_w)) hw.power_limits.push_back(a.to_json());
    if (hw.power_limits.empty())
      throw PowerLimitError("no GPU power limit was applied: the guard returned no GPU", false);
    hw.enforced_power_limit_w = hw.power_limits[0]["enforced_w"].get<double>();
  } else if (simulated_gpu) {
    SimulatedGpuModel model{c.energy.simulated_gpu};
    model.set_power_limit_w(*spec.power_limit_w);  // InputError outside the constraints
    c.energy.simulated_gpu.power_limit_w = *spec.power_limit_w;
    hw.enforced_power_limit_w = *spec.power_limit_w;
    hw.power_limits.push_back({{"uuid", "simulated"},
                               {"name", c.energy.simulated_gpu.name},
                               {"requested_w", *spec.power_limit_w},
                               {"enforced_w", *spec.power_limit_w},
                               {"simulated", true}});
  } else {
    throw PowerLimitError("no GPU power limit to set: NVML sees no GPU and the experiment has no simulated_gpu meter",
                          false);
  }
  return hw;
}

json describe_setup(const TrainingSession& session, const std::string& dataset_label, const Dataset& ds,
                    int64_t batch_size) {
  const Architecture& arch = session.model().architecture();
  json layers = json::array();
  for (const auto& l : arch.layers)
    layers.push_back({{"name", l.name},
                      {"kind", l.kind},
                      {"part", l.part},
                      {"in", l.in_features},
                      {"out", l.out_features},
                      {"parameters", l.parameters()},
                      {"macs_per_sample", l.macs_per_sample()},
                      {"t1_operations", l.t1_operations(batch_size)}});
  json setup;
  setup["model"] = {{"name", arch.model_name},
                    {"n_features", arch.n_features},
                    {"latent", arch.latent},
                    {"parameters", arch.parameters()},
                    {"macs_per_sample", arch.macs_per_sample()},
                    {"layers", layers}};
  setup["dataset"] = dataset_json(ds);
  setup["dataset"]["label"] = dataset_label;
  setup["dataset"]["bytes"] = ds.rows() * ds.features() * ds.source_item_bytes;
  return setup;
}

namespace {

// The trial's observer of its training: the stop signal and the power-limit optimiser at every
// step; at every epoch's end the cumulative time and energy of its row (ETA is the window from the
// training's start to that epoch), the target, and a recurrence attempt's cost bound.
class TrialObserver final : public TrainingObserver {
 public:
  TrialObserver(const TrialContext& ctx, EnergySession* energy, c10::Device device, Training& t)
      : ctx_(ctx), energy_(energy), device_(device), t_(t), target_(ctx.protocol->target),
        begin_(energy ? energy->mark() : Snapshot{}) {
    t.begin_unix_s = unix_now_s();
    optimizer_ = make_optimizer(ctx, energy, begin_, t);
  }
  const Snapshot& begin() const { return begin_; }
  double seconds() const { return seconds_since(t_train_); }
  PowerLimitOptimizer* optimizer() const { return optimizer_.get(); }
  const std::optional<int64_t>& stopped_at_bound() const { return stopped_at_bound_; }

  void step(bool end) override {
    check_stop(ctx_.stop);
    if (optimizer_) end ? optimizer_->on_step_end() : optimizer_->on_step_begin();
  }
  void epoch(const EpochRecord& e) override {
    if (optimizer_) optimizer_->on_epoch_end();
    EpochRow row = epoch_row(e);
    t_.eval_s += e.eval_duration_s;
    std::optional<double> pm_j;
    std::optional<MeterUpdates> updates;
    if (energy_) {
      const WindowResult w = energy_->counter_window("epochs", begin_, energy_->mark());
      row.elapsed_s = w.duration_s;
      row.energy_j = w.total_energy_j();
      row.energy_pm_j = pm_j = w.total_uncertainty_j();
      updates = w.updates;
    } else {
      synchronize_device(device_);
      row.elapsed_s = seconds();
    }
    if (target_.on_epoch(e, row)) t_.target = TargetHit{e.number(), row.elapsed_s, row.energy_j, pm_j, updates};
    const RecurrenceAttempt* attempt = ctx_.recurrence;
    if (attempt && attempt->plan.cost_bound_j && !t_.target && row.energy_j &&
        zeus_cost(attempt->eta, *row.energy_j, row.elapsed_s, attempt->max_power_w) > *attempt->plan.cost_bound_j)
      stopped_at_bound_ = e.number();
    t_.epoch_rows.push_back(row);
  }
  bool stop_training() override { return target_.stop() || stopped_at_bound_.has_value(); }

 private:
  const TrialContext& ctx_;
  EnergySession* energy_;
  c10::Device device_;
  Training& t_;
  TargetTracker target_;
  std::optional<int64_t> stopped_at_bound_;  // a recurrence attempt's early stop at its cost bound
  const Snapshot begin_;
  const SteadyClock::time_point t_train_ = SteadyClock::now();
  std::unique_ptr<PowerLimitOptimizer> optimizer_;
};

// The fit window's time and energy into `t`.
void read_fit_window(EnergySession* energy, const TrialObserver& observer, const Snapshot& end, Training& t) {
  t.train_s = observer.seconds();
  if (!energy) return;
  const WindowResult w = energy->window("fit", observer.begin(), end);
  t.train_s = w.duration_s;
  t.train_energy_j = w.total_energy_j();
  t.fit_uncertainty_j = w.total_uncertainty_j();
  t.fit_updates = w.updates;
}

// A recurrence attempt's time and energy: to the target when it reached it, else the whole fit window.
json recurrence_json(const RecurrenceAttempt& attempt, const Training& t, const TrialObserver& observer) {
  const bool reached = t.target.has_value();
  const double time_s = reached ? t.target->tta_s : t.train_s;
  const std::optional<double> energy_j = reached ? t.target->eta_j : t.train_energy_j;
  json j = attempt.to_json();
  j["reached"] = reached;
  j["stopped_at_cost_bound"] = observer.stopped_at_bound() ? json(*observer.stopped_at_bound()) : json(nullptr);
  j["time_s"] = time_s;
  j["energy_j"] = energy_j ? json(*energy_j) : json(nullptr);
  j["cost_j"] = energy_j ? json(zeus_cost(attempt.eta, *energy_j, time_s, attempt.max_power_w)) : json(nullptr);
  const PowerLimitOptimizer* optimizer = observer.optimizer();
  j["power_limit_chosen_w"] = optimizer && optimizer->chosen_w() ? json(*optimizer->chosen_w()) : json(nullptr);
  return j;
}

}  // namespace

Training train_to_target(TrainingSession& session, EnergySession* energy, const TrialContext& ctx) {
  const TrainOptions o = trial_options(session, ctx);
  session.choose_threads(o);  // a calibration, if any, before the training's time and energy start
  Training t;
  MemoryPeakTracker memory(cuda_allocator_index(session.device()));
  memory.start();
  TrialObserver observer(ctx, energy, session.device(), t);
  t.result = session.train(o, &observer);
  const Snapshot end = energy ? energy->mark() : Snapshot{};
  t.memory = memory.finish();
  t.end_unix_s = unix_now_s();
  read_fit_window(energy, observer, end, t);
  if (observer.optimizer()) t.optimizer = observer.optimizer()->to_json();
  if (ctx.recurrence) t.recurrence = recurrence_json(*ctx.recurrence, t, observer);
  return t;
}

void check_training_finite(const Training& t, const RunConfig& c) {
  const std::vector<EpochRecord>& epochs = t.result.epoch_records;
  const auto finite = [](const EpochRecord& e) { return std::isfinite(e.train_loss) && std::isfinite(e.val_loss); };
  if (epochs.empty() || finite(epochs.back())) return;
  const EpochRecord& first =
      *std::find_if(epochs.begin(), epochs.end(), [&](const EpochRecord& e) { return !finite(e); });
  const bool train_bad = !std::isfinite(first.train_loss);
  const double loss = train_bad ? first.train_loss : first.val_loss;
  throw InputError("training diverged: the " + std::string(train_bad ? "training" : "validation") + " loss is " +
                       (std::isnan(loss) ? "NaN" : loss > 0 ? "infinite" : "-infinite") + " from epoch " +
                       std::to_string(first.number()) + " of " + std::to_string(epochs.size()) +
                       " on (learning rate " + json(c.lr).dump() +
                       "): a diverged trial's time and energy compare with nothing",
                   "lower training.lr, or use a precision with loss scaling; the trial is stored as failed and left out "
                   "of every table's figures");
}

CodecMeasurement measure_codec(TrainingSession& session, Engine& engine, EnergySession* energy, const Dataset& ds,
                       const RunConfig& c, const std::atomic<int>* stop) {
  const PrecisionPolicy& policy = session.policy();
  const Normalization* norm = c.normalizes() ? &session.normalization() : nullptr;
  CodecMeasurement codec;
  codec.compress_begin_unix_s = unix_now_s();
  check_stop(stop);
  MemoryPeakTracker memory(cuda_allocator_index(session.device()));
  memory.start();
  // One pass in its window, or (codec_min_window_s) passes filling it: measure_repeated's figures are per pass.
  const auto measure = [&](const char* phase, const std::function<void()>& work) {
    return c.codec_min_window_s > 0 ? measure_filled(energy, phase, c.codec_min_window_s, work)
                                    : measure_window(energy, phase, work);
  };
  codec.compress = measure("compress", [&] {
    codec.latent = encode_table(session.model(), engine, ds.data, norm, c, policy.param_dtype);
  });
  codec.compress_memory = memory.finish();
  codec.compress_end_unix_s = unix_now_s();
  check_stop(stop);
  memory.start();
  codec.decompress = measure("decompress", [&] {
    codec.reconstruction = decode_table(session.model(), engine, codec.latent, norm, c, ds.data_dimension());
  });
  codec.decompress_memory = memory.finish();
  codec.decompress_end_unix_s = unix_now_s();
  return codec;
}

json measure_codecs(TrainingSession& session, Engine& engine, EnergySession* energy, const Dataset& ds,
                    const RunConfig& c, const Training& training, const CodecMeasurement& codec) {
  BalerCodecSide baler;
  baler.reconstruction = codec.reconstruction;  // the trial's own output (the same bits)
  baler.latent_bytes = codec.latent.numel() * static_cast<int64_t>(codec.latent.element_size());
  baler.train_s = training.train_s;
  baler.train_energy_j = training.train_energy_j;
  baler.train_uncertainty_j = training.fit_uncertainty_j;
  const DecoderBytes decoder = measure_decoder_files(session.model(), session.normalization(), c, ds.original_shape);
  baler.model_bytes = decoder.model_bytes;
  baler.normalization_bytes = decoder.normalization_bytes;
  // Baler measured as the codecs are (a warm-up, then runs filling min_window_s, in windows of their
  // own), on the engine the trial's compress used.
  const Normalization* norm = c.normalizes() ? &session.normalization() : nullptr;
  return measure_baler_and_codecs(energy, session.model(), engine, ds, norm, c, session.policy().param_dtype, baler);
}

EnergyFigures read_energy(EnergySession* energy, const RunConfig& c, const Training& t, const CodecMeasurement& codec) {
  EnergyFigures f;
  if (!energy) return f;
  energy->finish();
  f.report = energy->report();
  f.total_energy_j = energy->total().total_energy_j();
  f.co2_g = emissions_g(*f.total_energy_j, energy->carbon());
  f.kind = energy->total().kinds();
  for (const auto& p : energy->phases().phases())
    f.phases.push_back({p.name, "energy", p.duration_s, p.total_energy_j(),
                        emissions_g(p.total_energy_j(), energy->carbon()), p.kinds()});
  // The measurement ± of each figure (from the meters' resolution, energy_window.h), apart from the
  // spread over repeats that the reports compute.
  const auto pm = [](const std::optional<double>& u) { return u ? json(*u) : json(nullptr); };
  const WindowResult* compress = energy->phases().find("compress");
  const WindowResult* decompress = energy->phases().find("decompress");
  f.uncertainty = {{"train_j", pm(t.fit_uncertainty_j)},
                   {"eta_j", pm(t.target ? t.target->eta_uncertainty_j : std::nullopt)},
                   {"compress_j", pm(compress ? compress->total_uncertainty_j() : std::nullopt)},
                   {"decompress_j", pm(decompress ? decompress->total_uncertainty_j() : std::nullopt)},
                   {"total_j", pm(energy->total().total_uncertainty_j())},
                   {"coverage", energy->total().uncertainty_coverage()}};
  for (const char* phase : {"train", "compress", "decompress"})
    if (const WindowResult* w = energy->phases().find(phase)) f.gpu_memory_peak_mib[phase] = w->gpu_memory_peak_mib();
  f.meter_updates = meter_updates_record(t.fit_updates, t.target ? t.target->eta_updates : std::nullopt,
                                         compress ? compress->updates : std::nullopt,
                                         decompress ? decompress->updates : std::nullopt, energy->min_meter_updates());
  f.thermal_windows = thermal_windows(f.report);
  f.samples = power_series(*energy, c.energy.sample_hz > 0 ? 0.5 / c.energy.sample_hz : 0.0,
                           {{"train", {t.begin_unix_s, t.end_unix_s}},
                            {"compress", {codec.compress_begin_unix_s, codec.compress_end_unix_s}},
                            {"decompress", {codec.compress_end_unix_s, codec.decompress_end_unix_s}}});
  return f;
}

}  // namespace balerbench
