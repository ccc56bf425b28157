// progress.h: console progress of long commands (train, and each trial of a
// sweep). On a terminal, one status line redrawn at most every 100 ms:
//
//   trial 2/6  epoch 3/10 [#########.....................] 120/400  loss 1.23e-03  41.3 W  ~1m20s left
//
// otherwise (logs, CI) plain lines: one per epoch, at most one per
// `line_interval_s` (the first and last epochs, and epochs where the learning
// rate dropped, always), plus a line every 30 s inside an epoch that long.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

namespace balerbench {

struct EpochLine {
  int64_t epoch = 0;  // 1-based
  int64_t epochs = 0;
  double train_loss = 0;
  double val_loss = 0;
  bool has_val = false;
  double lr = 0;
  int64_t es_counter = 0;
  int64_t es_patience = 0;
  bool lr_reduced = false;
  double duration_s = 0;
  double samples_per_s = 0;
  bool final = false;  // the last epoch this run will do (the last one, or early stopping)
};

// Where the command stands beyond its epochs; all optional.
struct ProgressContext {
  int64_t run_ordinal = 0;  // 1-based place among the trials this run executes; "trial i/N" when run_count > 1
  int64_t run_count = 0;
  int64_t trials_after = 0;      // trials still to run after this one (remaining-time estimate)
  std::function<double()> power_w;  // live power in W (NaN: unknown)
  double line_interval_s = 1.0;     // plain lines: at most one epoch line per interval; 0 = every epoch
};

class Progress {
 public:
  enum class Mode { kBar, kLines, kNone };
  // "auto" picks kBar when `stream` is a terminal, else kLines.
  Progress(const std::string& mode, ProgressContext context = {}, std::FILE* stream = stdout);
  void batch(int64_t epoch, int64_t epochs, int64_t batch, int64_t batches);
  void epoch(const EpochLine& line);
  Mode mode() const { return mode_; }

 private:
  double remaining_s(int64_t epoch, int64_t epochs, double epoch_fraction) const;
  std::string status_suffix(double remaining_s) const;  // "  41.3 W  ~1m20s left"
  Mode mode_;
  ProgressContext ctx_;
  std::FILE* out_;
  std::chrono::steady_clock::time_point started_, last_draw_{}, last_line_{};
  bool any_line_ = false;
  double last_train_loss_ = -1;
};

std::string format_epoch_line(const EpochLine& line);
// "45 s", "3m05s", "2h04m".
std::string format_duration(double seconds);

}  // namespace balerbench
