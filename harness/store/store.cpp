// store.cpp: see store.h.
#include "harness/store/store.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <type_traits>
#include <map>
#include <random>
#include <stdexcept>

#include "common/error.h"
#include "common/paths.h"
#include "common/text.h"
#include "harness/store/store_sql.h"

namespace balerbench {

using nlohmann::json;
using namespace store_sql;


std::string hardware_label(const json& provenance, const std::string& gpus) {
  const json& p = provenance.is_object() ? provenance : json::object();
  std::string gpu = gpus;
  if (gpu.empty() && p.contains("gpus") && p["gpus"].is_array())
    for (const auto& g : p["gpus"])
      if (g.is_object() && g.contains("name") && g["name"].is_string())
        gpu += (gpu.empty() ? "" : " + ") + g["name"].get<std::string>();
  const json cpu_model = p.contains("cpu_model") ? p["cpu_model"] : json();
  if (!cpu_model.is_string() && gpu.empty()) return "";
  std::string cpu = cpu_model.is_string() ? cpu_model.get<std::string>() : std::string("unknown CPU");
  if (p.contains("logical_cpus") && p["logical_cpus"].is_number_integer())
    cpu += " (" + std::to_string(p["logical_cpus"].get<int64_t>()) + " CPUs)";
  return gpu.empty() ? "CPU: " + cpu : "GPU: " + gpu + "; CPU: " + cpu;
}

ClaimHolder claim_holder(const ProcessIdentity& p) { return {p.host, p.boot_id, p.pid, p.start_ticks}; }


const char* trial_status_name(TrialStatus status) {
  switch (status) {
    case TrialStatus::kOk:
      return "ok";
    case TrialStatus::kSkipped:
      return "skipped";
    case TrialStatus::kFailed:
      break;
  }
  return "failed";
}

TrialStatus parse_trial_status(const std::string& name) {
  if (name == "ok") return TrialStatus::kOk;
  if (name == "skipped") return TrialStatus::kSkipped;
  return TrialStatus::kFailed;
}

std::optional<int> Store::schema_version() const {
  Stmt has_meta(db_, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name='meta'");
  has_meta.step();
  if (has_meta.integer(0) == 0) {
    Stmt any(db_, "SELECT count(*) FROM sqlite_master WHERE type='table'");
    any.step();
    if (any.integer(0) > 0)
      throw InputError(path_ + ": an SQLite file that is not a balerbench results database (it is left as it is)",
                       "give the database that `balerbench run` wrote, or another --db path");
    return std::nullopt;
  }
  Stmt v(db_, "SELECT value, typeof(value) FROM meta WHERE key='schema_version'");
  const std::string damaged = "restore it from a copy, or give another --db";
  // The meta table is made in the same transaction as its schema_version row: one without the other is
  // a damaged or hand-edited file, never a new database.
  if (!v.step())
    throw InputError(path_ + ": its meta table has no schema_version: a damaged or hand-edited results database (it is left as it is)",
                     damaged);
  const std::string text = v.text(0);
  // Exactly the digits balerbench writes ("1" to "5"): '5.5', ' 5', '05' or NULL are not a version.
  const bool canonical = (v.text(1) == "text" || v.text(1) == "integer") && !text.empty() && text.size() <= 9 &&
                         text.find_first_not_of("0123456789") == std::string::npos && (text == "0" || text[0] != '0');
  if (!canonical)
    throw InputError(path_ + ": its schema_version is " + (v.text(1) == "null" ? std::string("NULL") : "'" + text + "'") +
                         ", not a version balerbench writes: a damaged or hand-edited results database (it is left as it is)",
                     damaged);
  const int version = std::stoi(text);
  if (version < 1)
    throw InputError(path_ + ": its schema_version is " + text + "; balerbench numbers its schemas from 1: a damaged or "
                         "hand-edited results database (it is left as it is)",
                     damaged);
  if (version > kStoreSchemaVersion)
    throw InputError(path_ + ": results database schema version " + text + "; this balerbench reads 1 to " +
                         std::to_string(kStoreSchemaVersion),
                     "use the balerbench that wrote it (a newer one), or another --db path");
  check_columns_match(version);
  return version;
}

void Store::check_columns_match(int version) const {
  // Each migration adds one column: a file whose version says it lacks a column it has (or has one it
  // lacks) would fail half-way through a migration, after its backup was made.
  for (const Migration& m : migrations()) {
    Stmt c(db_, std::string("SELECT count(*) FROM pragma_table_info('") + m.table + "') WHERE name='" + m.column + "'");
    c.step();
    const bool present = c.integer(0) > 0;
    if (present != (m.to_version <= version))
      throw InputError(path_ + ": its schema_version says " + std::to_string(version) + ", but its " + m.table + " table " +
                           (present ? "has" : "lacks") + " the column " + m.column + " of schema " +
                           std::to_string(m.to_version) + ": a damaged or hand-edited results database (it is left as it is)",
                       "restore it from a copy, or give another --db");
  }
}

Store::~Store() {
  if (db_) sqlite3_close(db_);
}

void Store::exec(const std::string& sql) const {
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) throw_sqlite(db_, "");
}

void Store::migrate(int from_version, bool backup_first) {
  namespace fs = std::filesystem;
  // A consistent copy of the whole database (WAL included) before anything changes.
  const std::string backup = path_ + ".schema" + std::to_string(from_version) + ".bak";
  bool made_backup = false;
  if (backup_first) {  // the write lock first: a database another program holds is left without a backup
    exec("BEGIN IMMEDIATE");
    exec("ROLLBACK");
  }
  if (backup_first && !fs::exists(backup)) {
    // A temporary of this process's own: two runs opening one older database at once each make a
    // whole copy, and the first to finish names the backup.
    std::random_device rd;
    const std::string tag = ".schema" + std::to_string(from_version) + ".bak.partial-" + std::to_string(::getpid()) +
                            "-" + std::to_string(rd());
    const std::string tmp = path_ + tag;
    Stmt(db_, "VACUUM INTO ?").bind(1, tmp).run();
    made_backup = ::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, backup.c_str(), RENAME_NOREPLACE) == 0;
    if (!made_backup) {
      std::error_code ec;
      if (!fs::exists(backup, ec)) fs::rename(tmp, backup);  // a file system without RENAME_NOREPLACE
      fs::remove(tmp, ec);
    }
  }
  std::string what;
  try {
    exec("BEGIN IMMEDIATE");
  } catch (...) {  // locked since the probe: nothing migrated, so this run's backup goes too
    std::error_code ec;
    if (made_backup) fs::remove(backup, ec);
    throw;
  }
  if (backup_first) {  // under the write lock: another run may have migrated it meanwhile
    Stmt v(db_, "SELECT value FROM meta WHERE key='schema_version'");
    if (v.step() && v.text(0) == std::to_string(kStoreSchemaVersion)) {
      exec("COMMIT");
      return;
    }
  }
  try {
    for (const Migration& m : migrations()) {
      if (m.to_version <= from_version) continue;
      exec(m.sql);
      what += (what.empty() ? "" : "; ") + std::string(m.what);
    }
    Stmt(db_, "UPDATE meta SET value=? WHERE key='schema_version'").bind(1, std::to_string(kStoreSchemaVersion)).run();
    exec("COMMIT");
  } catch (...) {
    exec("ROLLBACK");
    throw;
  }
  migration_note_ =
      backup_first ? path_ + ": migrated the results database from schema " + std::to_string(from_version) + " to " +
                         std::to_string(kStoreSchemaVersion) + " (" + what + "); backup " + backup
                   : path_ + ": read through a migration in memory from schema " + std::to_string(from_version) +
                         " to " + std::to_string(kStoreSchemaVersion) + " (" + what +
                         "); the file is left as it is (the next `balerbench run` into it migrates it)";
}

void Store::put_experiment(const std::string& name, const std::string& source, const json& spec) {
  Stmt(db_,
       "INSERT INTO experiments(name, source, spec_json, first_run_unix_s) VALUES(?, ?, ?, strftime('%s','now')) "
       "ON CONFLICT(name) DO UPDATE SET source=excluded.source, spec_json=excluded.spec_json")
      .bind(1, name)
      .bind(2, source)
      .bind(3, spec.dump())
      .run();
}

json Store::experiment_spec(const std::string& name) const {
  Stmt s(db_, "SELECT spec_json FROM experiments WHERE name=?");
  s.bind(1, name);
  if (!s.step()) return nullptr;
  try {
    return parse_or_null(s.text(0));
  } catch (const std::invalid_argument& bad) {
    throw InputError(path_ + ": experiment '" + name + "' spec_json " + bad.what(),
                     "the file was damaged or edited by hand; restore it or run its trials again");
  }
}

namespace {

// An experiment's name as stored: InputError naming `file` when it holds a character that hides or
// reorders text (balerbench refuses such names; a hand-edited or hostile file has them).
void check_stored_name(const std::string& name, const std::string& file, const char* where) {
  if (const std::string problem = hidden_character_problem(name); !problem.empty())
    throw InputError(file + ": " + where + " holds the experiment name '" + message_text(name, 60) + "', which " +
                         problem,
                     kDamagedColumnHint);
}

}  // namespace

std::vector<std::string> Store::experiments() const {
  std::vector<std::string> out;
  Stmt s(db_, "SELECT experiment FROM trials GROUP BY experiment ORDER BY min(id)");
  while (s.step()) {
    out.push_back(s.text(0));
    check_stored_name(out.back(), path_, "column experiment");
  }
  return out;
}

std::set<std::string> Store::trial_keys(std::optional<TrialStatus> status) const {
  std::set<std::string> out;
  Stmt s(db_, status ? "SELECT trial_key FROM trials WHERE status=?" : "SELECT trial_key FROM trials");
  if (status) s.bind(1, trial_status_name(*status));
  while (s.step()) out.insert(s.text(0));
  return out;
}

std::optional<TrialStatus> Store::trial_status(const std::string& key) const {
  Stmt s(db_, "SELECT status FROM trials WHERE trial_key=?");
  s.bind(1, key);
  if (!s.step()) return std::nullopt;
  return parse_trial_status(s.text(0));
}

int64_t Store::insert_trial(const TrialRecord& t, bool replace) {
  try {
    exec("BEGIN IMMEDIATE");
    if (replace) Stmt(db_, "DELETE FROM trials WHERE trial_key=?").bind(1, t.key).run();
    Stmt(db_, "DELETE FROM claims WHERE trial_key=?").bind(1, t.key).run();  // stored: no longer claimed
    Stmt ins(db_, insert_sql("trials", trial_columns(), ""));
    bind_all(ins, trial_columns(), t, 1);
    ins.run();
    const int64_t id = sqlite3_last_insert_rowid(db_);
    // The child rows: trial_id first, then the table's columns.
    auto insert_children = [&](const char* table, const auto& cols, const auto& rows) {
      Stmt st(db_, insert_sql(table, cols, "trial_id"));
      for (const auto& r : rows) {
        st.bind(1, id);
        bind_all(st, cols, r, 2);
        st.run();
      }
    };
    insert_children("epochs", epoch_columns(), t.epoch_rows);
    insert_children("phases", phase_columns(), t.phases);
    insert_children("power_samples", sample_columns(), t.samples);
    exec("COMMIT");
    return id;
  } catch (const std::exception& e) {
    const bool disk = disk_error(db_);  // read before ROLLBACK replaces the error code
    // SQLite may have rolled back already (after SQLITE_FULL or an I/O error): a failed ROLLBACK
    // must not hide the error that matters.
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    if (dynamic_cast<const StoreBusyError*>(&e))
      throw StoreBusyError(path_ + ": could not store trial " + t.key +
                           ": the database stayed locked by another connection (hint: " + kLockedHint + ")");
    if (!disk) throw;  // a duplicate key, a bug: not a reason to stop a sweep with a disk hint
    throw StoreWriteError(path_ + ": could not store trial " + t.key + ": " + e.what() + " (hint: " + kDiskFullHint +
                              ": the trials stored so far are kept and the rest run)",
                          e.what());
  }
}


void Store::set_busy_timeout_s(double seconds) {
  sqlite3_busy_timeout(db_, static_cast<int>(std::max(0.0, seconds) * 1000));
}

void Store::interrupt() const {
  if (db_) sqlite3_interrupt(db_);
}

void Store::close_as_single_file() {
  try {
    Stmt mode(db_, "PRAGMA journal_mode=DELETE");  // checkpoints the WAL into the file and removes it
    if (!mode.step() || mode.text(0) != "delete")
      throw std::runtime_error("sqlite: " + path_ + ": could not leave WAL mode (another connection holds it?)");
  } catch (const std::runtime_error& e) {
    if (!disk_error(db_)) throw;  // a full disk while the WAL is copied in is a write error, not a bug
    throw StoreWriteError(path_ + ": could not copy the write-ahead log into the file: " + e.what() + " (hint: " +
                              kDiskFullHint + ")",
                          e.what());
  }
}

std::vector<TrialRecord> Store::trials(const std::string& experiment, bool children, bool samples) const {
  try {
    return read_trials(experiment, children, samples);
  } catch (const InputError& e) {
    const std::string what = e.what();
    if (what.rfind("column ", 0) != 0) throw;
    throw InputError(path_ + ": " + what);  // a damaged column, named with the file it is in (its hint kept)
  }
}

std::vector<TrialRecord> Store::read_trials(const std::string& experiment, bool children, bool samples) const {
  const ReadSnapshot snapshot(db_);  // trials and their rows as one commit left them, whoever writes beside
  std::vector<TrialRecord> out;
  Stmt s(db_, "SELECT " + names(trial_columns(), "id") + " FROM trials" +
                  (experiment.empty() ? "" : " WHERE experiment=?") + " ORDER BY id");
  if (!experiment.empty()) s.bind(1, experiment);
  std::map<int64_t, std::size_t> by_id;
  while (s.step()) {
    TrialRecord t;
    t.id = s.integer(0);
    read_all(s, trial_columns(), t, 1);
    by_id[t.id] = out.size();
    out.push_back(std::move(t));
  }
  if (!children || out.empty()) return out;
  const std::string where = experiment.empty() ? "" : " WHERE trial_id IN (SELECT id FROM trials WHERE experiment=?)";
  // Each child table's rows, in insertion order (epochs by number), appended to their trial.
  auto read_children = [&](const char* table, const auto& cols, const char* order, auto member) {
    Stmt st(db_, "SELECT " + names(cols, "trial_id") + " FROM " + table + where + " ORDER BY " + order);
    if (!experiment.empty()) st.bind(1, experiment);
    while (st.step()) {
      typename std::decay_t<decltype(cols)>::value_type::Record r;
      read_all(st, cols, r, 1);
      const auto owner = by_id.find(st.integer(0));
      if (owner == by_id.end())  // foreign keys forbid it; a damaged or hand-edited file has it
        throw InputError(path_ + ": a row of " + table + " belongs to no trial (trial_id " +
                             std::to_string(st.integer(0)) + ")",
                         "the file was damaged or edited by hand; restore it or run the trials again");
      (out[owner->second].*member).push_back(std::move(r));
    }
  };
  read_children("epochs", epoch_columns(), "trial_id, epoch", &TrialRecord::epoch_rows);
  read_children("phases", phase_columns(), "rowid", &TrialRecord::phases);
  if (samples) read_children("power_samples", sample_columns(), "rowid", &TrialRecord::samples);
  return out;
}

namespace {

// An experiment's row of a results database, as a merge copies it.
struct StoredExperiment {
  std::string name, source, spec_json;
};

// The experiments of the database at `path` (a merge's source), after SQLite's check of every page
// (it finds most damage only on the pages it reads, and a merge reads them all). Damage, a name that is
// no file name, a spec that is not JSON: an InputError naming `path`.
std::vector<StoredExperiment> read_experiments(sqlite3* db, const std::string& path) {
  {
    Stmt check(db, "PRAGMA quick_check(1)");
    if (check.step() && check.text(0) != "ok")  // its report spans lines ("*** in database main ***\nPage 3: ...")
      throw InputError(path + ": the file is damaged (SQLite's quick_check: " + one_line(check.text(0)) + ")",
                       "restore it from a copy; sqlite3 FILE '.recover' may save what is left");
  }
  std::vector<StoredExperiment> experiments;
  Stmt ex(db, "SELECT name, source, spec_json FROM experiments");
  while (ex.step()) {
    StoredExperiment e{ex.text(0), ex.text(1), ex.text(2)};
    check_stored_name(e.name, path, "the experiments table");
    try {
      parse_or_null(e.spec_json);
    } catch (const std::invalid_argument& bad) {
      throw InputError(path + ": experiment '" + e.name + "' spec_json " + bad.what(),
                       "the file was damaged or edited by hand; restore it or run its trials again");
    }
    experiments.push_back(std::move(e));
  }
  return experiments;
}

// The experiments written into the database at `path` (those it has already are kept). A full disk
// is a StoreWriteError: it can strike here first, before any trial (it did, on a small tmpfs, one
// run in three).
void write_experiments(sqlite3* db, const std::string& path, const std::vector<StoredExperiment>& experiments) {
  try {
    for (const StoredExperiment& e : experiments)
      Stmt(db, "INSERT OR IGNORE INTO experiments(name, source, spec_json, first_run_unix_s) VALUES(?,?,?,NULL)")
          .bind(1, e.name)
          .bind(2, e.source)
          .bind(3, e.spec_json)
          .run();
  } catch (const std::runtime_error& e) {
    if (!disk_error(db)) throw;
    throw StoreWriteError(path + ": could not store the experiments: " + e.what() + " (hint: " + kDiskFullHint + ")",
                          e.what());
  }
}

}  // namespace

std::pair<int64_t, int64_t> Store::merge_from(const Store& other) {
  // Everything is read from `other` before anything is written here, so that a damaged foreign file is
  // an InputError naming it (not an SQLite error read as this database's fault) and leaves this one as
  // it was.
  std::vector<StoredExperiment> experiments;
  std::vector<TrialRecord> trials;
  try {
    experiments = read_experiments(other.db_, other.path_);
    trials = other.trials("", true);
  } catch (const InputError&) {
    throw;
  } catch (const std::runtime_error& e) {
    throw InputError(other.path_ + ": cannot read it: " + e.what(),
                     "the file is damaged or not a balerbench database; check it with sqlite3 FILE 'PRAGMA "
                     "integrity_check'");
  }
  write_experiments(db_, path_, experiments);
  int64_t copied = 0, duplicates = 0;
  std::set<std::string> here = trial_keys();
  for (const TrialRecord& t : trials) {
    if (here.count(t.key)) {
      ++duplicates;
      continue;
    }
    insert_trial(t);
    here.insert(t.key);
    ++copied;
  }
  return {copied, duplicates};
}

}  // namespace balerbench
