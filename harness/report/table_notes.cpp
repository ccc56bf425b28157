// table_notes.cpp: see table_notes.h.
#include "harness/report/table_notes.h"

#include <algorithm>
#include <set>
#include <string>

namespace balerbench::report {

const char* const kTtaIncludesNote =
    "TTA and ETA include the first epoch's start-up (thread-pool and oneDNN primitive creation; on GPUs, "
    "CUDA-graph capture and cuBLAS/cuDNN initialisation) and every epoch's evaluation; data loading, model "
    "set-up and thread calibration happen before training starts and are not in them.";

const char* const kMemoryNote =
    "peak_rss_mib: the process's peak resident set in the phase (VmHWM, reset at the phase's start; "
    "result.memory says when it could not be reset); cuda_peak_mib: the CUDA caching allocator's peak "
    "reserved memory in the phase ('-' on CPU); gpu_used_peak_mib: NVML's device memory in use at the phase's "
    "highest sampler read (every process on the GPU, CUDA context included; '-' without NVML). Baler's study "
    "measured MiB per phase with memory-profiler.";

const char* const kUncertaintyNote =
    "energy_pm_j, eta_pm_j: the measurement's ± from the meters' resolution (a counter read at a window's edge "
    "lags by up to one update period; one count at each edge; a stated accuracy; a group's row: the mean over its repeats), apart "
    "from the spread over repeats; '-' where the energy is estimated (model error not known).";

const char* const kIntervalNote =
    "*_ci95_low, *_ci95_high: the 95% interval of the ratio, from the repeats (Welch's t on the logarithms: each "
    "side's mean and variance / n, Welch-Satterthwaite degrees of freedom rounded down), around the ratio of "
    "geometric means; an energy interval is at least the two rows' relative measurement +- summed.";
const char* const kVerdictWords =
    "verdict: faster / slower (less / more energy) when the interval excludes 1; \"not resolved at n=N\" when it "
    "does not, with the repeats per side that would likely resolve the observed difference (n x (half-width / |log "
    "ratio|)^2 x 1.2); \"within the meters' resolution\" when the meters' +- alone covers it; \"n=1: no "
    "interval\" with fewer than two repeats on either side.";

std::string energy_kind_note() {
  return "energy column: measured = hardware counters (RAPL, NVML, wattmeter); estimated = power models "
         "(CodeCarbon-style CPU TDP x load, RAM per GB), not measurements; SIMULATED = balerbench's GPU model.";
}

namespace {

// "latent 15, 5000 parameters": the model's size as the group's trials recorded it; "" when they did not.
std::string model_size_text(const Group& g) {
  const std::optional<int64_t> latent = g.latent(), parameters = g.parameters();
  std::string s = latent ? "latent " + std::to_string(*latent) : "";
  if (parameters) s += (s.empty() ? "" : ", ") + std::to_string(*parameters) + " parameters";
  return s;
}

}  // namespace

std::string constant_axes_note(const std::vector<Group>& groups, const Axes& a) {
  if (groups.empty()) return "";
  const Group& g = groups.front();
  std::string s;
  auto add = [&](const std::string& x) { s += (s.empty() ? "" : ", ") + x; };
  if (!a.model && !g.model.empty()) add("model " + g.model);
  if (!a.ratio && g.compression_ratio) add("compression ratio " + ratio_label(g.compression_ratio));
  if (const std::string size = model_size_text(g); !a.model && !a.ratio && !s.empty() && !size.empty())
    s += " (" + size + ")";  // the one size every row trained
  if (!a.batch) add("batch size " + std::to_string(g.batch_size));
  if (!a.precision) add("precision " + g.precision);
  if (!a.engine) add("engine " + g.engine);
  if (!a.limit) add("power limit " + watts_label(g.power_limit_w));
  if (!a.epochs) add(std::to_string(g.epochs) + " epochs");
  return s.empty() ? "" : "All rows: " + s + ".";
}

void failures_note(Table& t, const std::vector<Group>& groups) {
  int64_t failed = 0, skipped = 0, empty = 0;
  for (const auto& g : groups) {
    failed += g.failed;
    skipped += g.skipped;
    if (g.ok.empty()) ++empty;
  }
  if (failed || skipped) {
    std::string s = std::to_string(failed) + " failed and " + std::to_string(skipped) + " skipped trials are left out";
    if (empty) s += ", and with them " + std::to_string(empty) + " configuration(s) with no finished trial";
    t.notes.push_back(s + " (balerbench report --table trials lists them).");
  }
}

void warmup_note(Table& t, int64_t warmups) {
  if (warmups)
    t.notes.push_back(std::to_string(warmups) + " warm-up trial(s) are left out of every statistic here "
                      "(balerbench report --table trials lists them).");
}

void disturbed_note(Table& t, const std::vector<const TrialRecord*>& trials) {
  std::vector<int64_t> ids;
  std::vector<std::string> thresholds;
  for (const auto* r : trials) {
    const Disturbance d = disturbance_of(*r);
    if (!d.cpu) continue;
    ids.push_back(r->id);
    if (!d.threshold.empty() && std::find(thresholds.begin(), thresholds.end(), d.threshold) == thresholds.end())
      thresholds.push_back(d.threshold);
  }
  if (ids.empty()) return;
  std::sort(ids.begin(), ids.end());
  std::string s = std::to_string(ids.size()) + (ids.size() == 1 ? " trial here" : " trials here") +
                  " ran on a disturbed machine (id" + (ids.size() == 1 ? " " : "s ");
  for (std::size_t i = 0; i < ids.size(); ++i) s += (i ? ", " : "") + std::to_string(ids[i]);
  s += "): other processes' CPU use or steal time passed the threshold";
  for (std::size_t i = 0; i < thresholds.size(); ++i) s += (i ? "; " : " (") + thresholds[i];
  s += thresholds.empty() ? "" : ")";
  t.notes.push_back(s + ". They are kept in the statistics; the trials table gives each one's reason. Rerun them on "
                        "a quiet machine before trusting a close difference.");
}

void thermal_note(Table& t, const std::vector<const TrialRecord*>& trials) {
  std::vector<int64_t> ids;
  for (const auto* r : trials)
    if (disturbance_of(*r).thermal) ids.push_back(r->id);
  if (ids.empty()) return;
  std::sort(ids.begin(), ids.end());
  std::string s = std::to_string(ids.size()) + (ids.size() == 1 ? " trial here" : " trials here") + " (id" +
                  (ids.size() == 1 ? " " : "s ");
  for (std::size_t i = 0; i < ids.size(); ++i) s += (i ? ", " : "") + std::to_string(ids[i]);
  t.notes.push_back(s + ") started with a hot GPU or throttled for power or temperature during a measured window "
                        "(NVML's throttle reasons, sampled with the meter), or started without the thermal wait (no "
                        "GPU temperature could be read). A GPU's energy follows its temperature at "
                        "a trial's start (Zeus's thermally stable profiling): they are kept in the statistics; the "
                        "trials table gives each one's reason, and energy.thermal waits for the GPU to cool before "
                        "each trial.");
}

// What the estimated joules among these trials assume (each distinct model once): the trials'
// provenance.meters[].assumes, as each run recorded it.
void estimate_note(Table& t, const std::vector<const TrialRecord*>& ok) {
  std::set<std::string> seen;
  std::string text;
  for (const TrialRecord* r : ok) {
    if (!r->provenance.is_object() || !r->provenance.contains("meters") || !r->provenance["meters"].is_array()) continue;
    for (const auto& m : r->provenance["meters"])
      if (m.is_object() && m.contains("assumes") && m["assumes"].is_string() &&
          seen.insert(m["assumes"].get<std::string>()).second)
        text += (text.empty() ? "" : "; ") + m["assumes"].get<std::string>();
  }
  if (!text.empty())
    t.notes.push_back("estimated energy here assumes " + text +
                      ": it follows the time and these assumptions, and is no measurement (docs/energy.md).");
}

void run_notes(Table& t, const std::vector<Group>& groups) {
  int64_t warmups = 0;
  std::vector<const TrialRecord*> ok;
  for (const auto& g : groups) {
    warmups += g.warmups;
    ok.insert(ok.end(), g.ok.begin(), g.ok.end());
  }
  warmup_note(t, warmups);
  estimate_note(t, ok);
  disturbed_note(t, ok);
  thermal_note(t, ok);
}

}  // namespace balerbench::report
