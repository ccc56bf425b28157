// trial.cpp: see trial.h. measure_trial reads as the trial's stages (trial_stages.h); around them,
// what a trial records of its conditions: the power limits restored, the disturbance by other
// processes and other balerbench runs, and the harness's own time.
#include "harness/trial/trial.h"

#include <ATen/ATen.h>

#include <cstdio>

#include "datasets/dataset.h"
#include "harness/base/clock.h"
#include "harness/base/cpu_activity.h"
#include "harness/base/processes.h"
#include "harness/energy/energy_session.h"
#include "harness/energy/gpu_watch.h"
#include "harness/power/power_limit.h"
#include "harness/monitor/live_metrics.h"
#include "harness/monitor/monitor.h"
#include "harness/run/inference.h"
#include "harness/run/result_sections.h"
#include "harness/run/run_runtime.h"
#include "harness/run/training_session.h"
#include "harness/trial/interrupted.h"
#include "harness/trial/trial_conditions.h"
#include "harness/trial/trial_stages.h"

namespace balerbench {
namespace {

using nlohmann::json;

// The labels of the live trial (Prometheus, InfluxDB, the progress line).
TrialLabels live_labels(const TrialSpec& spec, const TrialContext& ctx, const PrecisionPolicy& policy) {
  TrialLabels t;
  t.experiment = ctx.protocol->name;
  t.run_ordinal = ctx.run_ordinal;
  t.run_count = ctx.run_count;
  t.batch_size = spec.batch_size();
  t.precision = policy.name();
  t.power_limit_w = spec.power_limit_w ? json(*spec.power_limit_w).dump() : "none";
  return t;
}

// The stages, in order, each one's value into `out` as it returns; `peers` is sampled at the
// edges of the measured windows.
void run_stages(const TrialSpec& spec, const TrialContext& ctx, RunConfig& c, PeerWatch& peers, TrialOutcome& out) {
  out.hardware = prepare_hardware(spec, ctx, c);
  const c10::Device device = run_device(c);
  out.device = device.str();
  const std::unique_ptr<EnergySession> energy = open_energy_session(c.energy, device, make_run_id());
  if (energy && ctx.live) feed_live_metrics(*ctx.live, *energy);
  const Dataset& ds = *ctx.dataset;
  TrainingSession session(c, ds, device, energy.get(), ctx.live);  // data and model, outside every window
  out.setup = describe_setup(session, ctx.dataset_label, ds, c.batch_size);
  LiveTrial live(ctx.live, live_labels(spec, ctx, session.policy()));  // ended on every exit path
  const CpuActivity train_begin = read_cpu_activity();
  peers.sample();
  if (ctx.gpus) out.gpus_at_start = ctx.gpus->thermal_json();  // as training begins
  out.training = train_to_target(session, energy.get(), ctx);
  check_training_finite(*out.training, c);
  const CpuActivity codec_begin = read_cpu_activity();
  peers.sample();
  const std::unique_ptr<Engine> engine = make_run_inference_engine(session, c);  // the trained model's
  out.codec = measure_codec(session, *engine, energy.get(), ds, c, ctx.stop);
  if (c.codecs.enabled) {
    check_stop(ctx.stop);
    out.codecs = measure_codecs(session, *engine, energy.get(), ds, c, *out.training, *out.codec);
  }
  out.window_activity = {{"train", disturbance(train_begin, codec_begin)},
                         {"compress_decompress", disturbance(codec_begin, read_cpu_activity())}};
  if (ctx.gpus) out.gpus_at_end = ctx.gpus->thermal_json();
  live.end();
  out.reconstruction =
      reconstruction_json(ds, out.codec->reconstruction.to(at::kDouble).reshape({ds.rows(), session.features()}));
  out.energy = read_energy(energy.get(), c, *out.training, *out.codec);
}

// Gives the GPUs their power limits back after a trial, noting each restored limit in the result.
void restore_power_limits(const TrialContext& ctx, TrialRecord& rec) {
  if (!ctx.guard) return;
  json& result = rec.result;
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

// Other processes' CPU time and the hypervisor's steal over the whole trial (its cooldown
// included), other balerbench processes beside it, and the same per measured window; and the GPU's
// heat (`thermal`: thermal_disturbance's, kept apart as "thermal" so that the tables can tell a busy
// machine from a hot GPU).
json trial_disturbance(const CpuActivity& begin, const PeerWatch& peers, const json& window_activity,
                       const json& thermal) {
  json d = disturbance(begin, read_cpu_activity());
  if (!thermal.is_null()) {
    if (!d.is_object()) d = {{"disturbed", false}};
    d["thermal"] = thermal;
  }
  if (d.is_object() && peers.any_active()) {
    // Another balerbench beside this trial (a second run into the same or another database, a
    // shell's `train`): it competed for the CPUs and its power is in the same meters.
    d["disturbed"] = true;
    const json& r = d["reason"];
    d["reason"] = (r.is_string() && !r.get<std::string>().empty() ? r.get<std::string>() + "; " : "") + peers.reason();
  }
  if (d.is_object() && window_activity.is_object()) {
    // Per window too: a neighbour during the short codec windows is diluted in the whole trial's figure.
    d["windows"] = window_activity;
    const json& whole = d["reason"];
    std::string reason = whole.is_string() ? whole.get<std::string>() : "";
    for (const auto& [name, w] : window_activity.items())
      if (w.is_object() && w.value("disturbed", false)) {
        d["disturbed"] = true;
        reason += (reason.empty() ? "" : "; ") + name + ": " + w["reason"].get<std::string>();
      }
    if (!reason.empty()) d["reason"] = reason;
  }
  return d;
}

}  // namespace

std::string stored_error(const std::exception& e, const TrialSpec& spec) {
  const auto* torch_error = dynamic_cast<const c10::Error*>(&e);
  std::string text = torch_error ? torch_error->what_without_backtrace() : e.what();
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
  const std::size_t eol = text.find_first_of("\r\n");
  if (eol == std::string::npos && !torch_error) return text;
  std::fprintf(stderr, "balerbench: trial %s (%s) failed; the whole message:\n%s\n", spec.key.c_str(), spec.label().c_str(),
               e.what());
  if (eol == std::string::npos) return text;
  return text.substr(0, eol) + " (the rest of the message is in the run's log, on stderr)";
}

TrialRecord measure_trial(const TrialSpec& spec, TrialContext& ctx) {
  const CpuActivity activity_begin = read_cpu_activity();
  PeerWatch peers;  // other balerbench processes on this machine, sampled with the CPU activity
  peers.sample();
  TrialRecord rec = start_record(spec, ctx);
  const nlohmann::json of = ctx.run_count < 0 ? nlohmann::json(nullptr) : nlohmann::json(ctx.run_count);  // open-ended
  rec.result = {{"run_design", {{"order", ctx.order}, {"seed", ctx.order_seed}, {"position", ctx.run_ordinal},
                                {"of", of}, {"warmup", spec.warmup}}}};
  RunConfig c = spec.config;
  c.progress = ctx.progress;
  ctx.recurrence = spec.recurrence ? &*spec.recurrence : nullptr;
  TrialOutcome out;
  try {
    run_stages(spec, ctx, c, peers, out);
    rec.status = TrialStatus::kOk;
  } catch (const Interrupted&) {
    throw;
  } catch (const PowerLimitError& e) {
    rec.status = e.permission ? TrialStatus::kSkipped : TrialStatus::kFailed;
    rec.error = stored_error(e, spec);
  } catch (const std::exception& e) {
    rec.status = TrialStatus::kFailed;
    rec.error = stored_error(e, spec);  // an InputError's text carries its hint
  }
  build_record(out, c, *ctx.protocol, rec);
  restore_power_limits(ctx, rec);
  rec.finished_unix_s = unix_now_s();
  peers.sample();
  const bool sets_limit = spec.power_limit_w.has_value() || ctx.protocol->optimizer.enabled;
  rec.result["disturbance"] =
      trial_disturbance(activity_begin, peers, out.window_activity,
                        thermal_disturbance(rec.result.value("thermal", json()), sets_limit));
  rec.result["concurrent_balerbench"] = peers.to_json();
  if (rec.status == TrialStatus::kOk) {
    // Everything the trial spent outside the windows it reports: opening meters, the idle
    // baseline, data and model set-up, per-epoch snapshots, provenance, the power series.
    const double measured = rec.train_s.value_or(0) + rec.compress_s.value_or(0) + rec.decompress_s.value_or(0);
    rec.result["wall_s"] = rec.finished_unix_s - rec.started_unix_s;
    rec.result["harness_overhead_s"] = rec.result["wall_s"].get<double>() - measured - ctx.protocol->cooldown_s;
  }
  return rec;
}

}  // namespace balerbench
