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
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

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

// A trial that could not be written (a full disk, a file-size limit, an I/O error). The database is
// left as it was before the trial: SQLite rolls the transaction back.
class StoreWriteError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Store {
 public:
  // Opens (creating when `create`) the database at `path`; InputError for a file that is not a
  // balerbench database or has a newer schema. An older schema is migrated forward in one
  // transaction, after a backup copy of the file; migration_note() then says so.
  explicit Store(const std::string& path, bool create = true);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  const std::string& path() const { return path_; }
  // "PATH: migrated the results database from schema 1 to 2 (...); backup PATH.schema1.bak", or empty.
  const std::string& migration_note() const { return migration_note_; }
  void put_experiment(const std::string& name, const std::string& source, const nlohmann::json& spec);
  nlohmann::json experiment_spec(const std::string& name) const;  // null when unknown
  std::vector<std::string> experiments() const;

  // Keys of stored trials (any status), optionally only those with `status`.
  std::set<std::string> trial_keys(std::optional<TrialStatus> status = std::nullopt) const;
  // The stored status of the trial with `key`, if there is one (another run writing into the same
  // database may have stored it since this run looked).
  std::optional<TrialStatus> trial_status(const std::string& key) const;
  // Stores one trial with its epochs, phases and samples in one transaction;
  // `replace` first deletes a stored trial with the same key. StoreWriteError when it cannot be
  // written: nothing of it is stored then.
  int64_t insert_trial(const TrialRecord& t, bool replace = false);
  // Trials (of one experiment, or all), in insertion order; `children` also
  // loads epochs and phases, and `samples` the power series (the bulk of a database).
  std::vector<TrialRecord> trials(const std::string& experiment = "", bool children = true, bool samples = true) const;
  // Copies every trial of `other` whose key is not here; returns {copied, already here}.
  std::pair<int64_t, int64_t> merge_from(const Store& other);

 private:
  void exec(const std::string& sql) const;
  void migrate(int from_version);
  std::string path_, migration_note_;
  sqlite3* db_ = nullptr;
};

}  // namespace balerbench
