// progress.h: per-epoch console output. On a terminal, a progress bar that
// redraws at most every 100 ms; otherwise (logs, CI) one plain line per epoch.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
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
};

class Progress {
 public:
  enum class Mode { kBar, kLines, kNone };
  // "auto" picks kBar when `stream` is a terminal, else kLines.
  Progress(const std::string& mode, std::FILE* stream = stdout);
  void batch(int64_t epoch, int64_t epochs, int64_t batch, int64_t batches);
  void epoch(const EpochLine& line);
  Mode mode() const { return mode_; }

 private:
  Mode mode_;
  std::FILE* out_;
  std::chrono::steady_clock::time_point last_draw_{};
};

std::string format_epoch_line(const EpochLine& line);

}  // namespace balerbench
