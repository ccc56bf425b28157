// group_checks.cpp: see group_checks.h.
#include "harness/report/group_checks.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "harness/base/statistics.h"
#include "harness/report/table_cells.h"

namespace balerbench::report {
namespace {

using nlohmann::json;

const json* meter_updates_section(const TrialRecord& r) {
  if (!r.result.is_object() || !r.result.contains("meter_updates")) return nullptr;
  const json& m = r.result["meter_updates"];
  return m.is_object() ? &m : nullptr;
}

std::string fixed(double v, int digits) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

}  // namespace

std::optional<double> meter_updates_of(const TrialRecord& r, const char* figure) {
  const json* m = meter_updates_section(r);
  if (!m || !m->contains(figure) || !(*m)[figure].is_number()) return std::nullopt;
  return (*m)[figure].get<double>();
}

std::optional<double> min_meter_updates_of(const TrialRecord& r) {
  const json* m = meter_updates_section(r);
  if (!m || !m->contains("min") || !(*m)["min"].is_number()) return std::nullopt;
  return (*m)["min"].get<double>();
}

bool short_window(const TrialRecord& r, const char* figure) {
  const auto n = meter_updates_of(r, figure);
  const auto min = min_meter_updates_of(r);
  return n && min && *n < *min;
}

json updates_cell(const Group& g, const char* figure) {
  std::optional<double> fewest;
  for (const auto* t : g.ok)
    if (const auto n = meter_updates_of(*t, figure)) fewest = std::min(fewest.value_or(*n), *n);
  return fewest ? num(*fewest) : json(nullptr);
}

json window_cell(const Group& g, const char* figure) {
  int64_t recorded = 0, short_ones = 0;
  std::optional<double> min;
  for (const auto* t : g.ok) {
    if (!meter_updates_of(*t, figure)) continue;
    ++recorded;
    if (short_window(*t, figure)) {
      ++short_ones;
      min = min_meter_updates_of(*t);
    }
  }
  if (!recorded) return "-";
  if (!short_ones) return "ok";
  return "short (" + std::to_string(short_ones) + " of " + std::to_string(recorded) + " repeats < " +
         fixed(min.value_or(0), 0) + " updates)";
}

bool any_short_window(const std::vector<Group>& groups, const char* figure) {
  for (const auto& g : groups)
    for (const auto* t : g.ok)
      if (short_window(*t, figure)) return true;
  return false;
}

void short_window_note(Table& t, const std::vector<Group>& groups, const char* figure, const std::string& what) {
  std::vector<int64_t> ids;
  std::optional<double> min;
  std::string meter;
  for (const auto& g : groups)
    for (const auto* r : g.ok)
      if (short_window(*r, figure)) {
        ids.push_back(r->id);
        min = min_meter_updates_of(*r);
        if (const json* m = meter_updates_section(*r); m && m->contains("meter") && (*m)["meter"].is_string())
          meter = (*m)["meter"].get<std::string>();
      }
  if (ids.empty()) return;
  std::sort(ids.begin(), ids.end());
  std::string list;
  for (std::size_t i = 0; i < ids.size(); ++i) list += (i ? ", " : "") + std::to_string(ids[i]);
  t.notes.push_back(
      "Short windows: " + what + " of " + std::to_string(ids.size()) + " trial(s) (id" + (ids.size() == 1 ? " " : "s ") +
      list + ") held fewer than " + fixed(min.value_or(0), 0) + " updates of " + (meter.empty() ? "its meter" : meter) +
      " (MLPerf Power asks for at least 60 samples; energy.min_meter_updates sets the threshold): the figure rests on "
      "a few counter steps and its edges. Lengthen the window: a stricter target or more rows for ETA, more epochs or "
      "rows for training energy, codec_min_window_s for compress and decompress (docs/energy.md).");
}

std::vector<Outlier> outliers_of(const Group& g, TrialFigure figure) {
  std::vector<const TrialRecord*> trials;
  std::vector<double> values;
  for (const auto* t : g.ok)
    if (const auto v = figure(*t)) {
      trials.push_back(t);
      values.push_back(*v);
    }
  std::vector<Outlier> out;
  const std::vector<double> scores = mad_scores(values);
  for (std::size_t i = 0; i < scores.size(); ++i)
    if (scores[i] > kMadOutlierThreshold) out.push_back({trials[i], scores[i]});
  return out;
}

void outlier_notes(Table& t, const std::vector<Group>& groups, TrialFigure figure, const std::string& what) {
  bool any = false;
  for (const auto& g : groups)
    for (const Outlier& o : outliers_of(g, figure)) {
      any = true;
      t.notes.push_back("trial " + std::to_string(o.trial->id) + " (" + g.label() + ", repeat " +
                        std::to_string(o.trial->repeat) + ") is an outlier in " + what + ": |x - median| / MAD = " +
                        fixed(o.score, 1) + ".");
    }
  if (any)
    t.notes.push_back("Outliers by hyperfine's rule: |x - median| / MAD above " + fixed(kMadOutlierThreshold, 2) +
                      " (ten standard deviations of a normal sample; MAD = the median absolute deviation). They stay in "
                      "the mean and interval; the median and MAD columns resist them. Look for what disturbed them "
                      "(the trials table) before trusting a close verdict.");
}

}  // namespace balerbench::report
