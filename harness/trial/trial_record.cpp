// trial_record.cpp: build_record (trial_stages.h), the one place a trial's record and its result
// are written from what its stages returned.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include "datasets/dataset.h"
#include "harness/engine/memory_peak.h"
#include "harness/run/result_sections.h"
#include "harness/trial/trial_conditions.h"
#include "harness/trial/trial_stages.h"

namespace balerbench {
namespace {

using nlohmann::json;

void record_hardware(const HardwareSetup& hw, TrialRecord& rec) {
  rec.result["power_limits"] = hw.power_limits;
  rec.provenance["threads"] = hw.threads;
  rec.max_power_w = hw.max_power_w;
  if (hw.max_power_w)
    rec.result["max_power"] = {{"w", *hw.max_power_w}, {"source", hw.max_power_source}, {"gpus", hw.max_power_gpus}};
  if (!hw.gpu_limits.is_null()) rec.result["gpu_limits"] = hw.gpu_limits;  // read only, as found
  if (hw.enforced_power_limit_w) rec.enforced_power_limit_w = hw.enforced_power_limit_w;
}

void record_training(const Training& t, const RunConfig& c, TrialRecord& rec) {
  const TrainResult& r = t.result;
  json& result = rec.result;
  rec.engine = engine_name(r.engine);
  rec.epoch_rows = t.epoch_rows;
  rec.train_s = t.train_s;
  rec.train_energy_j = t.train_energy_j;
  if (t.target) {
    rec.target_reached = true;
    rec.tta_s = t.target->tta_s;
    rec.eta_j = t.target->eta_j;
    rec.epochs_to_target = t.target->epochs_to_target;
  }
  if (t.optimizer_limit_w) rec.enforced_power_limit_w = t.optimizer_limit_w;
  if (t.optimizer_max_power_w && !rec.max_power_w) {
    rec.max_power_w = t.optimizer_max_power_w;
    result["max_power"] = {{"w", *t.optimizer_max_power_w}, {"source", "power_limit_optimizer"}, {"gpus", nullptr}};
  }
  result["epochs_run"] = static_cast<int64_t>(r.epoch_records.size());
  // Evaluation (validation loss, relative error), inside the epochs' times; per epoch in the epochs table.
  result["evaluation"] = {{"chunk_rows", r.eval_chunk_rows},
                          {"total_s", t.eval_s},
                          {"share_of_train", t.train_s > 0 ? json(t.eval_s / t.train_s) : json(nullptr)}};
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
  if (!t.optimizer.is_null()) result["power_limit_optimizer"] = t.optimizer;
  if (!t.recurrence.is_null()) result["recurrence"] = t.recurrence;
  if (c.profile) {
    const json phase_times = r.phases.to_json();
    for (const auto& [phase, times] : phase_times.items())
      if (times.is_object() && times.contains("duration_s"))
        rec.phases.push_back({phase, "profile", times["duration_s"].get<double>(), std::nullopt, std::nullopt, ""});
  }
}

void record_codec(const CodecMeasurement& codec, const TrialOutcome& out, TrialRecord& rec) {
  rec.compress_s = codec.compress.duration_s;
  rec.compress_energy_j = codec.compress.energy_j;
  rec.decompress_s = codec.decompress.duration_s;
  rec.decompress_energy_j = codec.decompress.energy_j;
  rec.result["reconstruction"] = out.reconstruction;
  if (!out.codecs.is_null()) rec.result["codecs"] = out.codecs;
  rec.result["latent_shape"] = {codec.latent.size(0), codec.latent.size(1)};
  rec.result["latent_dtype"] = dtype_name(codec.latent.scalar_type());
}

void record_energy(const EnergyFigures& f, TrialRecord& rec) {
  json& result = rec.result;
  if (f.report.is_null()) {
    rec.energy_kind = "none";
    rec.provenance["meters"] = json::array();
    return;
  }
  rec.hardware = trial_hardware(rec.provenance, &f.report);
  rec.total_energy_j = f.total_energy_j;
  rec.co2_g = f.co2_g;
  rec.energy_kind = f.kind;
  rec.phases.insert(rec.phases.end(), f.phases.begin(), f.phases.end());
  json meters = json::array();
  for (const auto& m : f.report["meters"]) {
    json entry = {{"name", m["name"]}, {"kind", m["kind"]}};
    if (const std::string a = estimate_assumption(m); !a.empty()) entry["assumes"] = a;  // the tables' notes say it
    meters.push_back(entry);
  }
  rec.provenance["meters"] = meters;
  rec.provenance["skipped_meters"] = f.report["skipped_meters"];
  rec.provenance["carbon"] = f.report["carbon"];
  result["energy_uncertainty"] = f.uncertainty;
  if (!f.meter_updates.is_null()) result["meter_updates"] = f.meter_updates;
  if (result.contains("memory"))
    for (const auto& [phase, peak_mib] : f.gpu_memory_peak_mib)
      if (result["memory"].contains(phase)) add_gpu_memory_peak(result["memory"][phase], peak_mib);
  result["energy"] = {{"idle_baseline", f.report["idle_baseline"]},
                      {"process_tree", f.report["process_tree"]},
                      {"sampler", f.report["sampler"]},
                      {"total", f.report["total"]},
                      {"phases", f.report["phases"]}};
  rec.samples = f.samples;
}

}  // namespace

void build_record(const TrialOutcome& out, const RunConfig& c, const TrialProtocol& ex, TrialRecord& rec) {
  json& result = rec.result;
  if (out.hardware) record_hardware(*out.hardware, rec);
  // What the GPUs were through the trial, as far as it ran (a failed trial keeps its start).
  const json thermal = thermal_record(out.hardware ? out.hardware->thermal_wait : std::nullopt, ex.thermal,
                                      out.gpus_at_start, out.gpus_at_end,
                                      out.energy ? out.energy->thermal_windows : json(nullptr));
  if (!thermal.is_null()) result["thermal"] = thermal;
  if (out.codec && c.codec_min_window_s > 0)
    result["codec_passes"] = {{"compress", out.codec->compress.repeats}, {"decompress", out.codec->decompress.repeats},
                              {"min_window_s", c.codec_min_window_s}};
  if (!out.setup.is_null()) {
    result["model"] = out.setup["model"];
    result["dataset"] = out.setup["dataset"];
  }
  if (out.training) record_training(*out.training, c, rec);
  if (out.codec) record_codec(*out.codec, out, rec);
  if (!out.training || !out.codec || !out.energy) return;  // a stage failed: the record keeps what ran
  result["device"] = out.device;
  result["target"] = ex.target.to_json();
  if (c.profile) result["profile"] = profile_json(c, c10::Device(out.device), out.training->result.phases);
  result["memory"] = {{"train", out.training->memory.to_json()},
                      {"compress", out.codec->compress_memory.to_json()},
                      {"decompress", out.codec->decompress_memory.to_json()}};
  record_energy(*out.energy, rec);
}

}  // namespace balerbench
