// statistics.cpp: see statistics.h.
#include "harness/base/statistics.h"

#include <algorithm>
#include <cmath>

#include <boost/math/distributions/students_t.hpp>

namespace balerbench {

double student_t95(std::size_t dof) {
  static const double kTable[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                  2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                                  2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (dof == 0) return 0;
  if (dof <= 30) return kTable[dof - 1];
  if (dof <= 60) return 2.042 - 0.042 * (static_cast<double>(dof) - 30) / 30;   // to 2.000 at 60
  if (dof <= 120) return 2.000 - 0.020 * (static_cast<double>(dof) - 60) / 60;  // to 1.980 at 120
  return 1.960;
}

Summary summarize(std::vector<double> v) {
  Summary s;
  s.n = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.max = v.back();
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(s.n);
  s.median = s.n % 2 ? v[s.n / 2] : 0.5 * (v[s.n / 2 - 1] + v[s.n / 2]);
  s.mad = median_absolute_deviation(v);
  if (s.n > 1) {
    double ss = 0;
    for (double x : v) ss += (x - s.mean) * (x - s.mean);
    s.stddev = std::sqrt(ss / static_cast<double>(s.n - 1));
    s.ci95_half_width = student_t95(s.n - 1) * s.stddev / std::sqrt(static_cast<double>(s.n));
  }
  return s;
}

namespace {

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

double median_absolute_deviation(std::vector<double> values) {
  const double m = median_of(values);
  for (double& x : values) x = std::fabs(x - m);
  return median_of(std::move(values));
}

std::vector<double> mad_scores(const std::vector<double>& values) {
  const double m = median_of(values);
  const double mad = median_absolute_deviation(values);
  std::vector<double> scores;
  for (double x : values) scores.push_back(mad > 0 ? std::fabs(x - m) / mad : std::nan(""));
  return scores;
}

std::vector<std::size_t> mad_outliers(const std::vector<double>& values, double threshold) {
  std::vector<std::size_t> out;
  const std::vector<double> scores = mad_scores(values);
  for (std::size_t i = 0; i < scores.size(); ++i)
    if (scores[i] > threshold) out.push_back(i);
  return out;
}

OneSidedTest one_sided_welch_greater(const std::vector<double>& a, const std::vector<double>& b) {
  OneSidedTest r;
  r.n_a = a.size();
  r.n_b = b.size();
  if (a.size() < 2 || b.size() < 2) return r;
  const Summary sa = summarize(a), sb = summarize(b);
  r.mean_a = sa.mean;
  r.mean_b = sb.mean;
  const double va = sa.stddev * sa.stddev / static_cast<double>(sa.n);
  const double vb = sb.stddev * sb.stddev / static_cast<double>(sb.n);
  r.valid = true;
  if (!(va + vb > 0)) {  // no spread on either side: the difference of the means is the whole story
    r.exact = true;
    r.p = sa.mean > sb.mean ? 0.0 : 1.0;
    return r;
  }
  const double se = std::sqrt(va + vb);
  r.t = (sa.mean - sb.mean) / se;
  r.dof = (va + vb) * (va + vb) /
          (va * va / static_cast<double>(sa.n - 1) + vb * vb / static_cast<double>(sb.n - 1));
  const boost::math::students_t dist(r.dof);
  r.p = boost::math::cdf(boost::math::complement(dist, r.t));
  return r;
}

double RatioInterval::ratio() const { return std::exp(mean_log); }
double RatioInterval::low() const { return std::exp(mean_log - half_width_log); }
double RatioInterval::high() const { return std::exp(mean_log + half_width_log); }

RatioInterval log_ratio_interval(const std::vector<double>& a, const std::vector<double>& b) {
  RatioInterval r;
  r.n_a = a.size();
  r.n_b = b.size();
  const auto logs = [](const std::vector<double>& v, std::vector<double>& out) {
    for (double x : v) {
      if (!(x > 0) || !std::isfinite(x)) return false;
      out.push_back(std::log(x));
    }
    return true;
  };
  std::vector<double> la, lb;
  if (!logs(a, la) || !logs(b, lb) || la.size() < 2 || lb.size() < 2) return r;
  const Summary sa = summarize(la), sb = summarize(lb);
  const double va = sa.stddev * sa.stddev / static_cast<double>(sa.n);  // variance of the mean
  const double vb = sb.stddev * sb.stddev / static_cast<double>(sb.n);
  r.mean_log = sa.mean - sb.mean;
  const double se2 = va + vb;
  if (se2 > 0) {
    r.dof = se2 * se2 / (va * va / static_cast<double>(sa.n - 1) + vb * vb / static_cast<double>(sb.n - 1));
  } else {
    r.dof = static_cast<double>(sa.n + sb.n - 2);  // no spread on either side
  }
  // Rounded down (a wider interval), with a tolerance for a dof that is an integer up to rounding.
  const auto dof = static_cast<std::size_t>(std::max(1.0, std::floor(r.dof + 1e-9)));
  r.stat_half_width_log = student_t95(dof) * std::sqrt(se2);
  r.half_width_log = r.stat_half_width_log;
  r.valid = true;
  return r;
}

void widen_to_relative(RatioInterval& r, double relative_pm) {
  if (!r.valid || !(relative_pm > 0)) return;
  r.half_width_log = std::max(r.half_width_log, std::log1p(relative_pm));
}

std::size_t repeats_to_resolve(const RatioInterval& r) {
  if (!r.valid || r.mean_log == 0) return 0;
  const double n = static_cast<double>(std::min(r.n_a, r.n_b));
  const double scale = r.stat_half_width_log / std::abs(r.mean_log);
  const double needed = std::ceil(n * scale * scale * 1.2);
  if (!std::isfinite(needed) || needed > 1e9) return static_cast<std::size_t>(1e9);
  return static_cast<std::size_t>(std::max(needed, n + 1));
}

}  // namespace balerbench
