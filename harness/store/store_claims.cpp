// store_claims.cpp: the claims of trials being run (store.h): who holds a trial, whether it still
// runs, and the claim, release and heartbeat of Store.
#include <chrono>

#include "harness/store/store_sql.h"

namespace balerbench {

using nlohmann::json;
using namespace store_sql;

bool claim_alive(const Claim& c, const ProcessIdentity& me, double now_unix_s) {
  const ProcessIdentity holder{c.holder.host, c.holder.boot_id, c.holder.pid, c.holder.pid_start};
  if (same_boot(holder, me)) return process_alive(holder);
  return now_unix_s - c.heartbeat_unix_s < kClaimLeaseS;
}

double unix_time_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

namespace {

// The claim on `key`, if any.
std::optional<Claim> read_claim(sqlite3* db, const std::string& key) {
  Stmt q(db, "SELECT host, boot_id, pid, pid_start, claimed_unix_s, heartbeat_unix_s FROM claims WHERE trial_key=?");
  q.bind(1, key);
  if (!q.step()) return std::nullopt;
  return Claim{key, {q.text(0), q.text(1), q.integer(2), q.text(3)}, q.real(4), q.real(5)};
}

// `me` claims `key` now, replacing any claim on it.
void write_claim(sqlite3* db, const std::string& key, const ClaimHolder& me, double now) {
  Stmt(db,
       "INSERT OR REPLACE INTO claims(trial_key, host, boot_id, pid, pid_start, claimed_unix_s, heartbeat_unix_s) "
       "VALUES(?, ?, ?, ?, ?, ?, ?)")
      .bind(1, key)
      .bind(2, me.host)
      .bind(3, me.boot_id)
      .bind(4, me.pid)
      .bind(5, me.pid_start)
      .bind(6, now)
      .bind(7, now)
      .run();
}

}  // namespace

ClaimOutcome Store::claim_trial(const std::string& key, const ClaimHolder& me,
                                 std::optional<double> retry_unfinished_before_unix_s,
                                 const std::function<bool(const Claim&)>& alive) {
  ClaimOutcome outcome;
  exec("BEGIN IMMEDIATE");  // one writer at a time: two runs cannot both claim a trial
  try {
    double finished_unix_s = 0;
    {
      Stmt q(db_, "SELECT status, finished_unix_s FROM trials WHERE trial_key=?");
      q.bind(1, key);
      if (q.step()) {
        outcome.stored = parse_trial_status(q.text(0));
        finished_unix_s = q.real(1);
      }
    }
    const bool retry = retry_unfinished_before_unix_s && outcome.stored && *outcome.stored != TrialStatus::kOk &&
                       finished_unix_s < *retry_unfinished_before_unix_s;
    if (outcome.stored && !retry) {
      outcome.kind = ClaimOutcome::kStored;
      exec("COMMIT");
      return outcome;
    }
    outcome.stored.reset();
    const std::optional<Claim> existing = read_claim(db_, key);
    if (existing && !(existing->holder == me)) {
      if (alive(*existing)) {
        outcome.kind = ClaimOutcome::kHeldByOther;
        outcome.other = existing;
        exec("COMMIT");
        return outcome;
      }
      outcome.taken_over = existing;
    }
    write_claim(db_, key, me, now_unix_s());
    exec("COMMIT");
  } catch (const std::exception& e) {
    const bool disk = disk_error(db_);
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    if (dynamic_cast<const StoreBusyError*>(&e))
      throw StoreBusyError(path_ + ": could not claim trial " + key +
                           " before running it: the database stayed locked by another connection (hint: " + kLockedHint + ")");
    if (!disk) throw;
    throw StoreWriteError(path_ + ": could not claim trial " + key + " before running it: " + e.what() + " (hint: " +
                          kDiskFullHint + ": the trials stored so far are kept and the rest run)");
  }
  outcome.kind = ClaimOutcome::kClaimed;
  return outcome;
}

void Store::release_claim(const std::string& key, const ClaimHolder& me) {
  Stmt(db_, "DELETE FROM claims WHERE trial_key=? AND host=? AND boot_id=? AND pid=? AND pid_start=?")
      .bind(1, key)
      .bind(2, me.host)
      .bind(3, me.boot_id)
      .bind(4, me.pid)
      .bind(5, me.pid_start)
      .run();
}

int64_t Store::refresh_claims(const ClaimHolder& me) {
  Stmt(db_, "UPDATE claims SET heartbeat_unix_s=? WHERE host=? AND boot_id=? AND pid=? AND pid_start=?")
      .bind(1, now_unix_s())
      .bind(2, me.host)
      .bind(3, me.boot_id)
      .bind(4, me.pid)
      .bind(5, me.pid_start)
      .run();
  return sqlite3_changes(db_);
}

std::vector<Claim> Store::claims() const {
  std::vector<Claim> out;
  Stmt has(db_, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name='claims'");
  has.step();
  if (has.integer(0) == 0) return out;  // a file only read, written before claims existed
  Stmt q(db_,
         "SELECT trial_key, host, boot_id, pid, pid_start, claimed_unix_s, heartbeat_unix_s FROM claims ORDER BY "
         "claimed_unix_s");
  while (q.step()) out.push_back({q.text(0), {q.text(1), q.text(2), q.integer(3), q.text(4)}, q.real(5), q.real(6)});
  return out;
}

}  // namespace balerbench
