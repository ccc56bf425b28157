// trial_claims.h: a sweep's claims on its trials in the results database (store.h's claims table),
// so that two runs into one database share the work instead of running a trial twice. Each trial
// is claimed before it runs; the stored trial takes its claim with it, and a trial that ends
// without being stored gives it back (ClaimRelease). A heartbeat keeps this run's claims live for
// runs on other machines.
#pragma once

#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "harness/base/processes.h"
#include "harness/store/store.h"

namespace balerbench {

// "pid 123 on host, since 12:34:56".
std::string describe_claim(const Claim& c);

// Refreshes this run's claims every kClaimHeartbeatS from a connection of its own, so that a run on
// another machine sees them live for as long as this one runs.
class ClaimHeartbeat {
 public:
  ClaimHeartbeat(std::string db_path, ClaimHolder me);
  ~ClaimHeartbeat();
  ClaimHeartbeat(const ClaimHeartbeat&) = delete;
  ClaimHeartbeat& operator=(const ClaimHeartbeat&) = delete;

 private:
  void loop();
  std::string db_path_;
  ClaimHolder me_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

// Drops this run's claim on a trial that ends without being stored (a failure to store it, a stop
// signal, an exception), unless disarmed once the trial is stored.
struct ClaimRelease {
  ClaimRelease(Store& s, std::string k, const ClaimHolder& m) : store(s), key(std::move(k)), me(m) {}
  ClaimRelease(const ClaimRelease&) = delete;
  ClaimRelease& operator=(const ClaimRelease&) = delete;
  ~ClaimRelease();
  Store& store;
  std::string key;
  const ClaimHolder& me;
  bool armed = true;
};

// This run as a claim holder, and the claims of the trials it runs.
struct SweepClaims {
  ProcessIdentity me = this_process();
  ClaimHolder holder = claim_holder(me);
  std::optional<double> retry_before;  // --retry-failed: what failed before this run began
};

}  // namespace balerbench
