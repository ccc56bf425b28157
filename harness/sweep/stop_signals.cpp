// stop_signals.cpp: see stop_signals.h.
#include "harness/sweep/stop_signals.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>

#include "common/paths.h"

namespace balerbench {
namespace {

sigset_t stop_set() {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGINT);
  sigaddset(&s, SIGTERM);
  sigaddset(&s, SIGHUP);  // a closed terminal or ssh session: as SIGTERM, never a claim or a child left behind
  return s;
}

}  // namespace

StopSignals::StopSignals(std::function<void(int)> on_signal) : on_signal_(std::move(on_signal)) {
  const sigset_t s = stop_set();
  pthread_sigmask(SIG_BLOCK, &s, nullptr);
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGPIPE, &ignore, nullptr);
  thread_ = std::thread([this] { loop(); });
}

StopSignals::~StopSignals() {
  quit_ = true;
  thread_.join();
  // Signals still pending stay blocked: the sweep is over and exits with its own code.
}

void StopSignals::loop() {
  const sigset_t s = stop_set();
  const timespec tick{0, 100 * 1000 * 1000};
  while (!quit_) {
    int sig = sigtimedwait(&s, nullptr, &tick);
    if (sig <= 0 && signal_.load() == 0 && output_reader_gone(STDOUT_FILENO)) sig = SIGPIPE;  // said once: never a "second"
    if (sig <= 0) continue;  // timeout or EINTR
    const bool second = signal_.exchange(sig) != 0;
    if (on_signal_) on_signal_(sig);
    if (second) _exit(128 + sig);
  }
}

}  // namespace balerbench
