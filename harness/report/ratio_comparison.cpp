// ratio_comparison.cpp: see ratio_comparison.h.
#include "harness/report/ratio_comparison.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "harness/report/table_cells.h"

namespace balerbench::report {
namespace {

// "2%", "0.5%".
std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g%%", 100 * fraction);
  return buf;
}

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

}  // namespace

const Figure kTrainTime = {[](const TrialRecord& r) { return r.train_s; }, nullptr, "faster", "slower"};
const Figure kTrainEnergy = {[](const TrialRecord& r) { return r.train_energy_j; }, "train_j", "less energy",
                             "more energy"};
const Figure kTta = {[](const TrialRecord& r) { return r.target_reached ? r.tta_s : std::nullopt; }, nullptr, "faster",
                     "slower"};
const Figure kEta = {[](const TrialRecord& r) { return r.target_reached ? r.eta_j : std::nullopt; }, "eta_j",
                     "less energy", "more energy"};

std::string verdict(const RatioInterval& r, const Figure& f, double min_effect) {
  const std::size_t n = std::min(r.n_a, r.n_b);
  if (!r.valid) return n < 2 ? "n=" + std::to_string(n) + ": no interval" : "no interval (a value is not > 0)";
  if (min_effect > 0 && r.low() >= 1 - min_effect && r.high() <= 1 + min_effect)
    return "no meaningful difference (within +-" + percent(min_effect) + ")";
  if (r.resolved()) return r.mean_log < 0 ? f.less : f.more;
  const std::string head = "not resolved at n=" + std::to_string(n);
  if (r.mean_log == 0) return head + " (no difference observed)";
  if (r.stat_half_width_log < std::abs(r.mean_log))
    return head + "; within the meters' resolution (more repeats will not resolve it)";
  const std::size_t m = repeats_to_resolve(r);
  return head + (m > 100 ? "; > 100 repeats would be needed" : "; ~" + std::to_string(m) + " repeats would resolve it");
}

Comparison compare(const Group& g, const Group& ref, const Figure& f, double min_effect) {
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
  c.verdict = verdict(r, f, min_effect);
  return c;
}

std::string min_effect_note(double min_effect) {
  if (!(min_effect > 0)) return "";
  return "--min-effect " + percent(min_effect) + ": a ratio whose 95% interval lies inside 1 +- " + percent(min_effect) +
         " reads \"no meaningful difference\", even where the interval excludes 1 (a difference that small is "
         "taken not to matter; pyperf's compare_to --min-speed).";
}

}  // namespace balerbench::report
