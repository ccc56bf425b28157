// convergence_table.cpp: --table convergence: per configuration, how many epochs its repeats took to
// reach the target (mean, spread, and how many never did), their final training and validation
// loss, and whether a precision needs more epochs than FP32 at the same other settings.
//
// The question is the one MLPerf's reference convergence points (RCP) answer for a training
// submission: is a change of method (here the precision) still converging like the reference (here
// FP32), judged from repeats with different seeds rather than from one lucky run. Here it is a
// one-sided Welch t test on epochs to target (base/statistics.h), H1 "this precision needs more epochs than
// FP32", at the 5% level. A repeat that never reached the target counts as its epochs + 1: a lower
// bound, so a precision that misses the target cannot look faster by it.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "harness/base/statistics.h"
#include "harness/base/precision_mode.h"
#include "harness/report/table_cells.h"
#include "harness/report/table_notes.h"
#include "harness/report/trial_groups.h"

namespace balerbench::report {
namespace {

using nlohmann::json;

constexpr double kAlpha = 0.05;  // one-sided

std::optional<double> epochs_to_target(const TrialRecord& r) {
  if (!r.target_reached || !r.epochs_to_target) return std::nullopt;
  return static_cast<double>(*r.epochs_to_target);
}

// Epochs to target with the repeats that never reached it at their epochs run + 1 (a lower bound).
std::vector<double> censored_epochs(const Group& g) {
  std::vector<double> v;
  for (const auto* t : g.ok) {
    if (const auto e = epochs_to_target(*t)) {
      v.push_back(*e);
      continue;
    }
    const int64_t run = t->result.is_object() ? t->result.value("epochs_run", t->epochs) : t->epochs;
    v.push_back(static_cast<double>(run + 1));
  }
  return v;
}

std::optional<double> result_number(const TrialRecord& r, const char* key) {
  if (!r.result.is_object() || !r.result.contains(key) || !r.result[key].is_number()) return std::nullopt;
  const double v = r.result[key].get<double>();
  return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
}

// FP32 at the same model, compression ratio, batch size, power limit, epochs, system and spec variant:
// of the same engine where there is one, else of whichever engine ran fp32 (engine auto runs amp_bf16
// on libtorch and fp32 on fused), as the precision table's baseline.
const Group* fp32_of(const Group& g, const std::vector<Group>& groups) {
  const Group* base = nullptr;
  for (const auto& h : groups)
    if (find_precision(h.precision) == Precision::kFp32 && h.batch_size == g.batch_size &&
        h.power_limit_w == g.power_limit_w && h.epochs == g.epochs && h.system == g.system && h.variant == g.variant &&
        same_model(h, g) &&
        (!base || h.engine == g.engine))
      base = &h;
  return base;
}

std::string p_text(double p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, p < 0.001 ? "p < 0.001" : "p = %.3f", p);
  return buf;
}

// The test's three cells: extra epochs over FP32 (difference of the censored means), p, verdict.
std::vector<json> against_fp32(const Group& g, const std::vector<Group>& groups) {
  const Group* base = fp32_of(g, groups);
  if (base == &g) return {nullptr, nullptr, "baseline"};
  if (!base) return {nullptr, nullptr, "no FP32 row at these settings"};
  const OneSidedTest t = one_sided_welch_greater(censored_epochs(g), censored_epochs(*base));
  if (!t.valid) {
    const std::size_t n = std::min(t.n_a, t.n_b);
    return {nullptr, nullptr, "n=" + std::to_string(n) + ": no test (two repeats a side at least)"};
  }
  const json extra = num(t.mean_a - t.mean_b);
  if (t.exact)
    return {extra, num(t.p),
            t.p == 0 ? "needs more epochs (every repeat; no spread to test)" : "not more epochs (no spread on either side)"};
  return {extra, num(t.p),
          t.p < kAlpha ? "needs more epochs (" + p_text(t.p) + ")" : "no evidence of more epochs (" + p_text(t.p) + ")"};
}

std::vector<json> convergence_row(const Group& g, const std::vector<Group>& groups, const Axes& a, bool target) {
  const Summary e = g.stat(epochs_to_target);
  const Summary train = g.stat([](const TrialRecord& r) { return result_number(r, "final_train_loss"); });
  const Summary val = g.stat([](const TrialRecord& r) { return result_number(r, "final_val_loss"); });
  const auto n = static_cast<int64_t>(g.ok.size());
  std::vector<json> row = {mode_name(g.precision), g.precision};
  axis_cells(row, g, a, false);
  row.push_back(n);
  row.push_back(target ? json(std::to_string(e.n) + "/" + std::to_string(n)) : json("no target"));
  row.push_back(target ? json(n - static_cast<int64_t>(e.n)) : json(nullptr));
  for (const json& v : {mean_or_null(e), sd_or_null(e), e.n ? num(e.min) : json(nullptr),
                        e.n ? num(e.max) : json(nullptr), mean_or_null(train), mean_or_null(val)})
    row.push_back(v);
  for (json& v : target ? against_fp32(g, groups) : std::vector<json>{nullptr, nullptr, "no target"})
    row.push_back(std::move(v));
  return row;
}

void convergence_notes(Table& t, const std::vector<TrialRecord>& trials, bool target) {
  t.notes.push_back(target ? "epochs to target: the first epoch whose metric met the target (" + target_text(trials) +
                                 "), over the repeats that reached it (mean, sd, min and max); never: the repeats "
                                 "that did not reach it within their epochs."
                           : "No target in the experiment: epochs to target are not defined; the final losses stand "
                             "alone.");
  t.notes.push_back("final_train_loss, final_val_loss: the last epoch's training and validation loss, mean over the "
                    "repeats ('-' without a validation set).");
  t.notes.push_back(
      "Repeats differ in their seed: repeat r trains with training.seed + r (initial weights, validation split and "
      "shuffling), so the spread is over seeds, as MLPerf's convergence runs are.");
  t.notes.push_back(
      "vs FP32 (in the spirit of MLPerf's reference convergence points: does a change of method still converge like "
      "the reference?): a one-sided Welch t test of \"this precision needs more epochs to the target than FP32 at the "
      "same model, compression ratio, batch size, power limit and epochs\" (of the same engine where there is one; Student's t from Boost.Math); "
      "needs more epochs when p < 0.05. "
      "A repeat that never reached the target counts as its epochs + 1, a lower bound. extra_epochs_vs_fp32: the "
      "difference of those means.");
}

}  // namespace

std::vector<Table> make_convergence_tables(const std::vector<TrialRecord>& trials, const TableOptions&) {
  const std::vector<Group> all = group_trials(trials);
  std::vector<Group> groups = finished(all);
  sort_for_precision(groups);
  const bool target = has_target(trials);
  Table t;
  t.name = "convergence";
  t.title = "Epochs to target and final loss per configuration, against FP32, on " + where_run(trials);
  const Axes a = varying(groups);
  t.columns = {"mode", "precision"};
  axis_columns(t, a, false);
  for (const char* c : {"n", "reached", "never", "epochs_to_target", "epochs_to_target_sd", "epochs_to_target_min",
                        "epochs_to_target_max", "final_train_loss", "final_val_loss", "extra_epochs_vs_fp32",
                        "more_epochs_p", "vs_fp32"})
    t.columns.push_back(c);
  for (const auto& g : groups) t.rows.push_back(convergence_row(g, groups, a, target));
  t.decision_columns = {"precision", "model", "compression_ratio", "latent", "parameters", "batch_size", "engine", "power_limit", "epochs", "n", "reached",
                        "epochs_to_target", "epochs_to_target_sd", "final_val_loss", "more_epochs_p", "vs_fp32"};
  if (auto n = constant_axes_note(groups, a); !n.empty()) t.notes.push_back(n);
  convergence_notes(t, trials, target);
  failures_note(t, all);
  run_notes(t, all);
  return {t};
}

bool has_epochs_to_target(const std::vector<TrialRecord>& trials) { return has_target(trials); }

}  // namespace balerbench::report
