// stop_signals.h: SIGINT, SIGTERM and SIGHUP during a sweep (SIGHUP, a closed terminal, is treated as
// SIGTERM), and a stdout whose reader has gone (`run ... | head`), treated as SIGTERM too.
//
// StopSignals blocks the three signals in the calling thread (create it before any
// other thread starts, so every thread inherits the mask) and waits for them
// on its own thread. The first signal sets stop_requested() and runs the
// `on_signal` callback at once on that thread (the sweep restores GPU power
// limits there, without waiting for the training loop to notice); the
// training loop checks the flag after every step and ends the trial. A second
// signal runs the callback again and exits with 128 + signal at once.
//
// SIGPIPE is ignored from the constructor on, for the rest of the process: it would kill the sweep
// with its GPUs at a trial's power limit and its claim held. The watching thread polls stdout instead:
// a pipe with no reader left (POLLERR) stops the sweep as a signal does, with SIGPIPE as its number
// (the callback and the flag see it; the sweep then exits 4, a write error: sweep.h), and any write to
// it fails with EPIPE, which main reports when the command ends.
#pragma once

#include <atomic>
#include <functional>
#include <thread>

#include "harness/trial/interrupted.h"  // what a trial throws when the flag is set

namespace balerbench {

class StopSignals {
 public:
  explicit StopSignals(std::function<void(int signal)> on_signal);
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  bool stop_requested() const { return signal_.load() != 0; }
  int signal() const { return signal_.load(); }
  const std::atomic<int>& flag() const { return signal_; }

 private:
  void loop();
  std::function<void(int)> on_signal_;
  std::atomic<int> signal_{0};
  std::atomic<bool> quit_{false};
  std::thread thread_;
};

}  // namespace balerbench
