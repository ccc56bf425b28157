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
#include "harness/energy/energy_session.h"
#include "harness/energy/host_info.h"
#include "harness/energy/nvml_library.h"
#include "harness/energy/simulated_gpu.h"
#include "harness/engine/codec.h"
#include "harness/engine/cycle_parts.h"
#include "harness/engine/precision.h"
#include "harness/engine/torch_compat.h"
#include "harness/engine/trainer.h"
#include "harness/power/optimizer.h"
#include "harness/power/power_limit.h"
#include "harness/report/live_metrics.h"
#include "harness/report/monitor.h"
#include "harness/sweep/stop_signals.h"
#include "harness/version.h"
#include "models/architecture.h"
#include "models/autoencoder.h"

namespace balerbench {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace cycle_detail;  // NOLINT

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

std::optional<double> opt_energy(const EnergySession* s, const WindowResult& w) {
  if (!s) return std::nullopt;
  return w.total_energy_j();
}

// "GPU: NVIDIA H100 80GB HBM3 x1" / "simulated GPU: ..." / "CPU: Intel Xeon ... (2 CPUs)".
std::string hardware_label(const json& provenance, const json* energy_report) {
  std::string gpu;
  if (energy_report)
    for (const auto& m : (*energy_report)["meters"]) {
      if (m["name"] == "nvml")
        for (const auto& g : m["details"]["gpus"]) gpu += (gpu.empty() ? "" : " + ") + g["name"].get<std::string>();
      if (m["name"] == "simulated_gpu")
        gpu += (gpu.empty() ? "" : " + ") + m["details"]["name"].get<std::string>() + " (SIMULATED)";
    }
  if (gpu.empty())
    for (const auto& g : provenance["gpus"]) gpu += (gpu.empty() ? "" : " + ") + g["name"].get<std::string>();
  std::string cpu = provenance.value("cpu_model", std::string("unknown CPU"));
  cpu += " (" + std::to_string(provenance.value("logical_cpus", 0)) + " CPUs)";
  return gpu.empty() ? "CPU: " + cpu : "GPU: " + gpu + "; CPU: " + cpu;
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

double unix_now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

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
  TrialRecord rec;
  rec.key = spec.key;
  rec.experiment = ex.name;
  rec.grid_index = spec.index;
  rec.repeat = spec.repeat;
  rec.batch_size = spec.batch_size;
  rec.epochs = spec.epochs;
  rec.precision = spec.precision;
  rec.power_limit_w = spec.power_limit_w;
  rec.spec = spec.spec;
  rec.started_unix_s = unix_now();
  rec.provenance = ctx.provenance.is_null() ? base_provenance() : ctx.provenance;
  rec.hardware = hardware_label(rec.provenance, nullptr);
  rec.max_power_w = ex.max_power_w;
  json result = json::object();
  RunConfig c = spec.config;
  c.progress = ctx.progress;
  try {
    check_stop(ctx.stop);
    if (ex.cooldown_s > 0) interruptible_sleep(ex.cooldown_s, ctx.stop);
    configure_runtime(c);
    rec.provenance["threads"] = at::get_num_threads();  // as this trial's config set them

    // The power limit: NVML GPUs when there are any, else the simulated GPU's model.
    const bool simulated_gpu =
        std::find(c.energy.meters.begin(), c.energy.meters.end(), "simulated_gpu") != c.energy.meters.end();
    json limits = json::array();
    if (ctx.power) {
      double max_w = 0;
      for (std::size_t i = 0; i < ctx.power->count(); ++i) max_w += ctx.power->constraints_w(i).second;
      if (!rec.max_power_w) rec.max_power_w = max_w;
    } else if (simulated_gpu && !rec.max_power_w) {
      rec.max_power_w = c.energy.simulated_gpu.max_limit_w;
    }
    if (spec.power_limit_w) {
      if (ctx.power && ctx.guard) {
        for (const AppliedLimit& a : ctx.guard->apply(*spec.power_limit_w)) limits.push_back(a.to_json());
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
        throw PowerLimitError(
            "no GPU power limit to set: NVML sees no GPU and the experiment has no simulated_gpu "
            "meter",
            false);
      }
    }

    const c10::Device device = resolve_device(c.device);
    std::unique_ptr<EnergySession> energy;
    if (c.energy.enabled) {
      std::function<void()> sync;
      if (device.is_cuda()) sync = [index = device.index()] { torch::cuda::synchronize(index); };
      energy = std::make_unique<EnergySession>(c.energy, std::move(sync), make_run_id());
      if (ctx.live) feed_live_metrics(*ctx.live, *energy);
    }

    // Data and model (outside every window).
    const Dataset& ds = *ctx.dataset;
    check_dimensions(c, ds);
    const int64_t features = ds.features();
    const int64_t latent = latent_size(features, c.compression_ratio);
    const Normalization norm = c.normalizes() ? Normalization::fit(ds.data) : identity(features);
    at::manual_seed(static_cast<uint64_t>(c.seed));
    auto model = make_model(c.model_name, features, latent);
    const PrecisionPolicy policy = apply_precision(c, *model, device);
    const at::Tensor x = norm.apply(ds.data).to(device, policy.data_dtype);
    auto [x_train, x_val] = split(x, c.test_size, static_cast<uint64_t>(c.seed));
    const Architecture arch = model->architecture();
    json layers = json::array();
    for (const auto& l : arch.layers)
      layers.push_back({{"name", l.name},
                        {"kind", l.kind},
                        {"part", l.part},
                        {"in", l.in_features},
                        {"out", l.out_features},
                        {"parameters", l.parameters()},
                        {"macs_per_sample", l.macs_per_sample()},
                        {"t1_operations", l.t1_operations(c.batch_size)}});
    result["model"] = {{"name", arch.model_name},
                       {"n_features", arch.n_features},
                       {"latent", arch.latent},
                       {"parameters", arch.parameters()},
                       {"macs_per_sample", arch.macs_per_sample()},
                       {"layers", layers}};
    result["dataset"] = dataset_json(ds);
    result["dataset"]["label"] = ex.dataset.label();
    result["dataset"]["bytes"] = ds.rows() * ds.features() * ds.source_item_bytes;

    if (ctx.live) {
      TrialLabels t;
      t.experiment = ex.name;
      t.trial_index = ctx.number;
      t.trial_count = ctx.count;
      t.batch_size = spec.batch_size;
      t.precision = policy.name;
      t.power_limit_w = spec.power_limit_w ? json(*spec.power_limit_w).dump() : "none";
      ctx.live->begin_trial(t);
    }

    // Training, with a snapshot at every epoch's end for cumulative time and energy.
    TrainOptions o = train_options(c);
    o.precision = policy;
    o.progress_context.trial_index = ctx.number;
    o.progress_context.trial_count = ctx.count;
    o.progress_context.trials_after = ctx.count - ctx.number;
    if (ctx.live) o.progress_context.power_w = [live = ctx.live] { return live->total_power_w(); };
    Snapshot phase_begin;
    if (energy)
      o.on_phase = [&](const char* phase, bool end) {
        if (!end)
          phase_begin = energy->mark();
        else
          energy->add_window(phase, phase_begin, energy->mark());
      };
    const std::atomic<int>* stop = ctx.stop;
    std::unique_ptr<PowerLimitOptimizer> optimizer;
    const Snapshot train_begin = energy ? energy->mark() : Snapshot{};
    const auto t_train = Clock::now();
    const double train_begin_unix = unix_now();
    if (ex.optimizer.enabled) {
      if (!ctx.power || !ctx.guard)
        throw PowerLimitError("the power-limit optimiser needs GPUs whose limits NVML can set (none here)", false);
      const auto [lo, hi] = ctx.power->constraints_w(0);
      OptimizerOptions oo{ex.optimizer.eta,           ex.optimizer.wait_steps, ex.optimizer.warmup_steps,
                          ex.optimizer.profile_steps, ex.optimizer.pl_step_w,  static_cast<int>(ctx.power->count())};
      optimizer = std::make_unique<PowerLimitOptimizer>(
          oo, power_limit_candidates(lo, hi, ex.optimizer.pl_step_w),
          [&](double w) {
            const auto applied = ctx.guard->apply(w);
            rec.enforced_power_limit_w = applied.at(0).enforced_w;
          },
          [&]() -> PowerLimitOptimizer::Reading {
            if (!energy) {
              synchronize_device(device);
              return {std::chrono::duration<double>(Clock::now() - t_train).count(), 0};
            }
            const WindowResult w = energy->counter_window("optimizer", train_begin, energy->mark());
            return {w.duration_s, w.total_energy_j()};
          });
      if (!rec.max_power_w) rec.max_power_w = optimizer->max_power_w();
    }
    o.on_step = [&](bool end) {
      check_stop(stop);
      if (!optimizer) return;
      if (end)
        optimizer->on_step_end();
      else
        optimizer->on_step_begin();
    };
    o.relative_error = ex.target.metric == "relative_error";
    bool target_hit = false;
    json eval_s = json::array();
    o.stop_training = [&] { return target_hit && ex.target.stop_when_reached; };
    const double train_rows = static_cast<double>(x_train.size(0));
    const TrainResult r = fit(*model, x_train, x_val, o, [&](const EpochRecord& e) {
      if (optimizer) optimizer->on_epoch_end();
      EpochRow row;
      row.epoch = e.epoch;
      row.train_loss = e.train_loss;
      row.val_loss = e.val_loss;
      row.lr = e.lr;
      row.duration_s = e.duration_s;
      row.relative_error = e.relative_error;
      eval_s.push_back(e.eval_duration_s);
      if (energy) {
        const WindowResult w = energy->counter_window("epochs", train_begin, energy->mark());
        row.elapsed_s = w.duration_s;
        row.energy_j = w.total_energy_j();
      } else {
        synchronize_device(device);
        row.elapsed_s = std::chrono::duration<double>(Clock::now() - t_train).count();
      }
      if (ex.target.enabled()) {
        const double metric = ex.target.metric == "val_loss" ? e.val_loss : *row.relative_error;
        row.target_met = std::isfinite(metric) && metric <= ex.target.value;
        if (row.target_met && !target_hit) {
          target_hit = true;
          rec.target_reached = true;
          rec.tta_s = row.elapsed_s;
          rec.eta_j = row.energy_j;
          rec.epochs_to_target = e.epoch + 1;
        }
      }
      rec.epoch_rows.push_back(row);
      if (ctx.live)
        ctx.live->on_epoch({e.epoch + 1, c.epochs, e.train_loss, x_val.defined() ? e.val_loss : kNoValue,
                            train_rows / std::max(e.duration_s, 1e-12), e.duration_s});
    });
    const Snapshot train_end = energy ? energy->mark() : Snapshot{};
    const double train_end_unix = unix_now();
    rec.train_s = std::chrono::duration<double>(Clock::now() - t_train).count();
    if (energy) {
      const WindowResult fit_w = energy->window("fit", train_begin, train_end);
      rec.train_s = fit_w.duration_s;
      rec.train_energy_j = fit_w.total_energy_j();
    }

    // Compress and decompress the whole dataset, each in its own window (timed alone without meters).
    auto measured = [&](const char* phase, std::optional<double>& seconds, std::optional<double>& joules,
                        const std::function<void()>& work) {
      check_stop(ctx.stop);
      const Snapshot begin = energy ? energy->mark() : Snapshot{};
      const auto t0 = Clock::now();
      work();
      if (energy) {
        const WindowResult w = energy->add_window(phase, begin, energy->mark());
        seconds = w.duration_s;
        joules = w.total_energy_j();
      } else {
        seconds = std::chrono::duration<double>(Clock::now() - t0).count();
      }
    };
    at::Tensor z, y;
    const double compress_begin_unix = unix_now();
    measured("compress", rec.compress_s, rec.compress_energy_j, [&] {
      z = encode_rows(*model, ds.data, c.normalizes() ? &norm : nullptr, latent_scalar_type(c, policy.param_dtype),
                      c.codec_chunk_rows, policy, nullptr);
    });
    const double compress_end_unix = unix_now();
    measured("decompress", rec.decompress_s, rec.decompress_energy_j, [&] {
      y = decode_rows(*model, z, c.normalizes() ? &norm : nullptr, c.codec_chunk_rows, policy, nullptr);
      if (ds.data_dimension() == 1) cast_integer_columns(y, c, features);
    });
    const double decompress_end_unix = unix_now();
    if (ctx.live) ctx.live->end_trial();

    result["reconstruction"] = reconstruction_json(ds, y.to(at::kDouble).reshape({ds.rows(), features}));
    result["latent_shape"] = {ds.rows(), latent};
    result["latent_dtype"] = dtype_name(z.scalar_type());
    result["epochs_run"] = static_cast<int64_t>(r.epochs.size());
    // Evaluation per epoch (validation loss, relative error), inside the epochs' times above.
    double eval_total_s = 0;
    for (const auto& v : eval_s) eval_total_s += v.get<double>();
    result["evaluation"] = {{"chunk_rows", r.eval_chunk_rows},
                            {"per_epoch_s", eval_s},
                            {"total_s", eval_total_s},
                            {"share_of_train", rec.train_s && *rec.train_s > 0 ? json(eval_total_s / *rec.train_s)
                                                                               : json(nullptr)}};
    result["early_stopped"] = r.early_stopped;
    result["stopped_at_target"] = r.stopped;
    result["final_train_loss"] = r.epochs.back().train_loss;
    result["final_val_loss"] = r.epochs.back().val_loss;
    result["has_validation"] = r.has_validation;
    result["train_rows"] = r.train_rows;
    result["val_rows"] = r.val_rows;
    result["precision"] = precision_json(r);
    result["device"] = device.str();
    result["power_limits"] = limits;
    result["target"] = ex.target.to_json();
    if (optimizer) result["power_limit_optimizer"] = optimizer->to_json();
    if (c.profile) {
      result["profile"] = profile_json(c, device, r.phases);
      const json phase_times = r.phases.to_json();
      for (const auto& [phase, times] : phase_times.items())
        if (times.is_object() && times.contains("duration_s"))
          rec.phases.push_back({phase, "profile", times["duration_s"].get<double>(), std::nullopt, std::nullopt, ""});
    }
    if (energy) {
      energy->finish();
      const json report = energy->report();
      rec.hardware = hardware_label(rec.provenance, &report);
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
      result["energy"] = {{"idle_baseline", report["idle_baseline"]},
                          {"sampler", report["sampler"]},
                          {"total", report["total"]},
                          {"phases", report["phases"]}};
      rec.samples = power_series(*energy, c.energy.sample_hz > 0 ? 0.5 / c.energy.sample_hz : 0.0,
                                 {{"train", {train_begin_unix, train_end_unix}},
                                  {"compress", {compress_begin_unix, compress_end_unix}},
                                  {"decompress", {compress_end_unix, decompress_end_unix}}});
    } else {
      rec.energy_kind = "none";
      rec.provenance["meters"] = json::array();
    }
    rec.status = "ok";
  } catch (const Interrupted&) {
    if (ctx.live) ctx.live->end_trial();
    throw;
  } catch (const PowerLimitError& e) {
    rec.status = e.permission ? "skipped" : "failed";
    rec.error = e.what();
  } catch (const std::exception& e) {
    rec.status = "failed";
    rec.error = e.what();  // an InputError's text carries its hint
  }
  if (ctx.guard) {
    for (const AppliedLimit& a : ctx.guard->restore()) {
      for (auto& l : result["power_limits"])
        if (l["uuid"] == a.uuid) l["restored_w"] = a.restored_w;
    }
  }
  rec.finished_unix_s = unix_now();
  if (rec.status == "ok") {
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
