// trial.cpp: see trial.h.
#include "harness/sweep/trial.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/cuda.h>

#include <chrono>
#include <cmath>
#include <thread>

#include "datasets/dataset.h"
#include "datasets/error.h"
#include "datasets/normalizer.h"
#include "datasets/synthetic.h"
#include "harness/base/clock.h"
#include "harness/base/cpu_activity.h"
#include "harness/base/processes.h"
#include "harness/energy/energy_session.h"
#include "harness/energy/host_info.h"
#include "harness/energy/nvml_library.h"
#include "harness/energy/simulated_gpu.h"
#include "harness/engine/codec.h"
#include "harness/engine/memory_peak.h"
#include "harness/engine/precision.h"
#include "harness/engine/run_setup.h"
#include "harness/engine/system_description.h"
#include "harness/engine/torch_compat.h"
#include "harness/engine/trainer.h"
#include "harness/engine/training_session.h"
#include "harness/power/optimizer.h"
#include "harness/power/power_limit.h"
#include "harness/monitor/live_metrics.h"
#include "harness/monitor/monitor.h"
#include "harness/sweep/stop_signals.h"
#include "harness/version.h"
#include "models/architecture.h"
#include "models/autoencoder.h"

namespace balerbench {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

void check_stop(const std::atomic<int>* stop) {
  if (stop && stop->load() != 0) throw Interrupted{stop->load()};
}

void interruptible_sleep(double seconds, const std::atomic<int>* stop) {
  const auto until = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < until) {
    check_stop(stop);
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
    std::this_thread::sleep_for(std::min(std::chrono::milliseconds(100), left));
  }
  check_stop(stop);
}

// The trial's hardware: the GPUs its meters measured (simulated ones marked), else the provenance's.
std::string trial_hardware(const json& provenance, const json* energy_report) {
  std::string gpus;
  if (energy_report)
    for (const GpuLabel& g : gpu_labels((*energy_report)["meters"])) gpus += (gpus.empty() ? "" : " + ") + g.display();
  return hardware_label(provenance, gpus);
}

// The sampler's series as power per interval, labelled with the phase it falls in.
// Snapshots taken at window edges land between the sampler's ticks; intervals
// are merged until they are at least `min_interval_s` long (half the sampling
// period), so a few-millisecond sliver does not show as a spike or a dip.
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
    if (w.duration_s <= 0) continue;
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

// ---- the stages of a trial, in the order they happen ----

// The record's grid coordinates and provenance, before anything runs.
TrialRecord new_record(const TrialSpec& spec, const TrialContext& ctx) {
  const Experiment& ex = *ctx.experiment;
  TrialRecord rec;
  rec.key = spec.key;
  rec.experiment = ex.name;
  rec.grid_index = spec.grid_index;
  rec.repeat = spec.repeat;
  rec.batch_size = spec.batch_size;
  rec.epochs = spec.epochs;
  rec.precision = precision_name(spec.precision);
  rec.engine = engine_name(spec.engine);  // the resolved engine replaces it once the session chose
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

// Cooldown, the CPU runtime, and the trial's power limit: NVML GPUs when there are any, else the
// simulated GPU's model (in `c`). Returns the limits applied, as stored in the result.
json prepare_hardware(const TrialSpec& spec, TrialContext& ctx, RunConfig& c, TrialRecord& rec) {
  const Experiment& ex = *ctx.experiment;
  check_stop(ctx.stop);
  if (ex.cooldown_s > 0) interruptible_sleep(ex.cooldown_s, ctx.stop);
  configure_runtime(c);
  rec.provenance["threads"] = at::get_num_threads();  // as this trial's config set them
  const bool simulated_gpu =
      std::find(c.energy.meters.begin(), c.energy.meters.end(), MeterChoice::kSimulatedGpu) != c.energy.meters.end();
  if (ctx.power) {
    double max_w = 0;
    for (std::size_t i = 0; i < ctx.power->count(); ++i) max_w += ctx.power->constraints_w(i).second;
    if (!rec.max_power_w) rec.max_power_w = max_w;
  } else if (simulated_gpu && !rec.max_power_w) {
    rec.max_power_w = c.energy.simulated_gpu.max_limit_w;
  }
  json limits = json::array();
  if (!spec.power_limit_w) return limits;
  if (ctx.power && ctx.guard) {
    for (const AppliedLimit& a : ctx.guard->apply(*spec.power_limit_w)) limits.push_back(a.to_json());
    if (limits.empty())
      throw PowerLimitError("no GPU power limit was applied: the guard returned no GPU", false);
    rec.enforced_power_limit_w = limits[0]["enforced_w"].get<double>();
  } else if (simulated_gpu) {
    SimulatedGpuModel model{c.energy.simulated_gpu};
    model.set_power_limit_w(*spec.power_limit_w);  // InputError outside the constraints
    c.energy.simulated_gpu.power_limit_w = *spec.power_limit_w;
    rec.enforced_power_limit_w = *spec.power_limit_w;
    limits.push_back({{"uuid", "simulated"},
                      {"name", c.energy.simulated_gpu.name},
                      {"requested_w", *spec.power_limit_w},
                      {"enforced_w", *spec.power_limit_w},
                      {"simulated", true}});
  } else {
    throw PowerLimitError("no GPU power limit to set: NVML sees no GPU and the experiment has no simulated_gpu meter",
                          false);
  }
  return limits;
}

// The model and the dataset as the result describes them.
void describe_setup(const TrainingSession& session, const Experiment& ex, const Dataset& ds, int64_t batch_size,
                    json& result) {
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
  result["model"] = {{"name", arch.model_name},
                     {"n_features", arch.n_features},
                     {"latent", arch.latent},
                     {"parameters", arch.parameters()},
                     {"macs_per_sample", arch.macs_per_sample()},
                     {"layers", layers}};
  result["dataset"] = dataset_json(ds);
  result["dataset"]["label"] = ex.dataset.label();
  result["dataset"]["bytes"] = ds.rows() * ds.features() * ds.source_item_bytes;
}

// The labels of the live trial (Prometheus, InfluxDB, the progress line).
TrialLabels live_labels(const TrialSpec& spec, const TrialContext& ctx, const PrecisionPolicy& policy) {
  TrialLabels t;
  t.experiment = ctx.experiment->name;
  t.run_ordinal = ctx.run_ordinal;
  t.run_count = ctx.run_count;
  t.batch_size = spec.batch_size;
  t.precision = policy.name();
  t.power_limit_w = spec.power_limit_w ? json(*spec.power_limit_w).dump() : "none";
  return t;
}

// The first epoch that meets the experiment's target gives TTA, ETA and the epochs to target.
class TargetTracker {
 public:
  explicit TargetTracker(const TargetSpec& target) : target_(target) {}
  void on_epoch(const EpochRecord& e, EpochRow& row, TrialRecord& rec) {
    if (!target_.enabled()) return;
    const double metric = target_.metric == "val_loss" ? e.val_loss : e.relative_error.value_or(NAN);
    row.target_met = std::isfinite(metric) && metric <= target_.value;
    if (!row.target_met || hit_) return;
    hit_ = true;
    rec.target_reached = true;
    rec.tta_s = row.elapsed_s;
    rec.eta_j = row.energy_j;
    rec.epochs_to_target = e.number();
  }
  bool stop() const { return hit_ && target_.stop_when_reached; }

 private:
  const TargetSpec& target_;
  bool hit_ = false;
};

// The Zeus-style power-limit optimiser of the experiment, when it has one: it sets limits through
// the guard and reads the training's time and energy so far.
std::unique_ptr<PowerLimitOptimizer> make_optimizer(TrialContext& ctx, EnergySession* energy,
                                                    const Snapshot& train_begin, TrialRecord& rec) {
  const OptimizerSpec& spec = ctx.experiment->optimizer;
  if (!spec.enabled) return nullptr;
  if (!ctx.power || !ctx.guard)
    throw PowerLimitError("the power-limit optimiser needs GPUs whose limits NVML can set (none here)", false);
  // The experiment parser refuses the optimiser with energy off: it must never weigh time against 0 J.
  if (!energy) throw std::logic_error("power-limit optimiser without an energy session");
  const auto [lo, hi] = ctx.power->constraints_w(0);
  OptimizerOptions oo{spec.eta,           spec.wait_steps, spec.warmup_steps,
                      spec.profile_steps, spec.pl_step_w,  static_cast<int>(ctx.power->count())};
  auto optimizer = std::make_unique<PowerLimitOptimizer>(
      oo, power_limit_candidates(lo, hi, spec.pl_step_w),
      [&ctx, &rec](double w) {
        const std::vector<AppliedLimit> applied = ctx.guard->apply(w);
        if (applied.empty()) throw PowerLimitError("no GPU power limit was applied: the guard returned no GPU", false);
        rec.enforced_power_limit_w = applied.front().enforced_w;
      },
      [energy, train_begin]() -> PowerLimitOptimizer::Reading {
        const WindowResult w = energy->counter_window("optimizer", train_begin, energy->mark());
        return {w.duration_s, w.total_energy_j()};
      });
  if (!rec.max_power_w) rec.max_power_w = optimizer->max_power_w();
  return optimizer;
}

struct Training {
  TrainResult result;
  double begin_unix_s = 0, end_unix_s = 0, eval_s = 0;
  json optimizer;  // the optimiser's profile, or null
  std::optional<double> fit_uncertainty_j, eta_uncertainty_j;  // measurement ± of train_energy_j and eta_j
  MemoryPeak memory;
};

// Trains, with a device-synchronised snapshot at every epoch's end for the cumulative time and energy
// of each epoch row, until the epochs run out (or the target is met, when the experiment says stop).
Training train_to_target(TrainingSession& session, EnergySession* energy, TrialContext& ctx, const RunConfig& c,
                         TrialRecord& rec) {
  const Experiment& ex = *ctx.experiment;
  TrainOptions o = session.options();
  o.progress_context.run_ordinal = ctx.run_ordinal;
  o.progress_context.run_count = ctx.run_count;
  o.progress_context.trials_after = ctx.run_count - ctx.run_ordinal;
  o.relative_error = ex.target.metric == "relative_error";
  session.choose_threads(o);  // a calibration, if any, before the training's time and energy start
  Training t;
  MemoryPeakTracker memory(cuda_allocator_index(session.device()));
  memory.start();
  const Snapshot begin = energy ? energy->mark() : Snapshot{};
  const auto t_train = SteadyClock::now();
  t.begin_unix_s = unix_now_s();
  std::unique_ptr<PowerLimitOptimizer> optimizer = make_optimizer(ctx, energy, begin, rec);
  o.on_step = [&](bool end) {
    check_stop(ctx.stop);
    if (optimizer) end ? optimizer->on_step_end() : optimizer->on_step_begin();
  };
  TargetTracker target(ex.target);
  o.stop_training = [&] { return target.stop(); };
  t.result = session.train(o, [&](const EpochRecord& e) {
    if (optimizer) optimizer->on_epoch_end();
    EpochRow row;
    row.epoch = e.epoch;
    row.train_loss = e.train_loss;
    row.val_loss = e.val_loss;
    row.lr = e.lr;
    row.duration_s = e.duration_s;
    row.relative_error = e.relative_error;
    row.eval_s = e.eval_duration_s;
    t.eval_s += e.eval_duration_s;
    if (energy) {
      const WindowResult w = energy->counter_window("epochs", begin, energy->mark());
      row.elapsed_s = w.duration_s;
      row.energy_j = w.total_energy_j();
      row.energy_pm_j = w.total_uncertainty_j();
      target.on_epoch(e, row, rec);
      if (rec.epochs_to_target && *rec.epochs_to_target == e.number() && !t.eta_uncertainty_j)
        t.eta_uncertainty_j = w.total_uncertainty_j();  // ETA is this window: training start to this epoch
    } else {
      synchronize_device(session.device());
      row.elapsed_s = seconds_since(t_train);
      target.on_epoch(e, row, rec);
    }
    rec.epoch_rows.push_back(row);
  });
  const Snapshot end = energy ? energy->mark() : Snapshot{};
  t.memory = memory.finish();
  t.end_unix_s = unix_now_s();
  rec.train_s = seconds_since(t_train);
  if (energy) {
    const WindowResult w = energy->window("fit", begin, end);
    rec.train_s = w.duration_s;
    rec.train_energy_j = w.total_energy_j();
    t.fit_uncertainty_j = w.total_uncertainty_j();
  }
  if (optimizer) t.optimizer = optimizer->to_json();
  return t;
}

struct Codec {
  at::Tensor latent, reconstruction;
  MemoryPeak compress_memory, decompress_memory;
  double compress_begin_unix_s = 0, compress_end_unix_s = 0, decompress_end_unix_s = 0;
};

// Compresses and decompresses the whole dataset, each in its own energy window (timed alone without
// meters).
Codec measure_codec(TrainingSession& session, EnergySession* energy, const Dataset& ds, const RunConfig& c,
                    const std::atomic<int>* stop, TrialRecord& rec) {
  const PrecisionPolicy& policy = session.policy();
  const Normalization* norm = c.normalizes() ? &session.normalization() : nullptr;
  Codec codec;
  const std::unique_ptr<FusedDenseEngine> fused =
      codec_engine(codec_decision(session.engine(), policy), session.model(), c);
  codec.compress_begin_unix_s = unix_now_s();
  check_stop(stop);
  MemoryPeakTracker memory(cuda_allocator_index(session.device()));
  memory.start();
  const Measured compress = measure_window(energy, "compress", [&] {
    codec.latent = encode_rows(session.model(), ds.data, norm, latent_scalar_type(c, policy.param_dtype),
                               c.codec_chunk_rows, policy, nullptr, fused.get());
  });
  codec.compress_memory = memory.finish();
  rec.compress_s = compress.duration_s;
  rec.compress_energy_j = compress.energy_j;
  codec.compress_end_unix_s = unix_now_s();
  check_stop(stop);
  memory.start();
  const Measured decompress = measure_window(energy, "decompress", [&] {
    codec.reconstruction =
        decode_rows(session.model(), codec.latent, norm, c.codec_chunk_rows, policy, nullptr, fused.get());
    if (ds.data_dimension() == 1) cast_integer_columns(codec.reconstruction, c, session.features());
  });
  codec.decompress_memory = memory.finish();
  rec.decompress_s = decompress.duration_s;
  rec.decompress_energy_j = decompress.energy_j;
  codec.decompress_end_unix_s = unix_now_s();
  return codec;
}

// What the trial learned and measured, into the record and its result.
void record_training(const TrainingSession& session, const Training& t, const Codec& codec, const Dataset& ds,
                     const RunConfig& c, const Experiment& ex, TrialRecord& rec, json& result) {
  const TrainResult& r = t.result;
  rec.engine = engine_name(r.engine);
  result["reconstruction"] = reconstruction_json(ds, codec.reconstruction.to(at::kDouble).reshape({ds.rows(), session.features()}));
  result["latent_shape"] = {ds.rows(), session.latent()};
  result["latent_dtype"] = dtype_name(codec.latent.scalar_type());
  result["epochs_run"] = static_cast<int64_t>(r.epoch_records.size());
  // Evaluation (validation loss, relative error), inside the epochs' times; per epoch in the epochs table.
  result["evaluation"] = {{"chunk_rows", r.eval_chunk_rows},
                          {"total_s", t.eval_s},
                          {"share_of_train", rec.train_s && *rec.train_s > 0 ? json(t.eval_s / *rec.train_s)
                                                                             : json(nullptr)}};
  result["early_stopped"] = r.early_stopped;
  result["stopped_at_target"] = r.stopped;
  result["final_train_loss"] = r.epoch_records.back().train_loss;
  result["final_val_loss"] = r.epoch_records.back().val_loss;
  result["has_validation"] = r.has_validation;
  result["train_rows"] = r.train_rows;
  result["val_rows"] = r.val_rows;
  result["precision"] = precision_json(r);
  result["engine"] = engine_json(r);
  result["threads"] = r.threads;
  rec.provenance["threads"] = at::get_num_threads();  // as the trial trained (calibrated unless the config set it)
  rec.provenance["engine"] = result["engine"];
  result["device"] = session.device().str();
  result["target"] = ex.target.to_json();
  if (!t.optimizer.is_null()) result["power_limit_optimizer"] = t.optimizer;
  if (c.profile) {
    result["profile"] = profile_json(c, session.device(), r.phases);
    const json phase_times = r.phases.to_json();
    for (const auto& [phase, times] : phase_times.items())
      if (times.is_object() && times.contains("duration_s"))
        rec.phases.push_back({phase, "profile", times["duration_s"].get<double>(), std::nullopt, std::nullopt, ""});
  }
}

// The energy session's figures: totals, phases, meters, the power series by phase.
void record_energy(EnergySession* energy, const RunConfig& c, const Training& t, const Codec& codec,
                   TrialRecord& rec, json& result) {
  if (!energy) {
    rec.energy_kind = "none";
    rec.provenance["meters"] = json::array();
    return;
  }
  energy->finish();
  const json report = energy->report();
  rec.hardware = trial_hardware(rec.provenance, &report);
  rec.total_energy_j = energy->total().total_energy_j();
  rec.co2_g = emissions_g(*rec.total_energy_j, energy->carbon());
  rec.energy_kind = energy->total().kinds();
  for (const auto& p : energy->phases().phases())
    rec.phases.push_back({p.name, "energy", p.duration_s, p.total_energy_j(),
                          emissions_g(p.total_energy_j(), energy->carbon()), p.kinds()});
  json meters = json::array();
  for (const auto& m : report["meters"]) meters.push_back({{"name", m["name"]}, {"kind", m["kind"]}});
  rec.provenance["meters"] = meters;
  rec.provenance["skipped_meters"] = report["skipped_meters"];
  rec.provenance["carbon"] = report["carbon"];
  // The measurement ± of each figure (from the meters' resolution, energy_window.h), apart from the
  // spread over repeats that the reports compute.
  const auto pm = [](const std::optional<double>& u) { return u ? json(*u) : json(nullptr); };
  const WindowResult* compress = energy->phases().find("compress");
  const WindowResult* decompress = energy->phases().find("decompress");
  result["energy_uncertainty"] = {
      {"train_j", pm(t.fit_uncertainty_j)},
      {"eta_j", pm(t.eta_uncertainty_j)},
      {"compress_j", pm(compress ? compress->total_uncertainty_j() : std::nullopt)},
      {"decompress_j", pm(decompress ? decompress->total_uncertainty_j() : std::nullopt)},
      {"total_j", pm(energy->total().total_uncertainty_j())},
      {"coverage", energy->total().uncertainty_coverage()}};
  if (result.contains("memory"))
    for (const char* phase : {"train", "compress", "decompress"})
      if (const WindowResult* w = energy->phases().find(phase))
        if (result["memory"].contains(phase)) add_gpu_memory_peak(result["memory"][phase], w->gpu_memory_peak_mib());
  result["energy"] = {{"idle_baseline", report["idle_baseline"]},
                      {"process_tree", report["process_tree"]},
                      {"sampler", report["sampler"]},
                      {"total", report["total"]},
                      {"phases", report["phases"]}};
  rec.samples = power_series(*energy, c.energy.sample_hz > 0 ? 0.5 / c.energy.sample_hz : 0.0,
                             {{"train", {t.begin_unix_s, t.end_unix_s}},
                              {"compress", {codec.compress_begin_unix_s, codec.compress_end_unix_s}},
                              {"decompress", {codec.compress_end_unix_s, codec.decompress_end_unix_s}}});
}

}  // namespace

std::shared_ptr<const Dataset> load_experiment_dataset(const DatasetSpec& spec) {
  if (!spec.path.empty()) return std::make_shared<Dataset>(load_dataset(spec.path));
  SyntheticData d = spec.generator == "cms"
                        ? generate_cms_like(spec.rows, static_cast<uint64_t>(spec.seed))
                        : generate_cfd_like(spec.rows, spec.height, spec.width, static_cast<uint64_t>(spec.seed));
  auto ds = std::make_shared<Dataset>(
      dataset_from_array(NpyArray::from_doubles(d.shape, d.values), d.names, "generator " + spec.generator));
  ds->source_path = spec.label();
  return ds;
}

json base_provenance() {
  const HostInfo h = read_host_info();
  json gpus = json::array();
  json driver = nullptr, gpu_note = nullptr;
  std::string reason;
  if (auto lib = NvmlLibrary::open(reason)) {
    driver = lib->driver_version();
    std::string note;
    for (const auto& g : lib->visible_gpus(note))
      gpus.push_back({{"index", g.index}, {"name", g.name}, {"uuid", g.uuid}});
  } else {
    gpu_note = reason;
  }
  json cuda = nullptr;
  if (built_with_cuda()) {
    try {
      const long v = at::detail::getCUDAHooks().versionCUDART();
      cuda = std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
    } catch (const std::exception&) {
      cuda = "unknown";
    }
  }
  return {{"host", h.hostname},
          {"os", h.os},
          {"cpu_model", h.cpu_model},
          {"logical_cpus", h.logical_cpus},
          {"sockets", h.sockets},
          {"ram_total_gb", h.ram_total_gb},
          {"gpus", gpus},
          {"gpu_note", gpu_note},
          {"nvidia_driver", driver},
          {"cuda", cuda},
          {"libtorch", torch_version_string()},
          {"balerbench", kVersion},
          {"git_revision", git_revision()}};
}

TrialRecord run_trial(const TrialSpec& spec, TrialContext& ctx) {
  const Experiment& ex = *ctx.experiment;
  const CpuActivity activity_begin = read_cpu_activity();
  PeerWatch peers;  // other balerbench processes on this machine, sampled with the CPU activity
  peers.sample();
  TrialRecord rec = new_record(spec, ctx);
  json result = json::object();
  result["run_design"] = {{"order", ctx.order}, {"seed", ctx.order_seed}, {"position", ctx.run_ordinal},
                          {"of", ctx.run_count}, {"warmup", spec.warmup}};
  json window_activity;  // other processes and steal per measured window (train; compress and decompress)
  RunConfig c = spec.config;
  c.progress = ctx.progress;
  try {
    result["power_limits"] = prepare_hardware(spec, ctx, c, rec);
    const c10::Device device = resolve_device(c.device);
    const std::unique_ptr<EnergySession> energy = open_energy_session(c.energy, device, make_run_id());
    if (energy && ctx.live) feed_live_metrics(*ctx.live, *energy);
    const Dataset& ds = *ctx.dataset;
    TrainingSession session(c, ds, device, energy.get(), ctx.live);  // data and model, outside every window
    describe_setup(session, ex, ds, c.batch_size, result);
    LiveTrial live(ctx.live, live_labels(spec, ctx, session.policy()));  // ended on every exit path
    const CpuActivity train_begin = read_cpu_activity();
    peers.sample();
    const Training training = train_to_target(session, energy.get(), ctx, c, rec);
    const CpuActivity codec_begin = read_cpu_activity();
    peers.sample();
    const Codec codec = measure_codec(session, energy.get(), ds, c, ctx.stop, rec);
    window_activity = {{"train", disturbance(train_begin, codec_begin)},
                       {"compress_decompress", disturbance(codec_begin, read_cpu_activity())}};
    live.end();
    record_training(session, training, codec, ds, c, ex, rec, result);
    result["memory"] = {{"train", training.memory.to_json()},
                        {"compress", codec.compress_memory.to_json()},
                        {"decompress", codec.decompress_memory.to_json()}};
    record_energy(energy.get(), c, training, codec, rec, result);
    rec.status = TrialStatus::kOk;
  } catch (const Interrupted&) {
    throw;
  } catch (const PowerLimitError& e) {
    rec.status = e.permission ? TrialStatus::kSkipped : TrialStatus::kFailed;
    rec.error = e.what();
  } catch (const std::exception& e) {
    rec.status = TrialStatus::kFailed;
    rec.error = e.what();  // an InputError's text carries its hint
  }
  if (ctx.guard) {
    try {
      for (const AppliedLimit& a : ctx.guard->restore()) {
        for (auto& l : result["power_limits"])
          if (l["uuid"] == a.uuid) l["restored_w"] = a.restored_w;
      }
    } catch (const PowerLimitError& e) {
      // A GPU that cannot be reached (lost, its driver gone) cannot take its limit back now. The
      // guard keeps the original in its journal, and tries again after the next trial, at the end of
      // the sweep, and at the start of the next `balerbench run`.
      const std::string note = std::string(e.what()) + " (the original stays in the power-limit journal; it is " +
                               "restored as soon as the GPU answers, at the latest by the next balerbench run)";
      result["power_limit_restore_error"] = note;
      if (rec.status != TrialStatus::kOk) rec.error += (rec.error.empty() ? "" : "; ") + note;
      else std::fprintf(stderr, "balerbench: warning: %s\n", note.c_str());  // a failure's line says it
    }
  }
  rec.finished_unix_s = unix_now_s();
  // Other processes' CPU time and the hypervisor's steal over the whole trial (its cooldown included).
  result["disturbance"] = disturbance(activity_begin, read_cpu_activity());
  peers.sample();
  // Another balerbench beside this trial (a second run into the same or another database, a shell's
  // `train`): it competed for the CPUs and its power is in the same meters.
  result["concurrent_balerbench"] = peers.to_json();
  if (result["disturbance"].is_object() && peers.any_active()) {
    result["disturbance"]["disturbed"] = true;
    const json& r = result["disturbance"]["reason"];
    result["disturbance"]["reason"] = (r.is_string() && !r.get<std::string>().empty() ? r.get<std::string>() + "; " : "") +
                                      peers.reason();
  }
  if (result["disturbance"].is_object() && window_activity.is_object()) {
    // Per window too: a neighbour during the short codec windows is diluted in the whole trial's figure.
    result["disturbance"]["windows"] = window_activity;
    const json& whole = result["disturbance"]["reason"];
    std::string reason = whole.is_string() ? whole.get<std::string>() : "";
    for (const auto& [name, w] : window_activity.items())
      if (w.is_object() && w.value("disturbed", false)) {
        result["disturbance"]["disturbed"] = true;
        reason += (reason.empty() ? "" : "; ") + name + ": " + w["reason"].get<std::string>();
      }
    if (!reason.empty()) result["disturbance"]["reason"] = reason;
  }
  if (rec.status == TrialStatus::kOk) {
    // Everything the trial spent outside the windows it reports: opening meters, the idle
    // baseline, data and model set-up, per-epoch snapshots, provenance, the power series.
    const double measured = rec.train_s.value_or(0) + rec.compress_s.value_or(0) + rec.decompress_s.value_or(0);
    result["wall_s"] = rec.finished_unix_s - rec.started_unix_s;
    result["harness_overhead_s"] = result["wall_s"].get<double>() - measured - ex.cooldown_s;
  }
  rec.result = result;
  return rec;
}

}  // namespace balerbench
