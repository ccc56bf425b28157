// progress.cpp: see progress.h.
#include "harness/monitor/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "harness/base/clock.h"

namespace balerbench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr double kInEpochLineS = 30;  // plain lines inside a long epoch

}  // namespace

std::string format_duration(double s) {
  char buf[32];
  if (!std::isfinite(s) || s < 0) return "?";
  const auto t = static_cast<long long>(std::llround(s));
  if (t < 60) std::snprintf(buf, sizeof buf, "%lld s", t);
  else if (t < 3600) std::snprintf(buf, sizeof buf, "%lldm%02llds", t / 60, t % 60);
  else std::snprintf(buf, sizeof buf, "%lldh%02lldm", t / 3600, (t % 3600) / 60);
  return buf;
}

Progress::Progress(const std::string& mode, ProgressContext context, std::FILE* stream)
    : ctx_(std::move(context)), out_(stream), started_(Clock::now()) {
  if (mode == "none") mode_ = Mode::kNone;
  else if (mode == "bar") mode_ = Mode::kBar;
  else if (mode == "lines") mode_ = Mode::kLines;
  else mode_ = ::isatty(::fileno(stream)) ? Mode::kBar : Mode::kLines;
  last_line_ = started_;
}

namespace {

// "trial i/N"; "trial i" when the count is open-ended (run_count -1: a tuner's attempts, as many as it
// takes); "" for a single trial.
std::string trial_tag(const ProgressContext& c) {
  if (c.run_count < 0) return "trial " + std::to_string(c.run_ordinal);
  if (c.run_count > 1) return "trial " + std::to_string(c.run_ordinal) + "/" + std::to_string(c.run_count);
  return "";
}

}  // namespace

// This trial's rest at its mean pace so far, plus the trials after it at this trial's projected length.
double Progress::remaining_s(int64_t epoch, int64_t epochs, double epoch_fraction) const {
  const double done = static_cast<double>(epoch - 1) + epoch_fraction;  // epochs' worth completed
  if (done <= 0) return NAN;
  const double elapsed = seconds_between(started_, Clock::now());
  const double per_epoch = elapsed / done;
  const double rest = per_epoch * (static_cast<double>(epochs) - done);
  return rest + static_cast<double>(ctx_.trials_after) * per_epoch * static_cast<double>(epochs);
}

std::string Progress::status_suffix(double remaining) const {
  std::string s;
  char buf[64];
  if (ctx_.power_w) {
    const double w = ctx_.power_w();
    if (std::isfinite(w)) {
      std::snprintf(buf, sizeof buf, "  %.1f W", w);
      s += buf;
    }
  }
  if (std::isfinite(remaining)) s += "  ~" + format_duration(remaining) + " left";
  return s;
}

void Progress::batch(int64_t epoch, int64_t epochs, int64_t batch, int64_t batches) {
  if (mode_ == Mode::kNone) return;
  const auto now = Clock::now();
  const double fraction = static_cast<double>(batch + 1) / static_cast<double>(std::max<int64_t>(batches, 1));
  const std::string tag = trial_tag(ctx_);
  const std::string trial = tag.empty() ? "" : tag + "  ";
  if (mode_ == Mode::kLines) {
    // Only epochs long enough to leave a log silent for a while get lines inside them.
    if (seconds_between(last_line_, now) < kInEpochLineS) return;
    last_line_ = now;
    std::fprintf(out_, "%sepoch %lld/%lld: batch %lld/%lld (%.0f %%)%s\n", trial.c_str(),
                 static_cast<long long>(epoch), static_cast<long long>(epochs), static_cast<long long>(batch + 1),
                 static_cast<long long>(batches), 100 * fraction,
                 status_suffix(remaining_s(epoch, epochs, fraction)).c_str());
    std::fflush(out_);
    return;
  }
  if (batch + 1 < batches && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(kWidth * fraction);
  std::string bar(static_cast<std::size_t>(filled), '#');
  bar.append(static_cast<std::size_t>(kWidth - filled), '.');
  char loss[48] = "";
  if (last_train_loss_ >= 0) std::snprintf(loss, sizeof loss, "  loss %.3e", last_train_loss_);
  std::fprintf(out_, "\r\033[K%sepoch %lld/%lld [%s] %lld/%lld%s%s", trial.c_str(), static_cast<long long>(epoch),
               static_cast<long long>(epochs), bar.c_str(), static_cast<long long>(batch + 1),
               static_cast<long long>(batches), loss, status_suffix(remaining_s(epoch, epochs, fraction)).c_str());
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
  last_train_loss_ = line.train_loss;
  if (mode_ == Mode::kNone) return;
  const auto now = Clock::now();
  const bool last = line.final || line.epoch >= line.epochs;
  if (mode_ == Mode::kLines && any_line_ && !last && !line.lr_reduced &&
      seconds_between(last_line_, now) < ctx_.line_interval_s)
    return;
  any_line_ = true;
  last_line_ = now;
  const std::string tag = trial_tag(ctx_);
  const std::string trial = tag.empty() ? "" : "[" + tag + "] ";
  if (mode_ == Mode::kBar) std::fprintf(out_, "\r\033[K");
  std::fprintf(out_, "%s%s%s\n", trial.c_str(), format_epoch_line(line).c_str(),
               status_suffix(last ? NAN : remaining_s(line.epoch, line.epochs, 1.0)).c_str());
  std::fflush(out_);
}

}  // namespace balerbench
