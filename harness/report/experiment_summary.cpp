// experiment_summary.cpp: experiment_summary (report_page.h): what was run, in one paragraph, from
// the stored trials alone.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "harness/report/html_text.h"
#include "harness/report/report_page.h"
#include "harness/report/table_cells.h"
#include "harness/report/trial_groups.h"
#include "harness/report/trial_identity.h"

namespace balerbench::report {
namespace {

// Distinct values in first-seen order, joined by ", ".
template <typename T, typename F>
std::string values_of(const std::vector<TrialRecord>& trials, F get) {
  std::vector<T> seen;
  for (const auto& t : trials)
    if (const T v = get(t); std::find(seen.begin(), seen.end(), v) == seen.end()) seen.push_back(v);
  std::sort(seen.begin(), seen.end());
  std::vector<std::string> texts;
  for (const auto& v : seen) {
    if constexpr (std::is_same_v<T, std::string>)
      texts.push_back(v);
    else
      texts.push_back(std::to_string(v));
  }
  return distinct_joined(texts);
}

std::string plural(std::size_t n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// "12 trials: 10 finished, 1 failed, 1 warm-up (in no statistic)"
std::string counts_sentence(const std::vector<TrialRecord>& trials) {
  std::size_t finished_n = 0, failed = 0, skipped = 0, warmups = 0, disturbed = 0;
  for (const auto& t : trials) {
    if (is_warmup(t))
      ++warmups;
    else if (t.status == TrialStatus::kOk)
      ++finished_n;
    else if (t.status == TrialStatus::kSkipped)
      ++skipped;
    else
      ++failed;
    disturbed += disturbance_of(t).disturbed;
  }
  std::string s = plural(trials.size(), "trial", "trials") + " stored: " + std::to_string(finished_n) + " finished";
  if (failed) s += ", <span class=\"bb-key bb-failed\">" + std::to_string(failed) + " failed</span>";
  if (skipped) s += ", <span class=\"bb-key bb-skipped\">" + std::to_string(skipped) + " skipped</span>";
  if (warmups) s += ", <span class=\"bb-key bb-warmup\">" + plural(warmups, "warm-up", "warm-ups") + " (in no statistic)</span>";
  if (disturbed)
    s += ", <span class=\"bb-key bb-disturbed\">" + std::to_string(disturbed) +
         " on a disturbed machine (kept in the statistics; the trials table's notes say why)</span>";
  return s + ".";
}

std::string systems_sentence(const std::vector<TrialRecord>& trials) {
  const auto systems = systems_in(trials);
  std::string s = systems.size() == 1 ? "They ran on one system: " : "They ran on " + std::to_string(systems.size()) +
                                                                          " systems, never mixed in a table or figure: ";
  for (std::size_t i = 0; i < systems.size(); ++i)
    s += (i ? "; " : "") + html_escape(systems[i].id.label) + " (<code>" + html_escape(systems[i].id.fingerprint) +
         "</code>)";
  return s + ".";
}

std::string grid_sentence(const std::vector<TrialRecord>& trials) {
  std::vector<TrialRecord> runs;  // the grid's trials, warm-ups aside
  for (const auto& t : trials)
    if (!is_warmup(t)) runs.push_back(t);
  if (runs.empty()) return "";
  const std::vector<Group> groups = group_trials(runs);
  std::set<std::size_t> repeats;
  for (const auto& g : groups) repeats.insert(g.ok.size() + g.failed + g.skipped);
  std::string limits = values_of<std::string>(runs, [](const TrialRecord& t) { return watts_label(t.power_limit_w); });
  const std::string models = values_of<std::string>(runs, [](const TrialRecord& t) { return model_of(t); });
  std::set<double> ratio_values;  // in numeric order: 1.6, 4, 16
  for (const auto& t : runs)
    if (const auto r = compression_ratio_of(t)) ratio_values.insert(*r);
  std::string ratios;
  for (const double r : ratio_values) ratios += (ratios.empty() ? "" : ", ") + ratio_label(r);
  std::string s = "Grid: " + plural(groups.size(), "configuration", "configurations") + " (model " +
                  html_escape(models) + "; compression ratio " + (ratios.empty() ? "-" : ratios) + "; precision " +
                  html_escape(values_of<std::string>(runs, [](const TrialRecord& t) { return t.precision; })) +
                  "; batch size " + values_of<int64_t>(runs, [](const TrialRecord& t) { return t.batch_size; }) +
                  "; engine " + html_escape(values_of<std::string>(runs, [](const TrialRecord& t) { return t.engine; })) +
                  "; GPU power limit " + html_escape(limits) + "; " +
                  values_of<int64_t>(runs, [](const TrialRecord& t) { return t.epochs; }) + " epochs), ";
  s += repeats.size() == 1 ? plural(*repeats.begin(), "trial", "trials") + " each"
                           : std::to_string(*repeats.begin()) + " to " + std::to_string(*repeats.rbegin()) + " trials each";
  return s + ".";
}

std::string energy_sentence(const std::vector<TrialRecord>& trials) {
  std::vector<std::string> kinds;
  for (const auto& t : trials)
    if (t.status == TrialStatus::kOk) kinds.push_back(t.energy_kind.empty() ? "none" : t.energy_kind);
  const std::string k = distinct_joined(kinds);
  if (k == "-") return "";
  std::string s = "Energy: " + html_escape(k);
  if (k.find("estimated") != std::string::npos) s += " (power models, not a measurement: it follows the time)";
  if (k.find("simulated") != std::string::npos) s += " (SIMULATED by balerbench's GPU model)";
  return s + ".";
}

std::string target_sentence(const std::vector<TrialRecord>& trials) {
  if (!has_target(trials)) return "";
  std::size_t finished_n = 0, reached = 0;
  for (const auto& t : trials)
    if (t.status == TrialStatus::kOk && !is_warmup(t)) {
      ++finished_n;
      reached += t.target_reached;
    }
  const std::string target = "Target: " + html_escape(target_text(trials));
  if (!finished_n) return target + ".";
  return target + ", reached by " + std::to_string(reached) + " of the " + std::to_string(finished_n) +
         " finished trials.";
}

std::string dates_sentence(const std::vector<TrialRecord>& trials) {
  double first = INFINITY, last = 0;
  for (const auto& t : trials) {
    if (t.started_unix_s > 0) first = std::min(first, t.started_unix_s);
    last = std::max(last, std::max(t.started_unix_s, t.finished_unix_s));
  }
  const auto a = utc_time(first), b = utc_time(last);
  if (!a.is_string() || !b.is_string()) return "";
  return "They ran from " + a.get<std::string>() + " to " + b.get<std::string>() + " (UTC).";
}

}  // namespace

std::string experiment_summary(const ExperimentReport& e) {
  const auto& trials = e.trials;
  if (trials.empty()) return "No trial of this experiment is stored.";
  std::string s = counts_sentence(trials);
  const bool none_finished = std::none_of(trials.begin(), trials.end(), [](const TrialRecord& t) {
    return t.status == TrialStatus::kOk && !is_warmup(t);
  });
  if (none_finished) {
    const auto first_error = std::find_if(trials.begin(), trials.end(), [](const TrialRecord& t) { return !t.error.empty(); });
    s += " <strong>No trial finished</strong>, so there is nothing to measure or plot: the trials table lists each "
         "one with its error";
    if (first_error != trials.end()) s += " (the first: <q>" + html_escape(first_error->error) + "</q>)";
    s += ".";
  }
  for (const std::string& part : {systems_sentence(trials), grid_sentence(trials), energy_sentence(trials),
                                  target_sentence(trials), dates_sentence(trials)})
    if (!part.empty()) s += " " + part;
  return s;
}

}  // namespace balerbench::report
