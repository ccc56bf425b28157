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
// column, a line with too few or too many fields, a quoted field, a value that is not a number
// (NaN and infinity included, except the train trace's `target_epoch`), a batch size, power limit,
// time or power that is not positive, a fractional batch size or epoch, two lines for the same
// configuration. Columns beyond the required ones are ignored (`learning_rate` is kept when
// present). Blank lines and a trailing carriage return per line are allowed.
#pragma once

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

inline constexpr char kTrainTraceColumns[] =
    "dataset, network, batch_size, optimizer, run, target_metric, target_epoch (learning_rate optional)";
inline constexpr char kPowerTraceColumns[] =
    "dataset, network, batch_size, optimizer, power_limit, time_per_epoch, average_power";

}  // namespace balerbench
