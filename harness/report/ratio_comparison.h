// ratio_comparison.h: one configuration's figure (training time, energy, TTA, ETA) against a
// reference configuration's: the ratio of the means, its 95% interval from the repeats (Welch's t on
// the logarithms, widened to the meters' relative +- of both sides) and a verdict in words.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "harness/base/statistics.h"
#include "harness/report/trial_groups.h"
#include "harness/store/store.h"

namespace balerbench::report {

// One figure of each trial (training time, energy, ...), and the key of its measurement +- in
// result.energy_uncertainty (nullptr: none).
struct Figure {
  std::optional<double> (*get)(const TrialRecord&);
  const char* pm_key;
  const char *less, *more;  // the verdict's words when the interval lies below / above 1
};
extern const Figure kTrainTime, kTrainEnergy;
extern const Figure kTta, kEta;  // to the target: only the repeats that reached it

// "faster", "slower", "not resolved at n=3; ~12 repeats would resolve it", "n=1: no interval", ...
// With `min_effect` > 0, an interval inside 1 +- min_effect reads "no meaningful difference (within
// +-P%)", resolved or not (pyperf's compare_to --min-speed).
std::string verdict(const RatioInterval& r, const Figure& f, double min_effect = 0);

// Each part null where it cannot be given (no value on a side, an interval not valid).
struct Comparison {
  nlohmann::json ratio = nullptr, low = nullptr, high = nullptr, verdict = nullptr;
};
Comparison compare(const Group& g, const Group& ref, const Figure& f, double min_effect = 0);

// The note under a table whose verdicts used `min_effect` (empty when it is 0).
std::string min_effect_note(double min_effect);

}  // namespace balerbench::report
