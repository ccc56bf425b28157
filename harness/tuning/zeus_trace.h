// zeus_trace.h: the traces Zeus published with its NSDI'23 paper (README.md beside them describes
// the columns), read strictly.
//
//  - The train trace (summary_train.csv): for each (dataset, network, optimizer, batch size) and
//    each training run (`run`, one seed each), the epoch at which each target metric was first
//    reached. `target_epoch` is `nan` (or empty) when the run never reached it.
//  - A power trace (summary_power_<gpu>.csv): for each (dataset, network, optimizer, batch size) and
//    GPU power limit, the time per epoch and the average GPU power, measured once.
//
// A trace that cannot be used is an InputError naming the file, the line and what to do: a missing
// column, a line with too few or too many fields, a quoted field, a value that is not a decimal
// number (hexadecimal, NaN and infinity included, except the train trace's `target_epoch`), a batch
// size, power limit, time or power that is not positive or beyond what a trace can hold (below), a
// fractional batch size or epoch, two lines for the same configuration, text that is not UTF-8 (a
// UTF-16 file), a file or a line too long to be a trace. Columns beyond the required ones are
// ignored (`learning_rate` is kept when present). A UTF-8 byte-order mark, blank lines and a
// trailing carriage return per line are allowed. A value too small for a double (1e-320) reads as
// the nearest one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace balerbench {

struct TrainRow {
  std::string dataset, network, optimizer;
  int64_t batch_size = 0, run = 0;
  double target_metric = 0;
  std::optional<double> learning_rate;
  std::optional<int64_t> target_epoch;  // none: the run never reached the target
  int64_t line = 0;                     // 1-based line in its file
};

struct PowerRow {
  std::string dataset, network, optimizer;
  int64_t batch_size = 0;
  double power_limit_w = 0, time_per_epoch_s = 0, average_power_w = 0;
  int64_t line = 0;
  double energy_per_epoch_j() const { return time_per_epoch_s * average_power_w; }
};

struct TrainTrace {
  std::string file;
  std::vector<TrainRow> rows;
};

struct PowerTrace {
  std::string file;
  std::vector<PowerRow> rows;
};

// `text` is the file's content; `file` names it in errors.
TrainTrace parse_train_trace(const std::string& text, const std::string& file);
PowerTrace parse_power_trace(const std::string& text, const std::string& file);
// Reads and parses the file (InputError when it cannot be read).
TrainTrace read_train_trace(const std::string& path);
PowerTrace read_power_trace(const std::string& path);

// What a trace can hold. A power above kMaxTraceWatts (100 kW: no GPU, nor a node of them, draws it) or
// a time per epoch above kMaxTraceSeconds (about 116 days) is a typo or damage, refused as such: 1e300 W
// made a saving of -1e295%. A file above kMaxTraceBytes, or a line above kMaxTraceLineBytes, is not a
// trace (Zeus's are some 30 KB, in lines of under 100 bytes): refused before it fills the memory.
inline constexpr double kMaxTraceWatts = 1e5;
inline constexpr double kMaxTraceSeconds = 1e7;
inline constexpr std::uintmax_t kMaxTraceBytes = std::uintmax_t{64} << 20;
inline constexpr std::size_t kMaxTraceLineBytes = 64 << 10;

inline constexpr char kTrainTraceColumns[] =
    "dataset, network, batch_size, optimizer, run, target_metric, target_epoch (learning_rate optional)";
inline constexpr char kPowerTraceColumns[] =
    "dataset, network, batch_size, optimizer, power_limit, time_per_epoch, average_power";

}  // namespace balerbench
