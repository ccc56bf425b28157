// trial_claims.cpp: see trial_claims.h.
#include "harness/sweep/trial_claims.h"

#include <chrono>
#include <ctime>

namespace balerbench {

std::string describe_claim(const Claim& c) {
  const std::time_t t = static_cast<std::time_t>(c.claimed_unix_s);
  char when[32] = "?";
  std::tm tm{};
  if (localtime_r(&t, &tm)) std::strftime(when, sizeof when, "%H:%M:%S", &tm);
  return "pid " + std::to_string(c.holder.pid) + " on " + c.holder.host + ", since " + when;
}

ClaimHeartbeat::ClaimHeartbeat(std::string db_path, ClaimHolder me)
    : db_path_(std::move(db_path)), me_(std::move(me)), thread_([this] { loop(); }) {}

ClaimHeartbeat::~ClaimHeartbeat() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void ClaimHeartbeat::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, std::chrono::duration<double>(kClaimHeartbeatS), [this] { return stop_; })) {
    try {
      Store(db_path_, StoreAccess::kReadWrite).refresh_claims(me_);
    } catch (const std::exception&) {
      // A busy or full database: the next beat tries again, and the lease is ten beats long.
    }
  }
}

ClaimRelease::~ClaimRelease() {
  if (!armed) return;
  try {
    store.release_claim(key, me);
  } catch (const std::exception&) {
    // The holder is this process: once it ends, the claim reads as dead and is taken over.
  }
}

}  // namespace balerbench
