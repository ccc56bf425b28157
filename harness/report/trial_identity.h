// trial_identity.h: what makes two stored trials comparable, read from the trial alone: the system
// it ran on (machine, BLAS kernel, LibTorch build, environment), the variant of its experiment's
// spec, whether it was a warm-up, and whether the machine was disturbed while it ran.
//
// Every field is optional in a stored trial (older databases lack them all): a trial without a
// system fingerprint is given one from its hardware label ("legacy-" + a hash of the label), one
// without run_design is not a warm-up, and one without a disturbance record is "not known".
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "harness/store/store.h"

namespace balerbench {

struct SystemId {
  std::string fingerprint;  // provenance.system_fingerprint (12 hex digits), or "legacy-" + 12 hex digits
  std::string label;        // provenance.system_label, or the hardware label with "(recorded before ...)"
  bool legacy = false;      // derived from the hardware label: recorded before system fingerprints
};
SystemId system_of(const TrialRecord& t);

// A system as text, for the systems table: from provenance.system (keys cpu, blas, torch, gpus,
// env, host), else from the older provenance keys (cpu_model, logical_cpus, libtorch, gpus, host).
// "-" where neither says.
struct SystemDescription {
  std::string cpu, blas, torch, gpus, env, host;
  std::optional<int64_t> threads;  // provenance.threads (as the trial trained), else the BLAS's
  // Whether the CPU has bfloat16 instructions (avx512_bf16 or amx_bf16 in provenance.system's isa);
  // unknown for trials that recorded no isa.
  std::optional<bool> bf16_instructions;
};
SystemDescription describe_trial_system(const TrialRecord& t);

// 8 hex digits identifying the trial's spec with its grid coordinates removed (run_config's
// model_name, compression_ratio, batch_size, epochs, precision, engine and seed; power_limit_w, repeat,
// warmup, recurrence): trials of one experiment with different ids ran from different versions of the
// file. "-" for a trial without a spec.
std::string spec_variant_of(const TrialRecord& t);
// The spec with the grid coordinates removed (what spec_variant_of hashes); null without a spec.
nlohmann::json spec_without_grid(const nlohmann::json& spec);

// A warm-up trial: result.run_design.warmup or spec.warmup is true. Listed, never in a statistic.
bool is_warmup(const TrialRecord& t);

// A trial stored as ok whose training diverged: its last epoch's training or validation loss is not
// finite (stored as null, result.final_train_loss or final_val_loss null). Sweeps fail such a trial
// now (docs/sweeps.md, "Diverged training"); earlier versions stored it as ok.
bool training_diverged(const TrialRecord& t);
// Such trials marked failed, with the reason as their error, as a sweep now stores them: no table,
// ratio, cost, frontier or figure counts them, and the trials table lists why. The reports call this
// on the trials they read.
void fail_diverged_trials(std::vector<TrialRecord>& trials);

// result.disturbance: other processes' CPU use and steal time during the trial (cpu), and its GPU's
// temperature and throttling (thermal: started hot, or throttled for power or temperature).
struct Disturbance {
  bool known = false;      // the trial has a disturbance record
  bool disturbed = false;  // cpu or thermal
  bool cpu = false;        // other processes, steal time, stalls, other balerbench runs
  bool thermal = false;    // result.disturbance.thermal
  std::string threshold, reason;  // the CPU side's
  std::string thermal_reason;
  std::string all_reasons() const;  // the CPU side's reason and the thermal one, "; " between
};
Disturbance disturbance_of(const TrialRecord& t);

// The first `hex_digits` (<= 32) of text_hash(text) (base/system_info.h, the trial keys' hash).
std::string short_hash(const std::string& text, int hex_digits);

}  // namespace balerbench
