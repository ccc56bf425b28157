// trial_identity.cpp: see trial_identity.h.
#include "harness/report/trial_identity.h"

#include "harness/base/system_info.h"

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <cstdio>

namespace balerbench {

using nlohmann::json;

namespace {

std::optional<std::string> string_at(const json& object, const char* key) {
  if (!object.is_object() || !object.contains(key) || !object[key].is_string()) return std::nullopt;
  const std::string s = object[key].get<std::string>();
  return s.empty() ? std::nullopt : std::optional<std::string>(s);
}

bool true_at(const json& object, const char* key) {
  return object.is_object() && object.contains(key) && object[key].is_boolean() && object[key].get<bool>();
}

// A part of a system description as text: a string as it is; a number as written; an object by
// the values of `keys` it has (joined by spaces), else its JSON; an array item by item, joined by " + ".
std::string text_of(const json& v, std::initializer_list<const char*> keys) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number() || v.is_boolean()) return v.dump();
  if (v.is_array()) {
    std::string s;
    for (const auto& item : v) s += (s.empty() ? "" : " + ") + text_of(item, keys);
    return s;
  }
  if (!v.is_object()) return "";
  std::string s;
  for (const char* k : keys)
    if (v.contains(k) && (v[k].is_string() || v[k].is_number())) {
      const std::string part = v[k].is_string() ? v[k].get<std::string>() : v[k].dump();
      if (!part.empty()) s += (s.empty() ? "" : " ") + part;
    }
  return s.empty() ? v.dump() : s;
}

std::optional<int64_t> integer_at(const json& object, const char* key) {
  if (!object.is_object() || !object.contains(key) || !object[key].is_number_integer()) return std::nullopt;
  return object[key].get<int64_t>();
}

// "AMD EPYC (AuthenticAMD family 25 model 17, 2 CPUs; avx2 avx512f avx512_bf16)" from the system
// description's cpu (run/system_description.h), or the name and count of an older provenance.
std::string cpu_text(const json& cpu) {
  if (!cpu.is_object()) return text_of(cpu, {});
  std::string s = string_at(cpu, "model_name").value_or(text_of(cpu, {"model"}));
  std::string detail;
  if (const auto vendor = string_at(cpu, "vendor")) detail = *vendor;
  const auto family = integer_at(cpu, "family"), model = integer_at(cpu, "model");
  if (family && model && cpu.contains("model_name"))
    detail += " family " + std::to_string(*family) + " model " + std::to_string(*model);
  for (const char* k : {"logical_cpus", "cpus"})
    if (const auto n = integer_at(cpu, k)) {
      detail += (detail.empty() ? "" : ", ") + std::to_string(*n) + " CPUs";
      break;
    }
  std::string isa;
  if (cpu.contains("isa") && cpu["isa"].is_array())
    for (const auto& f : cpu["isa"]) {
      const std::string flag = f.is_string() ? f.get<std::string>() : "";
      if (flag == "avx2" || flag == "avx512f" || flag == "avx512_bf16" || flag == "avx512_fp16" || flag == "amx_tile")
        isa += (isa.empty() ? "" : " ") + flag;
    }
  if (!isa.empty()) detail += "; " + isa;
  return detail.empty() ? s : s + " (" + detail + ")";
}

std::string blas_text(const json& blas) {
  if (!blas.is_object()) return text_of(blas, {});
  std::string s = text_of(blas, {"library", "version"});
  if (const auto core = string_at(blas, "core")) s += ", core " + *core;
  return s;
}

std::string env_text(const json& env) {
  if (!env.is_object()) return text_of(env, {});
  std::string s;
  for (const auto& [k, v] : env.items())
    s += (s.empty() ? "" : " ") + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
  return s.empty() ? "(none set)" : s;
}

std::string or_dash(const std::string& s) { return s.empty() ? "-" : s; }

}  // namespace

SystemDescription describe_trial_system(const TrialRecord& t) {
  const json& p = t.provenance.is_object() ? t.provenance : json::object();
  const json& sys = p.contains("system") && p["system"].is_object() ? p["system"] : json::object();
  const auto part = [&](const char* key) -> const json& {
    static const json none;
    return sys.contains(key) ? sys[key] : none;
  };
  SystemDescription d;
  d.cpu = cpu_text(part("cpu"));
  if (d.cpu.empty() && string_at(p, "cpu_model"))
    d.cpu = cpu_text(json{{"model", p["cpu_model"]}, {"logical_cpus", p.value("logical_cpus", json())}});
  d.blas = or_dash(blas_text(part("blas")));
  d.torch = text_of(part("torch"), {"version", "build"});
  if (d.torch.empty()) d.torch = string_at(p, "libtorch").value_or("");
  d.gpus = text_of(part("gpus"), {"name"});
  if (d.gpus.empty() && !sys.contains("gpus") && p.contains("gpus")) d.gpus = text_of(p["gpus"], {"name"});
  if (d.gpus.empty()) d.gpus = sys.contains("gpus") || p.contains("gpus") ? "none" : "-";
  d.env = or_dash(env_text(part("env")));
  d.host = text_of(part("host"), {"hostname", "name"});
  if (d.host.empty()) d.host = string_at(p, "host").value_or("");
  d.cpu = or_dash(d.cpu);
  d.torch = or_dash(d.torch);
  d.host = or_dash(d.host);
  const json& isa = part("cpu").is_object() && part("cpu").contains("isa") ? part("cpu")["isa"] : json();
  if (isa.is_array()) {
    d.bf16_instructions = false;
    for (const auto& f : isa)
      if (f == "avx512_bf16" || f == "amx_bf16") d.bf16_instructions = true;
  }
  d.threads = integer_at(p, "threads");
  if (!d.threads) d.threads = integer_at(part("blas"), "threads");
  if (d.threads && *d.threads <= 0) d.threads.reset();
  return d;
}

std::string short_hash(const std::string& text, int hex_digits) {
  return text_hash(text).substr(0, static_cast<std::size_t>(hex_digits < 1 ? 1 : hex_digits > 32 ? 32 : hex_digits));
}

SystemId system_of(const TrialRecord& t) {
  SystemId s;
  if (const auto fp = string_at(t.provenance, "system_fingerprint")) {
    s.fingerprint = *fp;
    s.label = string_at(t.provenance, "system_label").value_or("system " + *fp);
    return s;
  }
  std::string hw = hardware_label(t.provenance);
  if (hw.empty()) hw = t.hardware.empty() ? "unknown hardware" : t.hardware;
  s.legacy = true;
  s.fingerprint = "legacy-" + short_hash(hw, 12);
  s.label = hw + " (recorded before system fingerprints)";
  return s;
}

json spec_without_grid(const json& spec) {
  if (!spec.is_object()) return nullptr;
  json s = spec;
  for (const char* key : {"power_limit_w", "repeat", "warmup", "recurrence"}) s.erase(key);
  if (s.contains("run_config") && s["run_config"].is_object())
    for (const char* key : {"batch_size", "epochs", "precision", "engine", "seed", "model_name", "compression_ratio"})
      s["run_config"].erase(key);
  return s;
}

std::string spec_variant_of(const TrialRecord& t) {
  const json s = spec_without_grid(t.spec);
  if (s.is_null()) return "-";
  return short_hash(s.dump(), 8);  // nlohmann's objects keep their keys sorted: a canonical text
}

bool is_warmup(const TrialRecord& t) {
  return true_at(t.spec, "warmup") ||
         (t.result.is_object() && t.result.contains("run_design") && true_at(t.result["run_design"], "warmup"));
}

bool training_diverged(const TrialRecord& t) {
  if (t.status != TrialStatus::kOk) return false;
  const auto non_finite = [&](const char* key) {
    if (!t.result.is_object() || !t.result.contains(key)) return false;  // a trial that recorded none
    const json& v = t.result[key];
    return !v.is_number() || !std::isfinite(v.get<double>());
  };
  const bool last_epoch_bad = !t.epoch_rows.empty() && (!std::isfinite(t.epoch_rows.back().train_loss) ||
                                                        !std::isfinite(t.epoch_rows.back().val_loss));
  return non_finite("final_train_loss") || non_finite("final_val_loss") || last_epoch_bad;
}

void fail_diverged_trials(std::vector<TrialRecord>& trials) {
  for (TrialRecord& t : trials)
    if (training_diverged(t)) {
      t.status = TrialStatus::kFailed;
      t.error = "training diverged: its last epoch's loss is not finite (stored as ok by an earlier balerbench; "
                "left out of every figure)";
    }
}

Disturbance disturbance_of(const TrialRecord& t) {
  Disturbance d;
  if (!t.result.is_object() || !t.result.contains("disturbance") || !t.result["disturbance"].is_object()) return d;
  const json& j = t.result["disturbance"];
  if (!j.contains("disturbed") || !j["disturbed"].is_boolean()) return d;
  d.known = true;
  d.cpu = j["disturbed"].get<bool>();
  d.threshold = string_at(j, "threshold").value_or("");
  d.reason = d.cpu ? string_at(j, "reason").value_or("") : "";
  if (j.contains("thermal") && j["thermal"].is_object()) {
    const json& th = j["thermal"];
    d.thermal = th.value("disturbed", false);
    d.thermal_reason = d.thermal ? string_at(th, "reason").value_or("") : "";
  }
  d.disturbed = d.cpu || d.thermal;
  return d;
}

std::string Disturbance::all_reasons() const {
  if (reason.empty()) return thermal_reason;
  return thermal_reason.empty() ? reason : reason + "; " + thermal_reason;
}

}  // namespace balerbench
