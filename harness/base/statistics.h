// statistics.h: statistics over repeats for the reports: mean and Student-t interval; median, MAD
// and hyperfine's outlier rule; a one-sided Welch test; the ratio of two sets of repeats with its
// interval.
#pragma once

#include <cmath>
#include <cstddef>
#include <vector>

namespace balerbench {

struct Summary {
  std::size_t n = 0;
  double mean = 0, median = 0, stddev = 0, min = 0, max = 0;
  double mad = 0;  // median absolute deviation from the median (raw, not scaled to a normal's sd)
  double ci95_half_width = 0;  // Student t, two-sided 95%; 0 when n < 2
  double relative_spread() const { return mean != 0 ? (max - min) / mean : 0; }
};
Summary summarize(std::vector<double> values);

// The median absolute deviation of `values` from their median; 0 for none.
double median_absolute_deviation(std::vector<double> values);

// hyperfine's outlier rule (src/outlier_detection.rs): a value whose |x - median| / MAD exceeds
// `threshold` is an outlier. hyperfine's threshold, 1.4826 x 10, is ten standard deviations of a
// normal sample, MAD being 1/1.4826 of its sd. With a MAD of 0 (half the values equal) no value is
// flagged: the rule has no scale to judge by.
constexpr double kMadOutlierThreshold = 1.4826 * 10.0;
// |x - median| / MAD of each value (NaN where MAD is 0), in `values`' order.
std::vector<double> mad_scores(const std::vector<double>& values);
// The indices of the outliers of `values` by the rule above.
std::vector<std::size_t> mad_outliers(const std::vector<double>& values, double threshold = kMadOutlierThreshold);

// A one-sided Welch t test of "mean(a) > mean(b)" (e.g. AMP's epochs to target above FP32's):
// t = (mean a - mean b) / sqrt(var a / n_a + var b / n_b) with Welch-Satterthwaite degrees of
// freedom, and p = P(T >= t) from Student's t (Boost.Math). Both sides without spread make no t:
// p is then 0 when a's mean is above b's, else 1 (`exact` says so). Not valid with fewer than two
// values on a side.
struct OneSidedTest {
  bool valid = false, exact = false;
  std::size_t n_a = 0, n_b = 0;
  double mean_a = 0, mean_b = 0, t = 0, dof = 0, p = 1;
};
OneSidedTest one_sided_welch_greater(const std::vector<double>& a, const std::vector<double>& b);

// Two-sided 95% Student t quantile for `dof` degrees of freedom (dof >= 1).
double student_t95(std::size_t dof);

// The ratio of two sets of repeats (a over b, e.g. a precision mode's training times over FP32's)
// with a 95% interval: Welch's t on the logarithms (mean of logs per side, variance / n per side,
// Welch-Satterthwaite degrees of freedom rounded down, which widens the interval a little). The
// interval is around the ratio of geometric means, exp(mean_log).
struct RatioInterval {
  bool valid = false;       // both sides have >= 2 values, all > 0
  std::size_t n_a = 0, n_b = 0;
  double mean_log = 0;      // mean(log a) - mean(log b)
  double half_width_log = 0;  // the interval in log space: mean_log +- half_width_log
  double stat_half_width_log = 0;  // from the repeats alone (before any floor)
  double dof = 0;           // Welch-Satterthwaite (before rounding)
  double ratio() const;     // exp(mean_log)
  double low() const;       // exp(mean_log - half_width_log)
  double high() const;      // exp(mean_log + half_width_log)
  bool resolved() const { return valid && half_width_log < std::abs(mean_log); }  // the interval excludes 1
};
RatioInterval log_ratio_interval(const std::vector<double>& a, const std::vector<double>& b);

// Widens `r` to at least `relative_pm` either side (e.g. the meters' relative +-, a's plus b's),
// as log1p(relative_pm) in log space: a difference inside the meters' resolution is not resolved
// however many repeats there are.
void widen_to_relative(RatioInterval& r, double relative_pm);

// Repeats per side that would likely resolve an unresolved difference: the repeats' half-width
// scales as 1/sqrt(n), so n * (half_width / |mean_log|)^2, times 1.2 for the t quantile and the
// noise in the estimate. 0 when the observed difference is 0 or the interval is not valid.
std::size_t repeats_to_resolve(const RatioInterval& r);

}  // namespace balerbench
