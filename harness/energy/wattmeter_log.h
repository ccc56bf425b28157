// wattmeter_log.h: wall power logged by an external meter, and the energy of
// any time window from it.
//
// Formats:
//   omegawatt: the OmegaWatt reader's high-frequency CSV (docs/reference_tables.md T6)
//       #timestamp,#frame_is_ok,#U1,#U2,#U3,#current1,#activepow1,#current2,#activepow2,...
//     Frames whose frame_is_ok is `false` carry no values and are skipped; the
//     power is socket N's active power, or the sum over sockets.
//   csv: `timestamp_s,power_w` (a header line is optional).
// Timestamps are Unix seconds; `clock_offset_s` is added to each so they read
// in this host's clock. Out-of-order lines are sorted, malformed lines and bad
// frames are counted and skipped (a power reading that is negative, not finite or above
// kMaxWattmeterPowerW is malformed), and gaps (an interval over 10x the median)
// are reported. Energy over [t0, t1] integrates the samples with the
// trapezoid rule, interpolating linearly at the window's edges.
#pragma once

#include <nlohmann/json.hpp>

#include <istream>
#include <string>
#include <vector>

namespace balerbench {

// The highest power a wall reading may give: 100 kW, above any node or rack outlet a wattmeter logs.
inline constexpr double kMaxWattmeterPowerW = 100e3;

struct PowerSample {
  double time_s = 0;  // Unix seconds, offset applied
  double power_w = 0;
};

struct WattmeterStats {
  long long lines = 0;          // data lines read (headers and blanks excluded)
  long long bad_frames = 0;     // OmegaWatt frames marked false
  long long malformed = 0;      // lines that could not be parsed, or whose power is out of range
  long long out_of_order = 0;   // lines earlier than the line before them
};

struct WattmeterEnergy {
  double energy_j = 0;
  double duration_s = 0;
  double mean_power_w = 0;
  double peak_power_w = 0;
  long long samples = 0;   // samples inside the window
  double gap_s = 0;        // time inside the window covered by gaps
  nlohmann::json to_json() const;
};

class WattmeterLog {
 public:
  // `format`: auto | omegawatt | csv. `socket`: 1-based OmegaWatt socket, -1 = all.
  WattmeterLog(std::string format, int socket, double clock_offset_s, std::string source);

  static WattmeterLog load(const std::string& path, const std::string& format, int socket, double clock_offset_s);
  // Parses complete lines of `text` (more can be appended later).
  void append(const std::string& text);
  void finish();  // sorts and indexes; called by load(), and before every query

  // Throws InputError when [t0, t1] is not inside the logged span.
  WattmeterEnergy energy(double t0_s, double t1_s) const;
  // Energy from t0 up to the last sample at or before t1, clamping to the span (live use).
  double energy_clamped_j(double t0_s, double t1_s) const;

  const std::vector<PowerSample>& samples() const { return samples_; }
  const WattmeterStats& stats() const { return stats_; }
  const std::string& format() const { return format_; }
  double median_interval_s() const { return median_interval_s_; }
  std::string source() const { return source_; }

 private:
  void parse_line(const std::string& line);
  double integrate(double t0, double t1) const;
  std::string format_;
  int socket_;
  double offset_s_;
  std::string source_;
  std::vector<PowerSample> samples_;
  WattmeterStats stats_;
  double median_interval_s_ = 0;
  bool sorted_ = true;
};

}  // namespace balerbench
