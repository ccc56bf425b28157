// interrupted.h: what a trial throws when a stop signal has arrived (the sweep's StopSignals set the
// flag a trial reads: trial.h's TrialContext::stop); the sweep catches it and ends.
#pragma once

namespace balerbench {

struct Interrupted {
  int signal = 0;
};

}  // namespace balerbench
