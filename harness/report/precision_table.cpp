// precision_table.cpp: --table precision, docs/reference_tables.md T3's shape: training time and energy
// per precision mode, each configuration against the FP32 row with the same other settings (ratio,
// its 95% interval and a verdict).
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "common/text.h"
#include "harness/base/precision_mode.h"
#include "harness/energy/carbon.h"
#include "harness/report/group_checks.h"
#include "harness/report/ratio_comparison.h"
#include "harness/report/table_cells.h"
#include "harness/report/table_notes.h"
#include "harness/report/trial_groups.h"

namespace balerbench::report {
namespace {

using nlohmann::json;

// The FP32 row with the same other settings (model and compression ratio among them: a ratio is never
// taken across fidelities), system and spec variant: of the same engine where
// there is one (engines compared side by side), else of whichever engine ran fp32 (auto runs
// amp_bf16 on libtorch and fp32 on fused: the ratio is then AMP against FP32 as auto runs them).
const Group* fp32_baseline(const Group& g, const std::vector<Group>& groups) {
  const Group* base = nullptr;
  for (const auto& h : groups)
    if (find_precision(h.precision) == Precision::kFp32 && h.batch_size == g.batch_size && h.epochs == g.epochs &&
        h.power_limit_w == g.power_limit_w && h.system == g.system && h.variant == g.variant && same_model(h, g) &&
        (!base || h.engine == g.engine))
      base = &h;
  return base;
}

// A group's time and energy against its baseline: "baseline" on the baseline's own row.
std::pair<Comparison, Comparison> against_fp32(const Group& g, const std::vector<Group>& groups, double min_effect) {
  const Group* base = fp32_baseline(g, groups);
  const Summary time = g.stat(kTrainTime.get);
  const Summary energy = g.stat(kTrainEnergy.get);
  if (base == &g)
    return {{time.n ? num(1) : json(nullptr), nullptr, nullptr, time.n ? json("baseline") : json(nullptr)},
            {energy.n ? num(1) : json(nullptr), nullptr, nullptr, energy.n ? json("baseline") : json(nullptr)}};
  if (base) return {compare(g, *base, kTrainTime, min_effect), compare(g, *base, kTrainEnergy, min_effect)};
  return {};
}

// The intra-op threads a group's repeats trained on ("2", or "1, 2" when they differ).
std::string threads_of(const Group& g) {
  std::set<int64_t> seen;
  for (const TrialRecord* t : g.ok)
    if (const auto n = describe_trial_system(*t).threads) seen.insert(*n);
  std::string s;
  for (int64_t n : seen) s += (s.empty() ? "" : ", ") + std::to_string(n);
  return s.empty() ? "-" : s;
}

// The threads cell: the row's threads, and its FP32 row's where they differ ("1 (fp32: 2)").
std::string threads_cell(const Group& g, const std::vector<Group>& groups) {
  const std::string mine = threads_of(g);
  const Group* base = fp32_baseline(g, groups);
  if (!base || base == &g || threads_of(*base) == mine) return mine;
  return mine + " (fp32: " + threads_of(*base) + ")";
}

std::vector<json> precision_row(const Group& g, const std::vector<Group>& groups, const Axes& a, double min_effect) {
  const Summary time = g.stat(kTrainTime.get);
  const Summary energy = g.stat(kTrainEnergy.get);
  const auto [tc, ec] = against_fp32(g, groups, min_effect);
  std::vector<json> row = {mode_name(g.precision), g.precision};
  axis_cells(row, g, a, false);
  for (const json& v : {json(threads_cell(g, groups)), json(static_cast<int64_t>(time.n)), mean_or_null(time), median_or_null(time),
                        sd_or_null(time), mad_or_null(time), ci_or_null(time), tc.ratio, tc.low, tc.high, tc.verdict,
                        mean_or_null(energy), median_or_null(energy), sd_or_null(energy), mad_or_null(energy),
                        energy.n ? num(energy.mean / kJoulesPerKwh) : json(nullptr), ec.ratio, ec.low, ec.high,
                        ec.verdict, updates_cell(g, "train"), window_cell(g, "train"), json(g.energy_kind())})
    row.push_back(v);
  return row;
}

// Rows whose threads differ from their FP32 row's, and amp_bf16 rows on CPUs without bfloat16
// instructions: both change what a ratio is about, and say so.
void fairness_notes(Table& t, const std::vector<Group>& groups) {
  std::vector<std::string> unequal, mixed, emulated;
  std::string unequal_cell;  // the first such row's threads cell, as the note's example
  for (const Group& g : groups) {
    if (threads_of(g).find(',') != std::string::npos) mixed.push_back(g.label());
    const Group* base = fp32_baseline(g, groups);
    if (base && base != &g && threads_of(*base) != threads_of(g)) {
      unequal.push_back(g.label());
      if (unequal_cell.empty()) unequal_cell = threads_cell(g, groups);
    }
    if (find_precision(g.precision) != Precision::kAmpBf16 || g.ok.empty()) continue;
    const TrialRecord& t = *g.ok.front();
    const auto bf16 = describe_trial_system(t).bf16_instructions;
    const bool on_cpu = !t.result.is_object() || t.result.value("device", std::string("cpu")).rfind("cuda", 0) != 0;
    if (bf16 && !*bf16 && on_cpu) emulated.push_back(g.label());
  }
  if (!unequal.empty())
    t.notes.push_back("UNEQUAL THREADS: " + joined(unequal, "; ") +
                      " trained on other threads than its FP32 row (the threads column: '" + unequal_cell + "'), so its "
                      "ratios compare unequal thread counts. Set `threads` in the run config to compare on equal "
                      "terms; the thread calibration otherwise chooses per precision and engine.");
  if (!mixed.empty())
    t.notes.push_back("MIXED THREADS: " + joined(mixed, "; ") +
                      ": the repeats of one row trained on different thread counts (the threads column lists them). "
                      "A run keeps a setting's thread choice for its own trials; a run resumed or extended later "
                      "chooses again. Set `threads` in the run config to fix the count.");
  if (!emulated.empty())
    t.notes.push_back(std::string(kBf16Emulated) + ": " + joined(emulated, "; ") +
                      ": amp_bf16's verdicts here are about emulated bfloat16, not about bfloat16 hardware.");
}

// Below the rows: outliers among the repeats, short energy windows, and the --min-effect rule.
void robustness_notes(Table& t, const std::vector<Group>& groups, double min_effect) {
  outlier_notes(t, groups, kTrainTime.get, "training time");
  outlier_notes(t, groups, kTrainEnergy.get, "training energy");
  short_window_note(t, groups, "train", "the training energy");
  if (auto n = min_effect_note(min_effect); !n.empty()) t.notes.push_back(n);
}

}  // namespace

std::vector<Table> make_precision_tables(const std::vector<TrialRecord>& trials, const TableOptions& o) {
  const std::vector<Group> all = group_trials(trials);
  std::vector<Group> groups = finished(all);
  sort_for_precision(groups);
  Table t;
  t.name = "precision";
  t.title = "Training time and energy per precision mode (T3's shape) on " + where_run(trials);
  const Axes a = varying(groups);
  t.columns = {"mode", "precision"};
  axis_columns(t, a, false);
  for (const char* c : {"threads", "n", "time_s", "time_median_s", "time_sd_s", "time_mad_s", "time_ci95_s", "time_vs_fp32",
                        "time_vs_fp32_ci95_low", "time_vs_fp32_ci95_high", "time_verdict", "energy_j",
                        "energy_median_j", "energy_sd_j", "energy_mad_j", "energy_kwh", "energy_vs_fp32",
                        "energy_vs_fp32_ci95_low", "energy_vs_fp32_ci95_high", "energy_verdict", "energy_updates",
                        "energy_window", "energy"})
    t.columns.push_back(c);
  for (const auto& g : groups) t.rows.push_back(precision_row(g, groups, a, o.min_effect));
  t.decision_columns = {"precision", "model", "compression_ratio", "latent", "parameters", "batch_size", "engine", "power_limit", "epochs", "threads", "n", "time_s",
                        "time_vs_fp32",
                        "time_vs_fp32_ci95_low", "time_vs_fp32_ci95_high", "time_verdict", "energy_j",
                        "energy_vs_fp32", "energy_vs_fp32_ci95_low", "energy_vs_fp32_ci95_high", "energy_verdict",
                        "energy"};
  if (any_short_window(groups, "train")) t.decision_columns.insert(t.decision_columns.end() - 1, "energy_window");
  if (auto n = constant_axes_note(groups, a); !n.empty()) t.notes.push_back(n);
  t.notes.push_back(
      "time and energy: the whole training (every epoch with its evaluation), mean and median over "
      "repeats; sd = standard deviation, mad = median absolute deviation from the median, ci95 = half-width of the "
      "95% confidence interval (Student t). Ratios "
      "(*_vs_fp32, of the means) are to the FP32 row with the same other settings (the same model and compression "
      "ratio among them), on the same system and spec variant (of the same engine where there is one). threads: the intra-op threads the repeats trained on "
      "(chosen by the thread calibration per precision and engine, or the run config's `threads`). energy_updates: the fewest meter updates inside a repeat's "
      "training window; energy_window: short when below the trial's threshold ('-': estimated energy, no meter "
      "updates).");
  t.notes.push_back(std::string(kIntervalNote) + " " + kVerdictWords);
  t.notes.push_back(energy_kind_note());
  fairness_notes(t, groups);
  robustness_notes(t, groups, o.min_effect);
  failures_note(t, all);
  run_notes(t, all);
  return {t};
}

}  // namespace balerbench::report
