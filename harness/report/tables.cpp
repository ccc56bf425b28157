// tables.cpp: see tables.h.
#include "harness/report/tables.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "datasets/error.h"
#include "harness/base/analysis.h"
#include "harness/base/precision_mode.h"
#include "harness/energy/carbon.h"
#include "harness/report/trial_identity.h"

namespace balerbench {
namespace {

// What time and energy to target include, said under every table that shows them.
const std::string kTtaIncludesNote =
    "TTA and ETA include the first epoch's start-up (thread-pool and oneDNN primitive creation; on GPUs, "
    "CUDA-graph capture and cuBLAS/cuDNN initialisation) and every epoch's evaluation; data loading, model "
    "set-up and thread calibration happen before training starts and are not in them.";

using nlohmann::json;

// Stored trials name their precision as text; a name this version does not know (a newer
// version's database) keeps its name, sorts last and is described as itself.
std::string mode_name(const std::string& p) {
  const std::optional<Precision> mode = find_precision(p);
  return mode ? precision_info(*mode).description : p;
}

int precision_rank(const std::string& p) {
  const std::optional<Precision> mode = find_precision(p);
  return mode ? precision_info(*mode).report_rank : static_cast<int>(precision_table().size());
}

std::string watts_label(const std::optional<double>& w) {
  if (!w) return "as found";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g W", *w);
  return buf;
}

// One configuration of the grid on one system and one spec variant, and its finished repeats
// (warm-ups left out).
struct Group {
  int64_t batch_size = 0, epochs = 0;
  std::string precision, engine;
  std::optional<double> power_limit_w;
  std::string system, variant;  // system fingerprint; spec variant id (trial_identity.h)
  std::vector<const TrialRecord*> ok;
  int64_t failed = 0, skipped = 0, warmups = 0;
  std::string energy_kind() const {
    std::set<std::string> k;
    for (const auto* t : ok) k.insert(t->energy_kind.empty() ? "none" : t->energy_kind);
    std::string s;
    for (const auto& x : k) s += (s.empty() ? "" : ", ") + x;
    return s.empty() ? "-" : s;
  }
  std::string label() const {
    return "bs " + std::to_string(batch_size) + ", " + precision + ", " + engine + ", PL " +
           watts_label(power_limit_w) + ", " + std::to_string(epochs) + " epochs";
  }
  template <typename F>
  Summary stat(F get) const {
    return summarize(values(get));
  }
  template <typename F>
  std::vector<double> values(F get) const {
    std::vector<double> v;
    for (const auto* t : ok)
      if (auto x = get(*t)) v.push_back(*x);
    return v;
  }
};

// Where a trial sits among the groups: its grid coordinates, system and spec variant.
struct TrialKey {
  const TrialRecord* trial;
  std::string system, variant;
};
TrialKey key_of(const TrialRecord& t) { return {&t, system_of(t).fingerprint, spec_variant_of(t)}; }

bool same_config(const Group& g, const TrialKey& k) {
  const TrialRecord& t = *k.trial;
  return g.batch_size == t.batch_size && g.precision == t.precision && g.engine == t.engine &&
         g.epochs == t.epochs && g.power_limit_w == t.power_limit_w && g.system == k.system && g.variant == k.variant;
}

std::vector<Group> group_trials(const std::vector<TrialRecord>& trials) {
  std::vector<Group> groups;
  for (const auto& t : trials) {
    const TrialKey k = key_of(t);
    auto it = std::find_if(groups.begin(), groups.end(), [&](const Group& g) { return same_config(g, k); });
    if (it == groups.end()) {
      Group g;
      g.batch_size = t.batch_size;
      g.precision = t.precision;
      g.engine = t.engine;
      g.power_limit_w = t.power_limit_w;
      g.epochs = t.epochs;
      g.system = k.system;
      g.variant = k.variant;
      groups.push_back(g);
      it = groups.end() - 1;
    }
    if (is_warmup(t))
      ++it->warmups;
    else if (t.status == TrialStatus::kOk)
      it->ok.push_back(&t);
    else if (t.status == TrialStatus::kSkipped)
      ++it->skipped;
    else
      ++it->failed;
  }
  return groups;
}

// Grid points with at least one finished trial: the measured tables show only these (the trials
// table lists the failures, and failures_note counts them).
std::vector<Group> finished(const std::vector<Group>& groups) {
  std::vector<Group> out;
  for (const auto& g : groups)
    if (!g.ok.empty()) out.push_back(g);
  return out;
}

// The hardware of the finished trials; when none finished, that of any trial (its stored label,
// else its provenance), so a report of failures still says where they ran.
std::string hardware_of(const std::vector<TrialRecord>& trials) {
  std::set<std::string> hw;
  for (const auto& t : trials)
    if (t.status == TrialStatus::kOk && !t.hardware.empty()) hw.insert(t.hardware);
  if (hw.empty())
    for (const auto& t : trials) {
      const std::string h = t.hardware.empty() ? hardware_label(t.provenance) : t.hardware;
      if (!h.empty()) hw.insert(h);
    }
  std::string s;
  for (const auto& h : hw) s += (s.empty() ? "" : " | ") + h;
  return s.empty() ? "unknown hardware" : s;
}

// The system the trials ran on, for a title: its label and fingerprint when they share one (a
// legacy system is named by its hardware, as before system fingerprints), else their hardware.
std::string where_run(const std::vector<TrialRecord>& trials) {
  std::set<std::string> fingerprints;
  SystemId one;
  for (const auto& t : trials) {
    one = system_of(t);
    fingerprints.insert(one.fingerprint);
  }
  if (fingerprints.size() != 1) return hardware_of(trials);
  // A simulated GPU is a meter, not part of the system: its mark stays in the title all the same.
  const std::string hardware = hardware_of(trials);
  const std::string simulated = hardware.find("SIMULATED") != std::string::npos ? " measured by " + hardware : "";
  return (one.legacy ? hardware : one.label + simulated) + " (system " + one.fingerprint + ")";
}

json num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }
json mean_or_null(const Summary& s) { return s.n ? num(s.mean) : json(nullptr); }
json sd_or_null(const Summary& s) { return s.n > 1 ? num(s.stddev) : json(nullptr); }
json ci_or_null(const Summary& s) { return s.n > 1 ? num(s.ci95_half_width) : json(nullptr); }

// Axis columns that vary among `groups` (the constant ones go in a note).
struct Axes {
  bool batch = false, precision = false, engine = false, limit = false, epochs = false;
};
Axes varying(const std::vector<Group>& groups) {
  std::set<int64_t> b, e;
  std::set<std::string> p, n, l;
  for (const auto& g : groups) {
    b.insert(g.batch_size);
    e.insert(g.epochs);
    p.insert(g.precision);
    n.insert(g.engine);
    l.insert(watts_label(g.power_limit_w));
  }
  return {b.size() > 1, p.size() > 1, n.size() > 1, l.size() > 1, e.size() > 1};
}

std::string constant_axes_note(const std::vector<Group>& groups, const Axes& a) {
  if (groups.empty()) return "";
  const Group& g = groups.front();
  std::string s;
  auto add = [&](const std::string& x) { s += (s.empty() ? "" : ", ") + x; };
  if (!a.batch) add("batch size " + std::to_string(g.batch_size));
  if (!a.precision) add("precision " + g.precision);
  if (!a.engine) add("engine " + g.engine);
  if (!a.limit) add("power limit " + watts_label(g.power_limit_w));
  if (!a.epochs) add(std::to_string(g.epochs) + " epochs");
  return s.empty() ? "" : "All rows: " + s + ".";
}

void axis_columns(Table& t, const Axes& a, bool with_precision = true) {
  if (a.batch) t.columns.push_back("batch_size");
  if (a.precision && with_precision) t.columns.push_back("precision");
  if (a.engine) t.columns.push_back("engine");
  if (a.limit) t.columns.push_back("power_limit");
  if (a.epochs) t.columns.push_back("epochs");
}

void axis_cells(std::vector<json>& row, const Group& g, const Axes& a, bool with_precision = true) {
  if (a.batch) row.push_back(g.batch_size);
  if (a.precision && with_precision) row.push_back(g.precision);
  if (a.engine) row.push_back(g.engine);
  if (a.limit) row.push_back(watts_label(g.power_limit_w));
  if (a.epochs) row.push_back(g.epochs);
}

std::string energy_kind_note() {
  return "energy column: measured = hardware counters (RAPL, NVML, wattmeter); estimated = power models "
         "(CodeCarbon-style CPU TDP x load, RAM per GB), not measurements; SIMULATED = balerbench's GPU model.";
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

// Warm-up trials left out, and disturbed trials kept in, the table's statistics: a note for each.
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
    if (!d.disturbed) continue;
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

void run_notes(Table& t, const std::vector<Group>& groups) {
  int64_t warmups = 0;
  std::vector<const TrialRecord*> ok;
  for (const auto& g : groups) {
    warmups += g.warmups;
    ok.insert(ok.end(), g.ok.begin(), g.ok.end());
  }
  warmup_note(t, warmups);
  disturbed_note(t, ok);
}

std::string eta_label(double eta) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "cost_eta_%g", eta);
  return buf;
}

// A trial's measurement ± of one figure (result.energy_uncertainty: train_j, eta_j, ...), when given.
std::optional<double> uncertainty_of(const TrialRecord& r, const char* key) {
  if (!r.result.is_object() || !r.result.contains("energy_uncertainty")) return std::nullopt;
  const json& u = r.result["energy_uncertainty"];
  if (!u.is_object() || !u.contains(key) || !u[key].is_number()) return std::nullopt;
  return u[key].get<double>();
}

// A trial's peak memory of one phase (result.memory.<phase>.<key>: host_peak_rss_mib, ...), when given.
std::optional<double> memory_of(const TrialRecord& r, const char* phase, const char* key) {
  if (!r.result.is_object() || !r.result.contains("memory") || !r.result["memory"].is_object()) return std::nullopt;
  const json& m = r.result["memory"];
  if (!m.contains(phase) || !m[phase].is_object() || !m[phase].contains(key) || !m[phase][key].is_number())
    return std::nullopt;
  return m[phase][key].get<double>();
}

// The highest of a trial's three phases' figures.
std::optional<double> trial_memory_peak(const TrialRecord& r, const char* key) {
  std::optional<double> out;
  for (const char* phase : {"train", "compress", "decompress"})
    if (const auto v = memory_of(r, phase, key)) out = std::max(out.value_or(*v), *v);
  return out;
}

const char* kMemoryNote =
    "peak_rss_mib: the process's peak resident set in the phase (VmHWM, reset at the phase's start; "
    "result.memory says when it could not be reset); cuda_peak_mib: the CUDA caching allocator's peak "
    "reserved memory in the phase ('-' on CPU); gpu_used_peak_mib: NVML's device memory in use at the phase's "
    "highest sampler read (every process on the GPU, CUDA context included; '-' without NVML). Baler's study "
    "measured MiB per phase with memory-profiler.";

const char* kUncertaintyNote =
    "energy_pm_j, eta_pm_j: the measurement's ± from the meters' resolution (a counter read at a window's edge "
    "lags by up to one update period; one count at each edge; a stated accuracy; a group's row: the mean over its repeats), apart "
    "from the spread over repeats; '-' where the energy is estimated (model error not known).";

// Zeus cost of a group at `eta` from mean ETA/TTA (target) or whole training (no target).
struct CostInputs {
  bool ok = false;
  double time_s = 0, energy_j = 0, max_power_w = 0;
  std::string why;
};
CostInputs cost_inputs(const Group& g, bool target) {
  CostInputs c;
  if (g.ok.empty()) {
    c.why = "no finished trial";
    return c;
  }
  const Summary mp = g.stat([](const TrialRecord& t) { return t.max_power_w; });
  if (mp.n < g.ok.size()) {
    c.why = "no MaxPower (set cost.max_power_w)";
    return c;
  }
  c.max_power_w = mp.mean;
  if (target) {
    const Summary tta_s = g.stat([](const TrialRecord& t) { return t.target_reached ? t.tta_s : std::nullopt; });
    const Summary eta_j = g.stat([](const TrialRecord& t) { return t.target_reached ? t.eta_j : std::nullopt; });
    if (tta_s.n < g.ok.size() || eta_j.n < g.ok.size()) {
      c.why = "target not reached";
      return c;
    }
    c.time_s = tta_s.mean;
    c.energy_j = eta_j.mean;
  } else {
    const Summary t = g.stat([](const TrialRecord& r) { return r.train_s; });
    const Summary e = g.stat([](const TrialRecord& r) { return r.train_energy_j; });
    if (e.n < g.ok.size()) {
      c.why = "no energy measured";
      return c;
    }
    c.time_s = t.mean;
    c.energy_j = e.mean;
  }
  c.ok = true;
  return c;
}

bool has_target(const std::vector<TrialRecord>& trials) {
  for (const auto& t : trials)
    if (!t.spec.is_null() && t.spec.contains("target") && !t.spec["target"].is_null()) return true;
  return false;
}

std::string target_text(const std::vector<TrialRecord>& trials) {
  for (const auto& t : trials)
    if (!t.spec.is_null() && t.spec.contains("target") && !t.spec["target"].is_null()) {
      const json& j = t.spec["target"];
      std::ostringstream s;
      s << j["metric"].get<std::string>() << " <= " << j["value"].get<double>();
      return s.str();
    }
  return "";
}

// One figure of each trial (training time, energy, ...), and the key of its measurement +- in
// result.energy_uncertainty (nullptr: none).
struct Figure {
  std::optional<double> (*get)(const TrialRecord&);
  const char* pm_key;
  const char *less, *more;  // the verdict's words when the interval lies below / above 1
};
const Figure kTrainTime = {[](const TrialRecord& r) { return r.train_s; }, nullptr, "faster", "slower"};
const Figure kTrainEnergy = {[](const TrialRecord& r) { return r.train_energy_j; }, "train_j", "less energy",
                             "more energy"};

// The mean relative +- of a group's figure over the trials that have one; 0 when none has.
double mean_relative_pm(const Group& g, const Figure& f) {
  if (!f.pm_key) return 0;
  const Summary s = g.stat([&](const TrialRecord& r) -> std::optional<double> {
    const auto v = f.get(r);
    const auto pm = uncertainty_of(r, f.pm_key);
    if (!v || !pm || !(*v > 0)) return std::nullopt;
    return *pm / *v;
  });
  return s.n ? s.mean : 0;
}

// "faster", "slower", "not resolved at n=3; ~12 repeats would resolve it", "n=1: no interval", ...
std::string verdict(const RatioInterval& r, const Figure& f) {
  const std::size_t n = std::min(r.n_a, r.n_b);
  if (!r.valid) return n < 2 ? "n=" + std::to_string(n) + ": no interval" : "no interval (a value is not > 0)";
  if (r.resolved()) return r.mean_log < 0 ? f.less : f.more;
  const std::string head = "not resolved at n=" + std::to_string(n);
  if (r.mean_log == 0) return head + " (no difference observed)";
  if (r.stat_half_width_log < std::abs(r.mean_log))
    return head + "; within the meters' resolution (more repeats will not resolve it)";
  const std::size_t m = repeats_to_resolve(r);
  return head + (m > 100 ? "; > 100 repeats would be needed" : "; ~" + std::to_string(m) + " repeats would resolve it");
}

// A group's figure against a reference group's: ratio of means, the 95% interval of the ratio
// (Welch on logs, widened to the meters' relative +- of both sides), and the verdict.
struct Comparison {
  json ratio = nullptr, low = nullptr, high = nullptr, verdict = nullptr;
};
Comparison compare(const Group& g, const Group& ref, const Figure& f) {
  Comparison c;
  const Summary a = g.stat(f.get), b = ref.stat(f.get);
  if (!a.n || !b.n) return c;
  if (b.mean > 0) c.ratio = num(a.mean / b.mean);
  RatioInterval r = log_ratio_interval(g.values(f.get), ref.values(f.get));
  widen_to_relative(r, mean_relative_pm(g, f) + mean_relative_pm(ref, f));
  if (r.valid) {
    c.low = num(r.low());
    c.high = num(r.high());
  }
  c.verdict = verdict(r, f);
  return c;
}

const char* kIntervalNote =
    "*_ci95_low, *_ci95_high: the 95% interval of the ratio, from the repeats (Welch's t on the logarithms: each "
    "side's mean and variance / n, Welch-Satterthwaite degrees of freedom rounded down), around the ratio of "
    "geometric means; an energy interval is at least the two rows' relative measurement +- summed.";
const char* kVerdictWords =
    "verdict: faster / slower (less / more energy) when the interval excludes 1; \"not resolved at n=N\" when it "
    "does not, with the repeats per side that would likely resolve the observed difference (n x (half-width / |log "
    "ratio|)^2 x 1.2); \"within the meters' resolution\" when the meters' +- alone covers it; \"n=1: no "
    "interval\" with fewer than two repeats on either side.";

Table precision_table(const std::vector<TrialRecord>& trials) {
  const std::vector<Group> all = group_trials(trials);
  std::vector<Group> groups = finished(all);
  std::stable_sort(groups.begin(), groups.end(), [](const Group& a, const Group& b) {
    if (a.batch_size != b.batch_size) return a.batch_size < b.batch_size;
    if (a.power_limit_w != b.power_limit_w) return watts_label(a.power_limit_w) < watts_label(b.power_limit_w);
    if (a.epochs != b.epochs) return a.epochs < b.epochs;
    if (a.precision != b.precision) return precision_rank(a.precision) < precision_rank(b.precision);
    return a.engine < b.engine;
  });
  Table t;
  t.name = "precision";
  t.title = "Training time and energy per precision mode (T3's shape) on " + where_run(trials);
  const Axes a = varying(groups);
  t.columns = {"mode", "precision"};
  axis_columns(t, a, false);
  for (const char* c : {"n", "time_s", "time_median_s", "time_sd_s", "time_ci95_s", "time_vs_fp32",
                        "time_vs_fp32_ci95_low", "time_vs_fp32_ci95_high", "time_verdict", "energy_j",
                        "energy_median_j", "energy_sd_j", "energy_kwh", "energy_vs_fp32", "energy_vs_fp32_ci95_low",
                        "energy_vs_fp32_ci95_high", "energy_verdict", "energy"})
    t.columns.push_back(c);
  for (const auto& g : groups) {
    const Summary time = g.stat(kTrainTime.get);
    const Summary energy = g.stat(kTrainEnergy.get);
    // The FP32 row with the same other settings, system and spec variant: of the same engine where
    // there is one (engines compared side by side), else of whichever engine ran fp32 (auto runs
    // amp_bf16 on libtorch and fp32 on fused: the ratio is then AMP against FP32 as auto runs them).
    const Group* base = nullptr;
    for (const auto& h : groups)
      if (find_precision(h.precision) == Precision::kFp32 && h.batch_size == g.batch_size && h.epochs == g.epochs &&
          h.power_limit_w == g.power_limit_w && h.system == g.system && h.variant == g.variant &&
          (!base || h.engine == g.engine))
        base = &h;
    Comparison tc, ec;
    if (base == &g) {
      tc = {time.n ? num(1) : json(nullptr), nullptr, nullptr, time.n ? json("baseline") : json(nullptr)};
      ec = {energy.n ? num(1) : json(nullptr), nullptr, nullptr, energy.n ? json("baseline") : json(nullptr)};
    } else if (base) {
      tc = compare(g, *base, kTrainTime);
      ec = compare(g, *base, kTrainEnergy);
    }
    std::vector<json> row = {mode_name(g.precision), g.precision};
    axis_cells(row, g, a, false);
    for (const json& v : {json(static_cast<int64_t>(time.n)), mean_or_null(time),
                          time.n ? num(time.median) : json(nullptr), sd_or_null(time), ci_or_null(time), tc.ratio,
                          tc.low, tc.high, tc.verdict, mean_or_null(energy),
                          energy.n ? num(energy.median) : json(nullptr), sd_or_null(energy),
                          energy.n ? num(energy.mean / kJoulesPerKwh) : json(nullptr), ec.ratio, ec.low, ec.high,
                          ec.verdict, json(g.energy_kind())})
      row.push_back(v);
    t.rows.push_back(row);
  }
  if (auto n = constant_axes_note(groups, a); !n.empty()) t.notes.push_back(n);
  t.notes.push_back(
      "time and energy: the whole training (every epoch with its evaluation), mean and median over "
      "repeats; sd = standard deviation, ci95 = half-width of the 95% confidence interval (Student t). Ratios "
      "(*_vs_fp32, of the means) are to the FP32 row with the same other settings, on the same system and spec "
      "variant (of the same engine where there is one).");
  t.notes.push_back(std::string(kIntervalNote) + " " + kVerdictWords);
  t.notes.push_back(energy_kind_note());
  failures_note(t, all);
  run_notes(t, all);
  return t;
}

std::vector<Table> phases_tables(const std::vector<TrialRecord>& trials) {
  const std::vector<Group> all = group_trials(trials);
  std::vector<Group> groups = finished(all);
  const Axes a = varying(groups);
  Table t;
  t.name = "phases";
  t.title = "Energy, CO2 and duration per Baler mode (T4's shape) on " + where_run(trials);
  t.columns = {};
  axis_columns(t, a);
  for (const char* c : {"mode", "n", "energy_j", "energy_kwh", "co2_kg", "duration_s", "duration_sd_s", "peak_rss_mib",
                        "cuda_peak_mib", "gpu_used_peak_mib", "energy"})
    t.columns.push_back(c);
  for (const auto& g : groups) {
    struct P {
      const char* name;
      std::optional<double> TrialRecord::*time;
      std::optional<double> TrialRecord::*energy;
    };
    for (const P& p : {P{"train", &TrialRecord::train_s, &TrialRecord::train_energy_j},
                       P{"compress", &TrialRecord::compress_s, &TrialRecord::compress_energy_j},
                       P{"decompress", &TrialRecord::decompress_s, &TrialRecord::decompress_energy_j}}) {
      const Summary d = g.stat([&](const TrialRecord& r) { return r.*(p.time); });
      const Summary e = g.stat([&](const TrialRecord& r) { return r.*(p.energy); });
      const Summary co2 = g.stat([&](const TrialRecord& r) -> std::optional<double> {
        const auto en = r.*(p.energy);
        if (!en || !r.co2_g || !r.total_energy_j || *r.total_energy_j <= 0) return std::nullopt;
        return *en * *r.co2_g / *r.total_energy_j / 1000.0;  // the trial's g/J, in kg
      });
      const Summary rss = g.stat([&](const TrialRecord& r) { return memory_of(r, p.name, "host_peak_rss_mib"); });
      const Summary cuda = g.stat([&](const TrialRecord& r) { return memory_of(r, p.name, "cuda_peak_reserved_mib"); });
      const Summary gpu = g.stat([&](const TrialRecord& r) { return memory_of(r, p.name, "gpu_memory_used_peak_mib"); });
      std::vector<json> row;
      axis_cells(row, g, a);
      for (const json& v :
           {json(p.name), json(static_cast<int64_t>(d.n)), mean_or_null(e), e.n ? num(e.mean / kJoulesPerKwh) : json(nullptr),
            mean_or_null(co2), mean_or_null(d), sd_or_null(d), mean_or_null(rss), mean_or_null(cuda),
            mean_or_null(gpu), json(g.energy_kind())})
        row.push_back(v);
      t.rows.push_back(row);
    }
  }
  if (auto n = constant_axes_note(groups, a); !n.empty()) t.notes.push_back(n);
  t.notes.push_back(
      "train = the whole training (epochs and evaluation); compress and decompress = the whole "
      "dataset through the encoder and the decoder. CO2 = energy x PUE x the trial's carbon intensity.");
  t.notes.push_back(kMemoryNote);
  t.notes.push_back(energy_kind_note());
  failures_note(t, all);
  run_notes(t, all);
  std::vector<Table> out = {t};

  // T5: the profiled trials' time breakdown.
  Table p;
  p.name = "phases_profile";
  p.title = "Where training time goes (T5's shape), profiled trials, on " + where_run(trials);
  axis_columns(p, a);
  for (const char* c : {"frame", "n", "duration_s", "percent_of_fit"}) p.columns.push_back(c);
  for (const auto& g : groups) {
    std::vector<std::string> names;
    for (const auto* r : g.ok)
      for (const auto& ph : r->phases)
        if (ph.source == "profile" && std::find(names.begin(), names.end(), ph.phase) == names.end())
          names.push_back(ph.phase);
    if (names.empty()) continue;
    static const std::vector<std::string> kOrder = {"data", "encode", "decode", "loss", "backward", "optimizer",
                                                    "evaluation", "compress", "decompress"};
    auto rank = [](const std::string& n) { return std::find(kOrder.begin(), kOrder.end(), n) - kOrder.begin(); };
    std::stable_sort(names.begin(), names.end(), [&](const auto& x, const auto& y) { return rank(x) < rank(y); });
    const Summary fit = g.stat([](const TrialRecord& r) { return r.train_s; });
    std::vector<json> row;
    axis_cells(row, g, a);
    for (const json& v : {json("fit"), json(static_cast<int64_t>(fit.n)), mean_or_null(fit), json(100.0)})
      row.push_back(v);
    p.rows.push_back(row);
    for (const auto& name : names) {
      const Summary d = g.stat([&](const TrialRecord& r) -> std::optional<double> {
        for (const auto& ph : r.phases)
          if (ph.source == "profile" && ph.phase == name) return ph.duration_s;
        return std::nullopt;
      });
      std::vector<json> r2;
      axis_cells(r2, g, a);
      for (const json& v : {json(name), json(static_cast<int64_t>(d.n)), mean_or_null(d),
                            fit.mean > 0 ? num(100.0 * d.mean / fit.mean) : json(nullptr)})
        r2.push_back(v);
      p.rows.push_back(r2);
      if (name == "decode") {  // T5's "forward (encode, decode)"
        const Summary fwd = g.stat([&](const TrialRecord& r) -> std::optional<double> {
          double sum = 0;
          int found = 0;
          for (const auto& ph : r.phases)
            if (ph.source == "profile" && (ph.phase == "encode" || ph.phase == "decode")) {
              sum += ph.duration_s;
              ++found;
            }
          return found == 2 ? std::optional<double>(sum) : std::nullopt;
        });
        std::vector<json> r3;
        axis_cells(r3, g, a);
        for (const json& v : {json("forward (encode + decode)"), json(static_cast<int64_t>(fwd.n)), mean_or_null(fwd),
                              fit.mean > 0 && fwd.n ? num(100.0 * fwd.mean / fit.mean) : json(nullptr)})
          r3.push_back(v);
        p.rows.push_back(r3);
      }
    }
  }
  if (!p.rows.empty()) {
    p.notes.push_back(
        "Phase timers with the device synchronised at each edge (training.profile: true); fit "
        "includes evaluation and the timers' own cost.");
    run_notes(p, all);
    out.push_back(p);
  }
  return out;
}

Table axis_table(const std::vector<TrialRecord>& trials, const std::string& which, const std::vector<double>& etas) {
  const std::vector<Group> all = group_trials(trials);
  std::vector<Group> groups = finished(all);
  const bool by_batch = which == "batch_size";
  std::stable_sort(groups.begin(), groups.end(), [&](const Group& x, const Group& y) {
    const double kx = by_batch ? static_cast<double>(x.batch_size) : x.power_limit_w.value_or(-1);
    const double ky = by_batch ? static_cast<double>(y.batch_size) : y.power_limit_w.value_or(-1);
    if (kx != ky) return kx < ky;
    return precision_rank(x.precision) < precision_rank(y.precision);
  });
  Axes a = varying(groups);
  if (by_batch)
    a.batch = true;
  else
    a.limit = true;
  const bool target = has_target(trials);
  Table t;
  t.name = which;
  t.title = std::string("Time, energy, TTA, ETA and Zeus cost per ") + (by_batch ? "batch size" : "GPU power limit") +
            " on " + where_run(trials);
  axis_columns(t, a);
  for (const char* c : {"n", "time_s", "energy_j", "energy_pm_j", "reached", "tta_s", "eta_j", "eta_pm_j"})
    t.columns.push_back(c);
  if (!by_batch) t.columns.push_back("enforced_limit_w");
  for (double eta : etas) t.columns.push_back(eta_label(eta));
  t.columns.push_back("energy");
  for (const auto& g : groups) {
    const Summary time = g.stat([](const TrialRecord& r) { return r.train_s; });
    const Summary energy = g.stat([](const TrialRecord& r) { return r.train_energy_j; });
    const Summary tta = g.stat([](const TrialRecord& r) { return r.target_reached ? r.tta_s : std::nullopt; });
    const Summary eta_j = g.stat([](const TrialRecord& r) { return r.target_reached ? r.eta_j : std::nullopt; });
    std::vector<json> row;
    axis_cells(row, g, a);
    row.push_back(static_cast<int64_t>(g.ok.size()));
    row.push_back(mean_or_null(time));
    const Summary energy_pm = g.stat([](const TrialRecord& r) { return uncertainty_of(r, "train_j"); });
    const Summary eta_pm =
        g.stat([](const TrialRecord& r) { return r.target_reached ? uncertainty_of(r, "eta_j") : std::nullopt; });
    row.push_back(mean_or_null(energy));
    row.push_back(energy_pm.n ? num(energy_pm.mean) : json("-"));
    row.push_back(target ? json(std::to_string(tta.n) + "/" + std::to_string(g.ok.size())) : json("no target"));
    row.push_back(tta.n ? num(tta.mean) : json(target ? "not reached" : "-"));
    row.push_back(eta_j.n ? num(eta_j.mean) : json(target ? "not reached" : "-"));
    row.push_back(eta_pm.n ? num(eta_pm.mean) : json("-"));
    if (!by_batch) {
      const Summary enf = g.stat([](const TrialRecord& r) { return r.enforced_power_limit_w; });
      row.push_back(enf.n ? num(enf.mean) : json(nullptr));
    }
    const CostInputs ci = cost_inputs(g, target);
    for (double eta : etas)
      row.push_back(ci.ok ? num(zeus_cost(eta, ci.energy_j, ci.time_s, ci.max_power_w)) : json(ci.why));
    row.push_back(g.energy_kind());
    t.rows.push_back(row);
  }
  if (auto n = constant_axes_note(groups, a); !n.empty()) t.notes.push_back(n);
  t.notes.push_back(target ? "TTA/ETA: time and energy from the start of training to the end of the first epoch "
                             "(evaluation included) that met the target (" +
                                 target_text(trials) +
                                 "); \"reached\" counts repeats that met it. " + kTtaIncludesNote +
                                 " Cost uses mean ETA and TTA."
                           : "No target in the experiment: cost uses the whole training's time and energy.");
  t.notes.push_back("Zeus cost = eta x ETA + (1 - eta) x MaxPower x TTA (J); MaxPower is stored with each trial.");
  t.notes.push_back(kUncertaintyNote);
  t.notes.push_back(energy_kind_note());
  failures_note(t, all);
  run_notes(t, all);
  return t;
}

std::vector<Table> cost_tables(const std::vector<TrialRecord>& trials, const std::vector<double>& etas) {
  const std::vector<Group> groups = group_trials(trials);
  const bool target = has_target(trials);
  Table best;
  best.name = "cost";
  best.title = "Best configuration per eta (Zeus cost) on " + where_run(trials);
  best.columns = {"eta", "best_configuration", "cost_j", "time_s", "energy_j", "max_power_w", "candidates", "energy"};
  std::vector<CostInputs> inputs;
  for (const auto& g : groups) inputs.push_back(cost_inputs(g, target));
  for (double eta : etas) {
    int best_i = -1;
    double best_cost = INFINITY;
    int64_t candidates = 0;
    for (std::size_t i = 0; i < groups.size(); ++i) {
      if (!inputs[i].ok) continue;
      ++candidates;
      const double c = zeus_cost(eta, inputs[i].energy_j, inputs[i].time_s, inputs[i].max_power_w);
      if (c < best_cost) {
        best_cost = c;
        best_i = static_cast<int>(i);
      }
    }
    if (best_i < 0) {
      best.rows.push_back({eta, "none (no configuration reached the target with energy and MaxPower)", nullptr, nullptr,
                           nullptr, nullptr, candidates, "-"});
      continue;
    }
    const CostInputs& ci = inputs[best_i];
    best.rows.push_back({eta, groups[best_i].label(), num(best_cost), num(ci.time_s), num(ci.energy_j),
                         num(ci.max_power_w), candidates, groups[best_i].energy_kind()});
  }
  best.notes.push_back(target ? "time and energy are mean TTA and ETA to the target (" + target_text(trials) +
                                    "); configurations where any repeat missed it are not candidates. " +
                                    kTtaIncludesNote
                              : "No target in the experiment: time and energy of the whole training.");
  best.notes.push_back("Zeus cost = eta x ETA + (1 - eta) x MaxPower x TTA; eta = 0 minimises time, eta = 1 energy.");
  best.notes.push_back(energy_kind_note());
  run_notes(best, groups);

  Table front;
  front.name = "cost_pareto";
  front.title = "Time-energy Pareto frontier on " + where_run(trials);
  front.columns = {"configuration", "time_s", "energy_j", "energy"};
  std::vector<ParetoPoint> points;
  // Every configuration whose repeats all have a time and an energy (to the target, when there is one);
  // unlike the cost, the frontier needs no MaxPower.
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const Summary tm = groups[i].stat(
        [&](const TrialRecord& r) { return target ? (r.target_reached ? r.tta_s : std::nullopt) : r.train_s; });
    const Summary en = groups[i].stat([&](const TrialRecord& r) {
      return target ? (r.target_reached ? r.eta_j : std::nullopt) : r.train_energy_j;
    });
    if (tm.n == groups[i].ok.size() && en.n == groups[i].ok.size() && tm.n > 0) points.push_back({tm.mean, en.mean, i});
  }
  for (const auto& p : pareto_frontier(points))
    front.rows.push_back({groups[p.id].label(), num(p.time_s), num(p.energy_j), groups[p.id].energy_kind()});
  front.notes.push_back("Configurations no other beats in both time and energy (" + std::to_string(front.rows.size()) +
                        " of " + std::to_string(points.size()) + "), fastest first.");
  run_notes(front, groups);
  return {best, front};
}

Table complexity_table(const std::vector<TrialRecord>& trials) {
  Table t;
  t.name = "complexity";
  t.columns = {"layer",           "part",
               "in_to_out",       "parameters",
               "macs_per_sample", "flops_per_sample",
               "macs_per_batch",  "t1_operations_per_batch"};
  std::set<std::string> seen;
  for (const auto& r : trials) {
    if (r.status != TrialStatus::kOk || !r.result.contains("model")) continue;
    const json& m = r.result["model"];
    const std::string key = m["name"].get<std::string>() + "/" + std::to_string(m["n_features"].get<int64_t>()) + "/" +
                            std::to_string(r.batch_size);
    if (!seen.insert(key).second) continue;
    if (!t.title.empty()) continue;  // one model per table: the first
    t.title = "Model complexity (T1's shape): " + m["name"].get<std::string>() + ", " +
              std::to_string(m["n_features"].get<int64_t>()) + " features, latent " +
              std::to_string(m["latent"].get<int64_t>()) + ", batch " + std::to_string(r.batch_size);
    int64_t params = 0, macs = 0, ops = 0;
    for (const auto& l : m["layers"]) {
      const int64_t mac = l["macs_per_sample"];
      t.rows.push_back({l["name"], l["part"],
                        std::to_string(l["in"].get<int64_t>()) + " -> " + std::to_string(l["out"].get<int64_t>()),
                        l["parameters"], mac, 2 * mac, mac * r.batch_size, l["t1_operations"]});
      params += l["parameters"].get<int64_t>();
      macs += mac;
      ops += l["t1_operations"].get<int64_t>();
    }
    t.rows.push_back({"total", "", "", params, macs, 2 * macs, macs * r.batch_size, ops});
  }
  if (t.title.empty()) t.title = "Model complexity (T1's shape): no finished trial";
  t.notes.push_back(
      "parameters = in x out + out; MACs = multiply-accumulates (in x out per sample, bias not "
      "counted); FLOPs = 2 x MACs; t1_operations = the published T1 convention in x out x batch + out.");
  return t;
}

Table datasets_table(const std::vector<TrialRecord>& trials) {
  Table t;
  t.name = "datasets";
  t.title = "Datasets (T2's shape)";
  t.columns = {"dataset", "shape", "dtype", "bytes", "trials"};
  std::map<std::string, std::pair<std::vector<json>, int64_t>> rows;
  std::vector<std::string> order;
  for (const auto& r : trials) {
    if (r.status != TrialStatus::kOk || !r.result.contains("dataset")) continue;
    const json& d = r.result["dataset"];
    const std::string label = d.value("label", d.value("path", std::string("?")));
    if (!rows.count(label)) {
      std::string shape = "(";
      for (std::size_t i = 0; i < d["shape"].size(); ++i)
        shape += (i ? ", " : "") + std::to_string(d["shape"][i].get<int64_t>());
      rows[label] = {{label, shape + ")", d["dtype"], d.value("bytes", json(nullptr))}, 0};
      order.push_back(label);
    }
    ++rows[label].second;
  }
  for (const auto& l : order) {
    auto row = rows[l].first;
    row.push_back(rows[l].second);
    t.rows.push_back(row);
  }
  t.notes.push_back("bytes = rows x features x the file's item size (the data array alone, not the .npz).");
  return t;
}

Table trials_table(const std::vector<TrialRecord>& trials) {
  Table t;
  t.name = "trials";
  t.title = "Every trial stored";
  const bool target = has_target(trials);
  t.columns = {"id",     "grid_index", "repeat",   "batch_size", "precision", "engine", "power_limit", "epochs",
               "status", "time_s",     "energy_j", "energy_pm_j", "tta_s",   "eta_j",  "eta_pm_j", "peak_rss_mib",
               "cuda_peak_mib", "gpu_used_peak_mib", "overhead_s", "warmup", "disturbed", "system", "variant",
               "error"};
  const auto pm = [](const std::optional<double>& u) { return u ? num(*u) : json("-"); };
  const auto disturbed = [](const TrialRecord& r) {
    const Disturbance d = disturbance_of(r);
    return json(!d.known ? "-" : d.disturbed ? "yes" : "no");
  };
  for (const auto& r : trials)
    t.rows.push_back({r.id, r.grid_index, r.repeat, r.batch_size, r.precision, r.engine, watts_label(r.power_limit_w),
                      r.epochs,
                      trial_status_name(r.status), r.train_s ? num(*r.train_s) : json(nullptr),
                      r.train_energy_j ? num(*r.train_energy_j) : json(nullptr), pm(uncertainty_of(r, "train_j")),
                      r.tta_s ? num(*r.tta_s) : json(r.status == TrialStatus::kOk && target ? "not reached" : "-"),
                      r.eta_j ? num(*r.eta_j) : json(r.status == TrialStatus::kOk && target ? "not reached" : "-"),
                      pm(uncertainty_of(r, "eta_j")), pm(trial_memory_peak(r, "host_peak_rss_mib")),
                      pm(trial_memory_peak(r, "cuda_peak_reserved_mib")),
                      pm(trial_memory_peak(r, "gpu_memory_used_peak_mib")),
                      r.result.is_object() && r.result.contains("harness_overhead_s") ? r.result["harness_overhead_s"]
                                                                                      : json(nullptr),
                      is_warmup(r) ? "yes" : "no", disturbed(r), system_of(r).fingerprint, spec_variant_of(r),
                      r.error});
  t.notes.push_back(
      "overhead_s: the trial's wall time minus its training, compress and decompress windows (and the "
      "cooldown): meters, idle baseline, set-up, per-epoch snapshots, provenance. Storing the trial "
      "comes after; bench_sweep measures it.");
  t.notes.push_back(kUncertaintyNote);
  t.notes.push_back(std::string(kMemoryNote) + " Here the highest of the trial's three phases.");
  t.notes.push_back(
      "warmup: a warm-up trial (run_design.warmup), listed here and left out of every statistic; disturbed: yes when "
      "other processes' CPU use or steal time during the trial passed the threshold, '-' when not recorded; system: "
      "the system fingerprint (--table systems describes each); variant: the spec variant (the experiment's spec "
      "without its grid coordinates; a change in the file between runs gives a new one).");
  std::vector<const TrialRecord*> all;
  int64_t warmups = 0;
  for (const auto& r : trials) {
    all.push_back(&r);
    warmups += is_warmup(r);
  }
  if (warmups)
    t.notes.push_back(std::to_string(warmups) + " warm-up trial(s) here: left out of every other table's statistics.");
  disturbed_note(t, all);
  for (const auto& r : trials)
    if (const Disturbance d = disturbance_of(r); d.disturbed && !d.reason.empty())
      t.notes.push_back("trial " + std::to_string(r.id) + " disturbed: " + d.reason);
  // What not to trust in a trial's energy: its windows' flags (failed meter reads, windows shorter
  // than a meter's update period), once per trial and flag.
  for (const auto& r : trials) {
    if (!r.result.is_object() || !r.result.contains("energy") || !r.result["energy"].is_object()) continue;
    const json& energy = r.result["energy"];
    std::vector<std::string> flags;
    const auto collect = [&flags](const json& window) {
      if (!window.is_object() || !window.contains("flags") || !window["flags"].is_array()) return;
      const std::string phase = window.value("phase", std::string("window"));
      for (const auto& f : window["flags"]) {
        if (!f.is_string()) continue;
        const std::string line = phase + ": " + f.get<std::string>();
        if (std::find(flags.begin(), flags.end(), line) == flags.end()) flags.push_back(line);
      }
    };
    if (energy.contains("phases") && energy["phases"].is_array())
      for (const auto& w : energy["phases"]) collect(w);
    if (energy.contains("total")) collect(energy["total"]);
    if (flags.empty()) continue;
    std::string note = "trial " + std::to_string(r.id) + " energy flags: ";
    for (std::size_t i = 0; i < flags.size(); ++i) note += (i ? "; " : "") + flags[i];
    t.notes.push_back(note);
  }
  return t;
}

// A stored window's cross-check (WindowResult::to_json), when it has a usable one.
const json* crosscheck_of(const json& window) {
  if (!window.is_object() || !window.contains("crosscheck")) return nullptr;
  const json& x = window["crosscheck"];
  if (!x.is_object() || !x.contains("wall_j") || !x["wall_j"].is_number() || !x.contains("components_j") ||
      !x["components_j"].is_number())
    return nullptr;
  return &x;
}

// The windows of a trial (its phases, then its total) for which `part` finds what a table lists.
std::vector<const json*> windows_with(const TrialRecord& r, const json* (*part)(const json&)) {
  std::vector<const json*> out;
  if (!r.result.is_object() || !r.result.contains("energy") || !r.result["energy"].is_object()) return out;
  const json& energy = r.result["energy"];
  if (energy.contains("phases") && energy["phases"].is_array())
    for (const auto& w : energy["phases"])
      if (part(w)) out.push_back(&w);
  if (energy.contains("total") && part(energy["total"])) out.push_back(&energy["total"]);
  return out;
}

std::vector<const json*> crosscheck_windows(const TrialRecord& r) { return windows_with(r, crosscheck_of); }

bool has_crosscheck(const std::vector<TrialRecord>& trials) {
  return std::any_of(trials.begin(), trials.end(), [](const TrialRecord& r) { return !crosscheck_windows(r).empty(); });
}

// REFERENCE_TABLES.md T6: the wall meter against the component meters, per trial and window.
Table crosscheck_table(const std::vector<TrialRecord>& trials) {
  Table t;
  t.name = "crosscheck";
  t.title = "Wall meter against component meters (T6)";
  t.columns = {"id",           "precision",       "batch_size", "power_limit", "window",     "wall_j",
               "wall_pm_j",    "components",      "components_j", "components_pm_j", "ratio", "unseen_j",
               "unseen_pct",   "reading"};
  const auto field = [](const json& x, const char* key) {
    return x.contains(key) && x[key].is_number() ? num(x[key].get<double>()) : json("-");
  };
  const auto text = [](const json& x, const char* key) {
    return x.contains(key) && x[key].is_string() ? x[key] : json("");
  };
  for (const auto& r : trials)
    for (const json* w : crosscheck_windows(r)) {
      const json& x = *crosscheck_of(*w);
      const std::string window = w->contains("phase") && (*w)["phase"].is_string() ? (*w)["phase"].get<std::string>()
                                                                                   : std::string("window");
      t.rows.push_back({r.id, r.precision, r.batch_size, watts_label(r.power_limit_w), window, field(x, "wall_j"),
                        field(x, "wall_uncertainty_j"), text(x, "components"), field(x, "components_j"),
                        field(x, "components_uncertainty_j"), field(x, "ratio"), field(x, "unseen_j"),
                        field(x, "unseen_pct"), text(x, "reading")});
    }
  if (t.rows.empty())
    t.notes.push_back("no trial has both a wall meter (energy.wattmeter_log) and a measured component meter (rapl, nvml)");
  t.notes.push_back(
      "wall_j: the wattmeter over the window; components_j: the measured domains of the total (estimates left out); "
      "ratio = components / wall; unseen = wall - components: fans, disks, network, the rest of the board and the "
      "power supply's loss. Published: AIPowerMeter's RAPL + NVML read 14,107 J against an OmegaWatt's 19,181 J "
      "(ratio 0.735; REFERENCE_TABLES.md T6).");
  t.notes.push_back("wall_pm_j, components_pm_j: each side's measurement ± ('-' where not quantified); a difference "
                    "within their sum is not resolved, and the reading says so.");
  return t;
}

// A stored window's T7 attribution (WindowResult::to_json), when it has one.
const json* attribution_of(const json& window) {
  if (!window.is_object() || !window.contains("attribution") || !window["attribution"].is_object()) return nullptr;
  return &window["attribution"];
}

std::vector<const json*> attribution_windows(const TrialRecord& r) { return windows_with(r, attribution_of); }

bool has_attribution(const std::vector<TrialRecord>& trials) {
  return std::any_of(trials.begin(), trials.end(), [](const TrialRecord& r) { return !attribution_windows(r).empty(); });
}

// REFERENCE_TABLES.md T7: per trial and window, each category's absolute energy beside the part
// attributable to the run's process tree.
Table attribution_table(const std::vector<TrialRecord>& trials) {
  Table t;
  t.name = "attribution";
  t.title = "Energy attributable to the run's processes (T7)";
  t.columns = {"id",    "precision", "batch_size", "power_limit",       "window",    "cpu_j",
               "cpu_attributable_j", "cpu_attributable_pm_j", "cpu_share", "gpu_j", "gpu_attributable_j",
               "gpu_attributable_pm_j", "gpu_share"};
  const auto field = [](const json& a, const char* category, const char* key) {
    if (!a.contains(category) || !a[category].is_object()) return json("-");
    const json& c = a[category];
    return c.contains(key) && c[key].is_number() ? num(c[key].get<double>()) : json("-");
  };
  for (const auto& r : trials)
    for (const json* w : attribution_windows(r)) {
      const json& a = *attribution_of(*w);
      const std::string window = w->contains("phase") && (*w)["phase"].is_string() ? (*w)["phase"].get<std::string>()
                                                                                   : std::string("window");
      t.rows.push_back({r.id, r.precision, r.batch_size, watts_label(r.power_limit_w), window,
                        field(a, "cpu", "energy_j"), field(a, "cpu", "attributable_j"),
                        field(a, "cpu", "attributable_uncertainty_j"), field(a, "cpu", "share"),
                        field(a, "gpu", "energy_j"), field(a, "gpu", "attributable_j"),
                        field(a, "gpu", "attributable_uncertainty_j"), field(a, "gpu", "share")});
    }
  if (t.rows.empty()) t.notes.push_back("no trial has an attribution: trials measured with energy off, or before attribution was recorded, have none");
  t.notes.push_back(
      "cpu_j, gpu_j: the absolute energy of the CPU and GPU domains, as everywhere else; *_attributable_j: the part "
      "of it attributable to the run's processes (balerbench and its children). CPU: times their share of the "
      "host's busy CPU time (AIPowerMeter's per_process_cpu_power); GPU: times their share of the SM use in NVML's "
      "per-process samples (nvidia_attributable_power). A GPU that no process used in a window has none of its "
      "energy attributed. '-': no share known (no per-process samples).");
  t.notes.push_back("*_pm_j: the ± of the attributable energy: the share times the energy's ±, plus the share's own "
                    "± (two clock ticks of CPU time at each edge; one sample of full SM use) times the energy.");
  return t;
}

// The systems among `trials`, in the order their first trial appears.
struct SystemTrials {
  SystemId id;
  std::vector<const TrialRecord*> trials;
};
std::vector<SystemTrials> systems_in(const std::vector<TrialRecord>& trials) {
  std::vector<SystemTrials> out;
  for (const auto& t : trials) {
    const SystemId id = system_of(t);
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const SystemTrials& s) { return s.id.fingerprint == id.fingerprint; });
    if (it == out.end()) {
      out.push_back({id, {}});
      it = out.end() - 1;
    }
    it->trials.push_back(&t);
  }
  return out;
}

json utc_time(double unix_s) {
  if (!(unix_s > 0) || !std::isfinite(unix_s)) return nullptr;
  const std::time_t t = static_cast<std::time_t>(unix_s);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// Distinct texts in first-seen order, joined by ", ".
std::string distinct_joined(const std::vector<std::string>& texts) {
  std::vector<std::string> seen;
  for (const auto& x : texts)
    if (x != "-" && std::find(seen.begin(), seen.end(), x) == seen.end()) seen.push_back(x);
  std::string s;
  for (const auto& x : seen) s += (s.empty() ? "" : ", ") + x;
  return s.empty() ? "-" : s;
}

// report --table systems: one row per system the trials ran on.
Table systems_table(const std::vector<TrialRecord>& trials) {
  Table t;
  t.name = "systems";
  t.title = "Systems the trials ran on";
  t.columns = {"system", "label", "cpu", "blas", "threads", "libtorch", "gpus", "env", "hosts", "trials", "finished",
               "warmups", "first_trial_utc", "last_trial_utc"};
  for (const auto& s : systems_in(trials)) {
    // The description of the system's last trial (the newest record of it), threads and hosts from all.
    const SystemDescription d = describe_trial_system(*s.trials.back());
    std::vector<std::string> threads, hosts;
    int64_t finished_n = 0, warmups = 0;
    double first = INFINITY, last = 0;
    for (const auto* r : s.trials) {
      const SystemDescription e = describe_trial_system(*r);
      if (e.threads) threads.push_back(std::to_string(*e.threads));
      hosts.push_back(e.host);
      finished_n += r->status == TrialStatus::kOk && !is_warmup(*r);
      warmups += is_warmup(*r);
      if (r->started_unix_s > 0) first = std::min(first, r->started_unix_s);
      last = std::max(last, std::max(r->finished_unix_s, r->started_unix_s));
    }
    t.rows.push_back({s.id.fingerprint, s.id.label, d.cpu, d.blas, distinct_joined(threads), d.torch, d.gpus, d.env,
                      distinct_joined(hosts), static_cast<int64_t>(s.trials.size()), finished_n, warmups,
                      utc_time(first), utc_time(last)});
  }
  t.notes.push_back(
      "A system is the machine with its BLAS library and kernel, the LibTorch build and the environment variables "
      "that change speed or numerics (provenance.system; its fingerprint hashes them). Trials recorded before system "
      "fingerprints are grouped by their hardware label (legacy-...: BLAS and environment not known). Every other "
      "table compares trials of one system only; --table across puts systems side by side.");
  t.notes.push_back("threads: the intra-op threads the trials trained with (each value seen); trials: every stored "
                    "trial, finished: those in the statistics (warm-ups left out).");
  return t;
}

// The configuration of a group, system aside: what --table across matches between systems.
bool same_configuration(const Group& a, const Group& b) {
  return a.batch_size == b.batch_size && a.precision == b.precision && a.engine == b.engine && a.epochs == b.epochs &&
         a.power_limit_w == b.power_limit_w && a.variant == b.variant;
}

const Figure kTta = {[](const TrialRecord& r) { return r.target_reached ? r.tta_s : std::nullopt; }, nullptr, "faster",
                     "slower"};
const Figure kEta = {[](const TrialRecord& r) { return r.target_reached ? r.eta_j : std::nullopt; }, "eta_j",
                     "less energy", "more energy"};

// report --table across: one configuration (batch size, precision, engine, power limit, epochs,
// spec variant) on each system that ran it, against the first of them.
Table across_table(const std::vector<TrialRecord>& trials) {
  const std::vector<SystemTrials> systems = systems_in(trials);
  Table t;
  t.name = "across";
  t.title = "The same configuration across systems";
  const std::vector<Group> all = group_trials(trials);
  const std::vector<Group> groups = finished(all);
  std::set<std::string> variants;
  for (const auto& g : groups) variants.insert(g.variant);
  const Axes a = varying(groups);
  axis_columns(t, a);
  if (variants.size() > 1) t.columns.push_back("variant");
  for (const char* c : {"system", "system_label", "n", "time_s", "time_vs_first", "time_verdict", "energy_j",
                        "energy_vs_first", "energy_verdict", "tta_s", "tta_vs_first", "eta_j", "eta_vs_first",
                        "energy"})
    t.columns.push_back(c);
  if (systems.size() < 2) {
    t.notes.push_back(systems.empty() ? "No trial stored: nothing to compare."
                                      : "One system is present (" + systems[0].id.label + ", " +
                                            systems[0].id.fingerprint + "): nothing to compare across systems.");
    return t;
  }
  const auto rank = [&](const std::string& fingerprint) {
    for (std::size_t i = 0; i < systems.size(); ++i)
      if (systems[i].id.fingerprint == fingerprint) return i;
    return systems.size();
  };
  std::vector<bool> done(groups.size(), false);
  int64_t single = 0;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    if (done[i]) continue;
    std::vector<const Group*> same;  // this configuration, one group per system, in system order
    for (std::size_t j = i; j < groups.size(); ++j)
      if (!done[j] && same_configuration(groups[i], groups[j])) {
        same.push_back(&groups[j]);
        done[j] = true;
      }
    if (same.size() < 2) {
      ++single;
      continue;
    }
    std::stable_sort(same.begin(), same.end(),
                     [&](const Group* x, const Group* y) { return rank(x->system) < rank(y->system); });
    const Group& ref = *same.front();
    for (const Group* g : same) {
      const bool is_ref = g == &ref;
      const Comparison tc = is_ref ? Comparison{num(1), nullptr, nullptr, "reference"} : compare(*g, ref, kTrainTime);
      const Comparison ec = is_ref ? Comparison{num(1), nullptr, nullptr, "reference"} : compare(*g, ref, kTrainEnergy);
      const Comparison ttc = is_ref ? Comparison{num(1), nullptr, nullptr, nullptr} : compare(*g, ref, kTta);
      const Comparison etc = is_ref ? Comparison{num(1), nullptr, nullptr, nullptr} : compare(*g, ref, kEta);
      const Summary time = g->stat(kTrainTime.get), energy = g->stat(kTrainEnergy.get);
      const Summary tta = g->stat(kTta.get), eta = g->stat(kEta.get);
      std::vector<json> row;
      axis_cells(row, *g, a);
      if (variants.size() > 1) row.push_back(g->variant);
      const std::string label = systems[rank(g->system)].id.label;
      for (const json& v :
           {json(g->system), json(label), json(static_cast<int64_t>(g->ok.size())), mean_or_null(time),
            time.n ? tc.ratio : json(nullptr), time.n ? tc.verdict : json(nullptr), mean_or_null(energy),
            energy.n ? ec.ratio : json(nullptr), energy.n ? ec.verdict : json(nullptr), mean_or_null(tta),
            tta.n ? ttc.ratio : json(nullptr), mean_or_null(eta), eta.n ? etc.ratio : json(nullptr),
            json(g->energy_kind())})
        row.push_back(v);
      t.rows.push_back(row);
    }
  }
  if (auto n = constant_axes_note(groups, a); !n.empty()) t.notes.push_back(n);
  std::string order;
  for (std::size_t i = 0; i < systems.size(); ++i)
    order += (i ? ", " : "") + systems[i].id.fingerprint + " (" + systems[i].id.label + ")";
  t.notes.push_back("Systems, in the order of their first trial: " + order + ". Each configuration's rows are compared "
                    "with the first system that ran it (*_vs_first: ratio of the means; 'reference' marks that row).");
  t.notes.push_back("A configuration is the batch size, precision, engine, power limit, epochs and spec variant: "
                    "trials from different versions of the experiment file are never matched.");
  if (single)
    t.notes.push_back(std::to_string(single) + " configuration(s) ran on one system only: not listed here.");
  t.notes.push_back(std::string("time_verdict, energy_verdict: against the first system, from the 95% interval of "
                                "the ratio as in the precision table (Welch's t on the logarithms of the repeats; an "
                                "energy interval at least the meters' relative +- summed). ") +
                    kVerdictWords);
  t.notes.push_back("tta_s, eta_j: mean time and energy to the target over the repeats that reached it.");
  t.notes.push_back(energy_kind_note());
  run_notes(t, all);
  return t;
}

// Trials of one system and one spec variant: the unit within which every comparison is made.
struct Slice {
  SystemId system;
  std::string variant;
  std::vector<TrialRecord> trials;
};
std::vector<Slice> slices_of(const std::vector<TrialRecord>& trials) {
  std::vector<Slice> out;
  for (const auto& t : trials) {
    const SystemId id = system_of(t);
    const std::string v = spec_variant_of(t);
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const Slice& s) { return s.system.fingerprint == id.fingerprint && s.variant == v; });
    if (it == out.end()) {
      out.push_back({id, v, {}});
      it = out.end() - 1;
    }
    it->trials.push_back(t);
  }
  return out;
}

// A spec as path -> value text ("dataset.rows" -> "2000").
void flatten(const json& j, const std::string& path, std::map<std::string, std::string>& out) {
  if (j.is_object() && !j.empty()) {
    for (const auto& [k, v] : j.items()) flatten(v, path.empty() ? k : path + "." + k, out);
    return;
  }
  std::string text = j.dump();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  out[path.empty() ? "spec" : path] = text;
}

// How a slice's spec variant differs from the other variants of its system: "dataset.rows = 2000, ...".
std::string variant_difference(const Slice& s, const std::vector<Slice>& slices) {
  std::vector<std::map<std::string, std::string>> specs;
  std::map<std::string, std::string> mine;
  for (const auto& o : slices) {
    if (o.system.fingerprint != s.system.fingerprint || o.trials.empty()) continue;
    std::map<std::string, std::string> f;
    flatten(spec_without_grid(o.trials.front().spec), "", f);
    if (&o == &s) mine = f;
    specs.push_back(std::move(f));
  }
  std::set<std::string> paths;
  for (const auto& f : specs)
    for (const auto& kv : f) paths.insert(kv.first);
  std::string out;
  for (const auto& path : paths) {
    bool differs = false;
    for (const auto& f : specs) {
      const auto a = f.find(path);
      const auto b = mine.find(path);
      differs |= (a == f.end()) != (b == mine.end()) || (a != f.end() && b != mine.end() && a->second != b->second);
    }
    const auto it = mine.find(path);
    if (differs) out += (out.empty() ? "" : ", ") + path + " = " + (it != mine.end() ? it->second : "(absent)");
  }
  return out;
}

// Tables of one slice among several: a name unique among the experiment's tables (one CSV file
// each), the variant in the title, and notes saying why the trials are split.
void mark_slice(std::vector<Table>& tables, const Slice& s, const std::vector<Slice>& slices, std::size_t n_systems) {
  std::size_t variants_here = 0;
  for (const auto& o : slices) variants_here += o.system.fingerprint == s.system.fingerprint;
  for (auto& t : tables) {
    if (n_systems > 1) {
      t.name += "_" + s.system.fingerprint;
      t.notes.push_back("The trials ran on " + std::to_string(n_systems) +
                        " systems: one table per system, never mixed (--table systems describes them, --table across "
                        "compares them).");
    }
    if (variants_here > 1) {
      t.name += "_v" + s.variant;
      t.title += ", spec variant " + s.variant;
      const std::string diff = variant_difference(s, slices);
      t.notes.push_back("Spec variant " + s.variant + " (" + std::to_string(s.trials.size()) + " trials), one of " +
                        std::to_string(variants_here) + " on this system: the experiment file changed between runs" +
                        (diff.empty() ? "" : "; this variant has " + diff) +
                        ". Variants are never compared with each other; each has its own table.");
    }
  }
}

std::string format_cell(const json& v) {
  if (v.is_null()) return "-";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  const double x = v.get<double>();
  char buf[64];
  const double ax = std::fabs(x);
  if (ax == 0) return "0";
  if (ax >= 1e7 || ax < 1e-3)
    std::snprintf(buf, sizeof buf, "%.3e", x);
  else if (ax >= 1000)
    std::snprintf(buf, sizeof buf, "%.0f", x);
  else
    std::snprintf(buf, sizeof buf, "%.4g", x);
  return buf;
}

std::string csv_cell(const json& v) {
  if (v.is_null()) return "";
  if (v.is_number_float()) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.10g", v.get<double>());
    return buf;
  }
  std::string s = v.is_string() ? v.get<std::string>() : v.dump();
  if (s.find_first_of(",\"\n") != std::string::npos) {
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  }
  return s;
}

std::string latex_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '_' || c == '%' || c == '&' || c == '#' || c == '$') out += '\\';
    if (c == '>') {
      out += "$>$";
      continue;
    }
    if (c == '~') {  // "~12 repeats would resolve it": a tilde, not LaTeX's non-breaking space
      out += "\\textasciitilde{}";
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace

const std::vector<std::string>& report_table_names() {
  static const std::vector<std::string> names = {"precision",  "phases",   "batch_size", "power_limit",
                                                 "cost",       "complexity", "datasets", "crosscheck",
                                                 "attribution", "systems",  "across",   "trials"};
  return names;
}

void check_table_name(const std::string& table, const std::string& option) {
  const auto& names = report_table_names();
  if (table == "all" || std::find(names.begin(), names.end(), table) != names.end()) return;
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  throw InputError(option + " '" + table + "': no such table", "one of: " + list + ", all");
}

std::vector<Table> make_tables(const std::vector<TrialRecord>& trials, const std::string& table,
                               const std::vector<double>& etas_in) {
  const std::vector<double> etas = etas_in.empty() ? std::vector<double>{0.0, 0.5, 1.0} : etas_in;
  check_table_name(table);
  std::vector<Table> out;
  auto want = [&](const char* n) { return table == "all" || table == n; };
  // Tables that compare configurations: one per system and spec variant, never mixing them.
  const std::vector<Slice> slices = slices_of(trials);
  const std::size_t n_systems = systems_in(trials).size();
  const auto per_slice = [&](const std::function<std::vector<Table>(const std::vector<TrialRecord>&)>& make) {
    if (slices.size() <= 1) {
      for (auto& t : make(trials)) out.push_back(std::move(t));
      return;
    }
    for (const auto& s : slices) {
      std::vector<Table> tables = make(s.trials);
      mark_slice(tables, s, slices, n_systems);
      for (auto& t : tables) out.push_back(std::move(t));
    }
  };
  if (want("precision")) per_slice([](const auto& ts) { return std::vector<Table>{precision_table(ts)}; });
  if (want("phases")) per_slice([](const auto& ts) { return phases_tables(ts); });
  // With "all", an axis table only when that axis varies (in that slice); asked for by name, always.
  for (const char* axis : {"batch_size", "power_limit"}) {
    if (table != axis && table != "all") continue;
    per_slice([&](const std::vector<TrialRecord>& ts) {
      const Axes axes = varying(finished(group_trials(ts)));
      const bool varies = std::string(axis) == "batch_size" ? axes.batch : axes.limit;
      return table == axis || varies ? std::vector<Table>{axis_table(ts, axis, etas)} : std::vector<Table>{};
    });
  }
  if (want("cost")) per_slice([&](const auto& ts) { return cost_tables(ts, etas); });
  if (want("complexity")) out.push_back(complexity_table(trials));
  if (want("datasets")) out.push_back(datasets_table(trials));
  if (table == "crosscheck" || (table == "all" && has_crosscheck(trials))) out.push_back(crosscheck_table(trials));
  if (table == "attribution" || (table == "all" && has_attribution(trials))) out.push_back(attribution_table(trials));
  if (want("systems")) out.push_back(systems_table(trials));
  if (table == "across" || (table == "all" && n_systems > 1)) out.push_back(across_table(trials));
  if (want("trials")) out.push_back(trials_table(trials));
  return out;
}

std::string render_tables(const std::vector<Table>& tables, const std::string& format) {
  std::ostringstream o;
  if (format == "json") {
    json all = json::array();
    for (const auto& t : tables) {
      json rows = json::array();
      for (const auto& r : t.rows) {
        json obj = json::object();
        for (std::size_t i = 0; i < t.columns.size() && i < r.size(); ++i) obj[t.columns[i]] = r[i];
        rows.push_back(obj);
      }
      all.push_back(
          {{"table", t.name}, {"title", t.title}, {"columns", t.columns}, {"rows", rows}, {"notes", t.notes}});
    }
    return json{{"tables", all}}.dump(2) + "\n";
  }
  for (std::size_t k = 0; k < tables.size(); ++k) {
    const Table& t = tables[k];
    if (format == "md") {
      if (k) o << "\n";
      o << "### " << t.title << "\n\n|";
      for (const auto& c : t.columns) o << " " << c << " |";
      o << "\n|";
      for (std::size_t i = 0; i < t.columns.size(); ++i) o << "---|";
      o << "\n";
      for (const auto& r : t.rows) {
        o << "|";
        for (const auto& v : r) o << " " << format_cell(v) << " |";
        o << "\n";
      }
      if (!t.notes.empty()) o << "\n";
      for (const auto& n : t.notes) o << "- " << n << "\n";
    } else if (format == "csv") {
      // One table, header first: it opens as it is in pandas and spreadsheets. Titles and notes
      // live in the JSON form (balerbench report --out DIR writes it beside the CSV files).
      if (tables.size() != 1)
        throw InputError("CSV holds one table per file; " + std::to_string(tables.size()) + " tables selected",
                         "name one with --table (and --experiment), or give --out DIR for one file per table");
      for (std::size_t i = 0; i < t.columns.size(); ++i) o << (i ? "," : "") << t.columns[i];
      o << "\n";
      for (const auto& r : t.rows) {
        for (std::size_t i = 0; i < r.size(); ++i) o << (i ? "," : "") << csv_cell(r[i]);
        o << "\n";
      }
    } else if (format == "latex") {
      if (k) o << "\n";
      o << "% " << t.title << "\n\\begin{table}[ht]\n\\centering\n\\begin{tabular}{";
      for (std::size_t i = 0; i < t.columns.size(); ++i) o << (i ? "r" : "l");
      o << "}\n\\hline\n";
      for (std::size_t i = 0; i < t.columns.size(); ++i) o << (i ? " & " : "") << latex_escape(t.columns[i]);
      o << " \\\\\n\\hline\n";
      for (const auto& r : t.rows) {
        for (std::size_t i = 0; i < r.size(); ++i) o << (i ? " & " : "") << latex_escape(format_cell(r[i]));
        o << " \\\\\n";
      }
      o << "\\hline\n\\end{tabular}\n\\caption{" << latex_escape(t.title) << "}\n\\end{table}\n";
      for (const auto& n : t.notes) o << "% " << n << "\n";
    } else {
      throw InputError("--format '" + format + "': unknown", "md, csv, latex or json");
    }
  }
  return o.str();
}

}  // namespace balerbench
