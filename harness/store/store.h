// store.h: the results database: one SQLite file, schema versioned, in WAL
// mode, one transaction per trial (a crash or kill loses at most the trial in
// flight). Trials are keyed by the hash of their resolved spec on the system that ran them, so a
// rerun of an experiment skips what is finished here, never stores a trial twice, and the same
// experiment from two machines lives side by side.
//
// Tables: meta (schema_version), experiments (the file as run), trials (the
// headline figures as columns; spec, result and provenance as JSON), epochs
// (per-epoch losses, elapsed time and cumulative energy), phases (energy
// windows and profiler phases) and power_samples (the sampler's power series).
// Energy is stored in joules, times in seconds. Each table's columns are listed once (store.cpp's
// column tables), and the schema, the inserts and the selects are made from that list.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/error.h"
#include "harness/base/processes.h"

struct sqlite3;

namespace balerbench {

// 1: the first schema. 2: epochs.eval_s. 3: trials.engine. 4: epochs.energy_pm_j.
// 5: trials.system_fingerprint (keys name the spec on a system). An older database is migrated forward when opened, after
// a backup copy (PATH.schema<N>.bak); a newer one is refused.
inline constexpr int kStoreSchemaVersion = 5;

struct EpochRow {
  int64_t epoch = 0;  // 0-based (EpochRecord::number() is the 1-based count)
  double train_loss = 0, val_loss = 0;
  std::optional<double> relative_error;
  double lr = 0, duration_s = 0;
  double elapsed_s = 0;            // since training began, at the end of this epoch (evaluation included)
  std::optional<double> energy_j;  // cumulative since training began
  bool target_met = false;
  std::optional<double> eval_s;    // this epoch's evaluation, inside duration_s (schema 2; null before)
  std::optional<double> energy_pm_j;  // measurement ± of energy_j (schema 4; null before, and for estimates)
};

struct PhaseRow {
  std::string phase;
  std::string source;  // "energy" (a measured window) | "profile" (phase timers)
  double duration_s = 0;
  std::optional<double> energy_j, co2_g;
  std::string energy_kind;  // measured | estimated | simulated | ... ; empty for profile rows
};

// How a trial ended. Stored as its name (ok, failed, skipped); any other stored text reads as failed.
enum class TrialStatus { kOk, kFailed, kSkipped };
const char* trial_status_name(TrialStatus status);
TrialStatus parse_trial_status(const std::string& name);

// "GPU: A + B; CPU: model (N CPUs)" or "CPU: model (N CPUs)" from a trial's provenance. `gpus`
// (the meters' view, simulated GPUs marked) replaces the provenance's GPU names when not empty.
// Empty when neither names a CPU nor a GPU.
std::string hardware_label(const nlohmann::json& provenance, const std::string& gpus = "");

struct SampleRow {
  double t_s = 0;  // since the trial's energy session began
  std::string phase;
  double power_w = 0;
};

struct TrialRecord {
  int64_t id = 0;  // database row id (set when read)
  std::string key, experiment;
  int64_t grid_index = 0, repeat = 0, batch_size = 0, epochs = 0;
  std::string precision;
  std::string engine = "libtorch";  // the engine that trained (resolved: never "auto")
  std::optional<double> power_limit_w;
  TrialStatus status = TrialStatus::kOk;
  std::string error;
  double started_unix_s = 0, finished_unix_s = 0;
  std::optional<double> train_s, train_energy_j, compress_s, compress_energy_j, decompress_s, decompress_energy_j;
  std::optional<double> total_energy_j, co2_g;
  bool target_reached = false;
  std::optional<double> tta_s, eta_j;
  std::optional<int64_t> epochs_to_target;
  std::optional<double> max_power_w, enforced_power_limit_w;
  std::string energy_kind, hardware;
  std::string system_fingerprint;  // provenance.system's fingerprint; empty for trials stored before schema 5
  nlohmann::json spec, result, provenance;
  std::vector<EpochRow> epoch_rows;
  std::vector<PhaseRow> phases;
  std::vector<SampleRow> samples;
};

// Who runs a trial: the claims table names the process that holds a trial while it runs, so that a
// second `balerbench run` into the same database skips it instead of running it twice. `boot_id`
// (the kernel's boot id) and `pid_start` (the process's start time in clock ticks since boot)
// tell a live holder from a dead one and from a later process that reuses the pid.
struct ClaimHolder {
  std::string host, boot_id;
  int64_t pid = 0;
  std::string pid_start;
  bool operator==(const ClaimHolder& o) const {
    return host == o.host && boot_id == o.boot_id && pid == o.pid && pid_start == o.pid_start;
  }
};

// A claim from another machine (or boot) is live while its holder's heartbeat, refreshed every
// kClaimHeartbeatS, is younger than kClaimLeaseS; one from this boot of this machine while its holder
// process runs.
inline constexpr double kClaimHeartbeatS = 30;
inline constexpr double kClaimLeaseS = 300;

struct Claim {
  std::string trial_key;
  ClaimHolder holder;
  double claimed_unix_s = 0, heartbeat_unix_s = 0;  // the holder refreshes the heartbeat while it runs
};

ClaimHolder claim_holder(const ProcessIdentity& p);
// Whether the holder of `c` still runs, seen from process `me` at `now_unix_s`: exactly, for a process
// of the same boot of the same machine; by its heartbeat (younger than kClaimLeaseS) for one
// elsewhere (a database on a shared file system).
bool claim_alive(const Claim& c, const ProcessIdentity& me, double now_unix_s);
double unix_time_s();

// What claim_trial found.
struct ClaimOutcome {
  enum Kind { kClaimed, kStored, kHeldByOther } kind = kClaimed;
  std::optional<TrialStatus> stored;  // kStored: its status
  std::optional<Claim> other;         // kHeldByOther: the live claim
  std::optional<Claim> taken_over;    // kClaimed over a dead holder's claim: that claim
};

// How a Store opens its file.
enum class StoreAccess {
  kCreate,     // create when missing; migrate an older schema in place (after a backup)
  kReadWrite,  // the file must exist; migrate an older schema in place (after a backup)
  kReadOnly,   // the file must exist and is never changed: no journal-mode switch, no migration on disk
               // (an older schema is copied into memory and migrated there), readable from a read-only
               // folder
};

// A trial that could not be written (a full disk, a file-size limit, an I/O error, a lock held too
// long). The database is left as it was before the trial: SQLite rolls the transaction back. Its
// message carries its hint; uncaught, it ends the command with exit code 4 (WriteError).
class StoreWriteError : public WriteError {
 public:
  explicit StoreWriteError(const std::string& what, std::string reason = "")
      : WriteError(what, ""), reason_(std::move(reason)) {}
  // What failed, without the path, the trial or the hint ("sqlite: database or disk is full"); may be
  // empty. For a caller whose own message says what it means (merge: nothing merged).
  const std::string& reason() const { return reason_; }

 private:
  std::string reason_;
};

// The database stayed locked by another connection for longer than SQLite's busy timeout
// (kStoreBusyTimeoutS): a program holding a write transaction on it (an sqlite3 shell after BEGIN
// EXCLUSIVE, a backup tool). Nothing was written; the same write may succeed later.
class StoreBusyError : public StoreWriteError {
 public:
  using StoreWriteError::StoreWriteError;
};

// SQLite's Unix files are opened by their full path with every link resolved, within its MAX_PATHNAME
// of 512 bytes, with room for the "-journal" its journal's name adds: a database's full path may have
// at most this many bytes (a longer one fails in SQLite as "unable to open database file", so a Store
// refuses it with the reason first).
inline constexpr std::size_t kSqliteMaxPathBytes = 504;
// The bytes of `path` made absolute with its links resolved, as SQLite counts them.
std::size_t sqlite_path_bytes(const std::string& path);

// How long one statement waits for another connection's lock before SQLITE_BUSY.
inline constexpr double kStoreBusyTimeoutS = 10;
// A sweep's writes wait at most this long per try (and try again up to --db-wait): it says at once that
// it waits, and sees a stop signal between tries.
inline constexpr double kStoreLockTryS = 1;

class Store {
 public:
  // Opens the database at `path` as `access` says; InputError for a file that is not a balerbench
  // database (an empty file included, when only reading) or has a newer schema, and nothing of such
  // a file is changed. Writing, an older schema is migrated forward in one transaction, after a
  // backup copy of the file; reading only, it is migrated in a copy in memory. migration_note()
  // says which.
  explicit Store(const std::string& path, StoreAccess access = StoreAccess::kCreate);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  const std::string& path() const { return path_; }
  // "PATH: migrated the results database from schema 1 to 2 (...); backup PATH.schema1.bak", or empty.
  const std::string& migration_note() const { return migration_note_; }
  bool read_only() const { return read_only_; }
  void put_experiment(const std::string& name, const std::string& source, const nlohmann::json& spec);
  nlohmann::json experiment_spec(const std::string& name) const;  // null when unknown
  std::vector<std::string> experiments() const;

  // Keys of stored trials (any status), optionally only those with `status`.
  std::set<std::string> trial_keys(std::optional<TrialStatus> status = std::nullopt) const;
  // The stored status of the trial with `key`, if there is one (another run writing into the same
  // database may have stored it since this run looked).
  std::optional<TrialStatus> trial_status(const std::string& key) const;
  // Claims the trial with `key` for `me`, in one transaction: kStored when it is stored already
  // (unless its status is not ok and it finished before `retry_unfinished_before_unix_s`: a retry
  // runs again what failed before it began, not what a concurrent run just stored), kHeldByOther when
  // another holder's claim is live (`alive` says; a dead holder's claim is taken over), kClaimed
  // otherwise.
  ClaimOutcome claim_trial(const std::string& key, const ClaimHolder& me,
                           std::optional<double> retry_unfinished_before_unix_s,
                           const std::function<bool(const Claim&)>& alive);
  // Drops `me`'s claim on `key` (a trial that stopped without being stored).
  void release_claim(const std::string& key, const ClaimHolder& me);
  // Sets the heartbeat of every claim `me` holds to now; returns how many.
  int64_t refresh_claims(const ClaimHolder& me);
  std::vector<Claim> claims() const;
  // Makes the statement this connection runs now fail ("interrupted"), from any thread (a stop signal's
  // watcher): a long merge ends at once, and nothing of its transaction is kept.
  void interrupt() const;
  // How long one statement waits for another connection's lock (kStoreBusyTimeoutS when opened).
  void set_busy_timeout_s(double seconds);
  // Ends a database written to be moved elsewhere (merge's output): its journal mode back to DELETE,
  // so the file is whole on its own, with no -wal beside it.
  void close_as_single_file();

  // Stores one trial with its epochs, phases and samples in one transaction (and drops any claim
  // on its key); `replace` first deletes a stored trial with the same key. StoreWriteError when it
  // cannot be written: nothing of it is stored then.
  int64_t insert_trial(const TrialRecord& t, bool replace = false);
  // Trials (of one experiment, or all), in insertion order; `children` also
  // loads epochs and phases, and `samples` the power series (the bulk of a database).
  std::vector<TrialRecord> trials(const std::string& experiment = "", bool children = true, bool samples = true) const;
  // Copies every trial of `other` whose key is not here; returns {copied, already here}.
  std::pair<int64_t, int64_t> merge_from(const Store& other);

 private:
  void exec(const std::string& sql) const;
  void open(StoreAccess access);
  void open_read_only();
  // The stored schema version (nullopt for a file with no tables); InputError for a foreign file.
  std::optional<int> schema_version() const;
  // InputError when the tables' columns are not those of schema `version` (store_sql.h's migrations).
  void check_columns_match(int version) const;
  void migrate(int from_version, bool backup);
  std::vector<TrialRecord> read_trials(const std::string& experiment, bool children, bool samples) const;
  std::string path_, migration_note_;
  bool read_only_ = false;
  sqlite3* db_ = nullptr;
};

}  // namespace balerbench
