// wattmeter_log.cpp: see wattmeter_log.h.
#include "harness/energy/wattmeter_log.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.h"

namespace balerbench {
namespace {

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, ',')) out.push_back(cell);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

bool to_double(const std::string& s, double& out) {
  if (s.empty()) return false;
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return end && *end == '\0' && std::isfinite(out);
}

// A power reading is a number of watts in [0, kMaxWattmeterPowerW]: negative, non-finite or absurd
// readings (a sign error, a counter read as watts) are counted as malformed, never integrated.
bool valid_power(double w) { return w >= 0 && w <= kMaxWattmeterPowerW; }

double lerp_power(const PowerSample& a, const PowerSample& b, double t) {
  if (b.time_s <= a.time_s) return a.power_w;
  return a.power_w + (b.power_w - a.power_w) * (t - a.time_s) / (b.time_s - a.time_s);
}

}  // namespace

nlohmann::json WattmeterEnergy::to_json() const {
  return {{"energy_j", energy_j}, {"duration_s", duration_s}, {"mean_power_w", mean_power_w},
          {"peak_power_w", peak_power_w}, {"samples", samples}, {"gap_s", gap_s}};
}

WattmeterLog::WattmeterLog(std::string format, int socket, double clock_offset_s, std::string source)
    : format_(std::move(format)), socket_(socket), offset_s_(clock_offset_s), source_(std::move(source)) {
  if (format_ != "auto" && format_ != "omegawatt" && format_ != "csv")
    throw InputError("unknown wattmeter log format '" + format_ + "'", "auto, omegawatt or csv");
}

WattmeterLog WattmeterLog::load(const std::string& path, const std::string& format, int socket, double offset_s) {
  if (std::error_code ec; std::filesystem::is_directory(path, ec))
    throw InputError(path + ": is a folder (wattmeter log expected)", "check the path");
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot open the wattmeter log", "check the path");
  std::stringstream ss;
  ss << in.rdbuf();
  WattmeterLog log(format, socket, offset_s, path);
  log.append(ss.str());
  log.finish();
  if (log.samples_.size() < 2)
    throw InputError(path + ": fewer than two valid samples (" + std::to_string(log.stats_.lines) + " data lines, " +
                         std::to_string(log.stats_.bad_frames) + " bad frames, " +
                         std::to_string(log.stats_.malformed) + " malformed)",
                     "is it an OmegaWatt log or a timestamp_s,power_w CSV? pick with --format");
  return log;
}

void WattmeterLog::append(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    parse_line(line);
  }
}

void WattmeterLog::parse_line(const std::string& line) {
  if (line[0] == '#') {  // the OmegaWatt header
    if (format_ == "auto") format_ = "omegawatt";
    return;
  }
  const std::vector<std::string> cells = split_csv(line);
  double t = 0;
  if (cells.empty() || !to_double(cells[0], t)) {
    if (stats_.lines == 0 && stats_.malformed == 0 && format_ != "omegawatt") {  // a CSV header
      if (format_ == "auto") format_ = "csv";
      return;
    }
    ++stats_.lines;
    ++stats_.malformed;
    return;
  }
  ++stats_.lines;
  if (format_ == "auto") format_ = cells.size() >= 2 && (cells[1] == "true" || cells[1] == "false") ? "omegawatt" : "csv";
  double p = 0;
  if (format_ == "csv") {
    if (cells.size() != 2 || !to_double(cells[1], p) || !valid_power(p)) {
      ++stats_.malformed;
      return;
    }
  } else {
    if (cells.size() < 2 || (cells[1] != "true" && cells[1] != "false")) {
      ++stats_.malformed;
      return;
    }
    if (cells[1] == "false") {
      ++stats_.bad_frames;
      return;
    }
    const std::size_t sockets = cells.size() >= 7 ? (cells.size() - 5) / 2 : 0;
    if (sockets == 0 || (socket_ > 0 && static_cast<std::size_t>(socket_) > sockets)) {
      ++stats_.malformed;
      return;
    }
    for (std::size_t n = 1; n <= sockets; ++n) {
      if (socket_ > 0 && n != static_cast<std::size_t>(socket_)) continue;
      double w = 0;
      if (!to_double(cells[4 + 2 * n], w) || !valid_power(w)) {
        ++stats_.malformed;
        return;
      }
      p += w;
    }
  }
  const PowerSample s{t + offset_s_, p};
  if (!samples_.empty() && s.time_s < samples_.back().time_s) {
    ++stats_.out_of_order;
    sorted_ = false;
  }
  samples_.push_back(s);
}

void WattmeterLog::finish() {
  if (!sorted_) {
    std::stable_sort(samples_.begin(), samples_.end(),
                     [](const PowerSample& a, const PowerSample& b) { return a.time_s < b.time_s; });
    sorted_ = true;
  }
  // The median of the last 1000 intervals: cheap enough to redo on every live read.
  std::vector<double> gaps;
  for (std::size_t i = samples_.size() > 1000 ? samples_.size() - 1000 : 1; i < samples_.size(); ++i)
    gaps.push_back(samples_[i].time_s - samples_[i - 1].time_s);
  if (gaps.empty()) return;
  std::nth_element(gaps.begin(), gaps.begin() + gaps.size() / 2, gaps.end());
  median_interval_s_ = gaps[gaps.size() / 2];
}

double WattmeterLog::integrate(double t0, double t1) const {
  // Trapezoids over the samples inside [t0, t1], plus the partial ones at both edges.
  const auto& s = samples_;
  auto it = std::upper_bound(s.begin(), s.end(), t0, [](double t, const PowerSample& x) { return t < x.time_s; });
  std::size_t i = static_cast<std::size_t>(it - s.begin());  // first sample after t0
  if (i == 0 || i >= s.size()) return 0;
  double e = 0, t_prev = t0, p_prev = lerp_power(s[i - 1], s[i], t0);
  for (; i < s.size() && s[i].time_s < t1; ++i) {
    e += 0.5 * (p_prev + s[i].power_w) * (s[i].time_s - t_prev);
    t_prev = s[i].time_s;
    p_prev = s[i].power_w;
  }
  if (i < s.size()) e += 0.5 * (p_prev + lerp_power(s[i - 1], s[i], t1)) * (t1 - t_prev);
  return e;
}

WattmeterEnergy WattmeterLog::energy(double t0, double t1) const {
  if (!(t1 > t0)) throw InputError("the window's end must come after its start", "check --start and --end");
  if (samples_.size() < 2 || t0 < samples_.front().time_s || t1 > samples_.back().time_s) {
    std::ostringstream msg;
    msg.precision(15);
    msg << source_ << ": the window [" << t0 << ", " << t1 << "] s is not inside the logged span";
    if (!samples_.empty()) msg << " [" << samples_.front().time_s << ", " << samples_.back().time_s << "] s";
    throw InputError(msg.str(), "check the window, or the clock offset between this host and the meter");
  }
  WattmeterEnergy r;
  r.energy_j = integrate(t0, t1);
  r.duration_s = t1 - t0;
  r.mean_power_w = r.energy_j / r.duration_s;
  const double gap_threshold_s = 10 * median_interval_s_;
  for (std::size_t i = 0; i < samples_.size(); ++i) {
    const PowerSample& x = samples_[i];
    if (x.time_s >= t0 && x.time_s <= t1) {
      ++r.samples;
      r.peak_power_w = std::max(r.peak_power_w, x.power_w);
    }
    if (i > 0 && x.time_s - samples_[i - 1].time_s > gap_threshold_s) {
      const double a = std::max(samples_[i - 1].time_s, t0), b = std::min(x.time_s, t1);
      if (b > a) r.gap_s += b - a;
    }
  }
  return r;
}

double WattmeterLog::energy_clamped_j(double t0, double t1) const {
  if (samples_.size() < 2) return 0;
  const double a = std::max(t0, samples_.front().time_s);
  const double b = std::min(t1, samples_.back().time_s);
  return b > a ? integrate(a, b) : 0;
}

}  // namespace balerbench
