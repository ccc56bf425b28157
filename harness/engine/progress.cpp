// progress.cpp: see progress.h.
#include "harness/engine/progress.h"

#include <unistd.h>

#include <algorithm>

#include <cstdio>

namespace balerbench {

Progress::Progress(const std::string& mode, std::FILE* stream) : out_(stream) {
  if (mode == "none") mode_ = Mode::kNone;
  else if (mode == "bar") mode_ = Mode::kBar;
  else if (mode == "lines") mode_ = Mode::kLines;
  else mode_ = ::isatty(::fileno(stream)) ? Mode::kBar : Mode::kLines;
}

void Progress::batch(int64_t epoch, int64_t epochs, int64_t batch, int64_t batches) {
  if (mode_ != Mode::kBar) return;
  const auto now = std::chrono::steady_clock::now();
  if (batch + 1 < batches && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(kWidth * (batch + 1) / std::max<int64_t>(batches, 1));
  std::string bar(static_cast<std::size_t>(filled), '#');
  bar.append(static_cast<std::size_t>(kWidth - filled), '.');
  std::fprintf(out_, "\rEpoch %lld/%lld [%s] %lld/%lld batches", static_cast<long long>(epoch),
               static_cast<long long>(epochs), bar.c_str(), static_cast<long long>(batch + 1),
               static_cast<long long>(batches));
  std::fflush(out_);
}

std::string format_epoch_line(const EpochLine& l) {
  char buf[320];
  int n = std::snprintf(buf, sizeof buf, "Epoch %lld/%lld  train_loss %.6e", static_cast<long long>(l.epoch),
                        static_cast<long long>(l.epochs), l.train_loss);
  if (l.has_val) n += std::snprintf(buf + n, sizeof buf - n, "  val_loss %.6e", l.val_loss);
  n += std::snprintf(buf + n, sizeof buf - n, "  lr %.3g  early_stop %lld/%lld  %.3f s  %.0f rows/s", l.lr,
                     static_cast<long long>(l.es_counter), static_cast<long long>(l.es_patience), l.duration_s,
                     l.samples_per_s);
  std::string s(buf);
  if (l.lr_reduced) s += "  (learning rate reduced)";
  return s;
}

void Progress::epoch(const EpochLine& line) {
  if (mode_ == Mode::kNone) return;
  if (mode_ == Mode::kBar) std::fprintf(out_, "\r\033[K");
  std::fprintf(out_, "%s\n", format_epoch_line(line).c_str());
  std::fflush(out_);
}

}  // namespace balerbench
