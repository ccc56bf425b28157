// store.cpp: see store.h.
#include "harness/store/store.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <type_traits>
#include <map>
#include <random>
#include <stdexcept>

#include "datasets/error.h"
#include "datasets/paths.h"

namespace balerbench {
namespace {

using nlohmann::json;

// A damaged file (SQLITE_CORRUPT, SQLITE_NOTADB) is the user's to mend, so an InputError that names
// it, wherever it is found; every other SQLite failure stays a runtime_error for the caller to place.
[[noreturn]] void throw_sqlite(sqlite3* db, const std::string& context) {
  const int code = sqlite3_errcode(db) & 0xff;  // the primary result code
  const std::string msg = std::string("sqlite: ") + sqlite3_errmsg(db) + context;
  if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB) {
    const char* file = sqlite3_db_filename(db, "main");
    throw InputError(std::string(file && *file ? file : "results database") + ": the file is damaged (" + msg + ")",
                     "restore it from a copy, or check it with sqlite3 FILE 'PRAGMA integrity_check'");
  }
  throw std::runtime_error(msg);
}

// A prepared statement, finalized on scope exit.
class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s_, nullptr) != SQLITE_OK) throw_sqlite(db, " in: " + sql);
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt& bind(int i, const std::string& v) {
    sqlite3_bind_text(s_, i, v.c_str(), -1, SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& bind(int i, const char* v) { return bind(i, std::string(v)); }
  Stmt& bind(int i, double v) {
    sqlite3_bind_double(s_, i, v);
    return *this;
  }
  Stmt& bind(int i, int64_t v) {
    sqlite3_bind_int64(s_, i, v);
    return *this;
  }
  Stmt& bind(int i, bool v) { return bind(i, static_cast<int64_t>(v)); }
  template <typename T>
  Stmt& bind(int i, const std::optional<T>& v) {
    if (v) return bind(i, *v);
    sqlite3_bind_null(s_, i);
    return *this;
  }
  Stmt& bind_null(int i) {
    sqlite3_bind_null(s_, i);
    return *this;
  }
  bool step() {
    const int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw_sqlite(db_, "");
  }
  void run() {
    step();
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  bool null(int c) const { return sqlite3_column_type(s_, c) == SQLITE_NULL; }
  std::string text(int c) const {
    const unsigned char* t = sqlite3_column_text(s_, c);
    return t ? reinterpret_cast<const char*>(t) : "";
  }
  double real(int c) const { return sqlite3_column_double(s_, c); }
  int64_t integer(int c) const { return sqlite3_column_int64(s_, c); }
  std::optional<double> opt_real(int c) const { return null(c) ? std::nullopt : std::optional<double>(real(c)); }
  std::optional<int64_t> opt_int(int c) const { return null(c) ? std::nullopt : std::optional<int64_t>(integer(c)); }

 private:
  sqlite3* db_;
  sqlite3_stmt* s_ = nullptr;
};

// What a full disk or a file-size limit needs from the user (SQLITE_FULL, SQLITE_IOERR).
constexpr char kDiskFullHint[] =
    "the disk may be full or a file-size limit reached; make room and run the same command again";

bool disk_error(sqlite3* db) {
  const int code = sqlite3_errcode(db) & 0xff;  // the primary result code
  return code == SQLITE_FULL || code == SQLITE_IOERR;
}

// Empty text is null; text that is not JSON is an error (a damaged or hand-edited database), never a
// value that reads as something else downstream.
json parse_or_null(const std::string& text) {
  if (text.empty()) return nullptr;
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded())
    throw std::invalid_argument("holds text that is not JSON: '" + (text.size() > 60 ? text.substr(0, 57) + "..." : text) +
                                "'");
  return j;
}

// ---- the columns, listed once: the schema, the inserts and the selects are made from these ----

// A value as a statement binds it and a row gives it back.
void put(Stmt& s, int i, const std::string& v) { s.bind(i, v); }
void put(Stmt& s, int i, double v) { s.bind(i, v); }
void put(Stmt& s, int i, int64_t v) { s.bind(i, v); }
void put(Stmt& s, int i, bool v) { s.bind(i, v); }
void put(Stmt& s, int i, const std::optional<double>& v) { s.bind(i, v); }
void put(Stmt& s, int i, const std::optional<int64_t>& v) { s.bind(i, v); }
void put(Stmt& s, int i, const json& v) { s.bind(i, v.dump()); }
void get(const Stmt& s, int c, std::string& v) { v = s.text(c); }
void get(const Stmt& s, int c, double& v) { v = s.real(c); }
void get(const Stmt& s, int c, int64_t& v) { v = s.integer(c); }
void get(const Stmt& s, int c, bool& v) { v = s.integer(c) != 0; }
void get(const Stmt& s, int c, std::optional<double>& v) { v = s.opt_real(c); }
void get(const Stmt& s, int c, std::optional<int64_t>& v) { v = s.opt_int(c); }
void get(const Stmt& s, int c, json& v) { v = parse_or_null(s.text(c)); }
void put(Stmt& s, int i, TrialStatus v) { s.bind(i, trial_status_name(v)); }
void get(const Stmt& s, int c, TrialStatus& v) { v = parse_trial_status(s.text(c)); }

// One column of a table of records R: its name, its SQL type, and the record's member.
template <typename R>
struct Column {
  using Record = R;
  const char* name;
  const char* sql;  // type and constraints
  std::function<void(Stmt&, int, const R&)> bind;
  std::function<void(const Stmt&, int, R&)> read;
};

template <typename R, typename T>
Column<R> column(const char* name, const char* sql, T R::*member) {
  return {name, sql, [member](Stmt& s, int i, const R& r) { put(s, i, r.*member); },
          [member, name](const Stmt& s, int c, R& r) {
            try {
              get(s, c, r.*member);
            } catch (const std::invalid_argument& e) {
              throw InputError(std::string("results database: column ") + name + " " + e.what(),
                               "the file was damaged or edited by hand; restore it or run the trials again");
            }
          }};
}

// The trials table after its `id INTEGER PRIMARY KEY`.
const std::vector<Column<TrialRecord>>& trial_columns() {
  using T = TrialRecord;
  static const std::vector<Column<T>> c = {
      column("trial_key", "TEXT NOT NULL UNIQUE", &T::key),
      column("experiment", "TEXT NOT NULL", &T::experiment),
      column("grid_index", "INTEGER", &T::grid_index),
      column("repeat", "INTEGER", &T::repeat),
      column("batch_size", "INTEGER", &T::batch_size),
      column("precision", "TEXT", &T::precision),
      column("power_limit_w", "REAL", &T::power_limit_w),
      column("epochs", "INTEGER", &T::epochs),
      column("status", "TEXT NOT NULL", &T::status),
      column("error", "TEXT", &T::error),
      column("started_unix_s", "REAL", &T::started_unix_s),
      column("finished_unix_s", "REAL", &T::finished_unix_s),
      column("train_s", "REAL", &T::train_s),
      column("train_energy_j", "REAL", &T::train_energy_j),
      column("compress_s", "REAL", &T::compress_s),
      column("compress_energy_j", "REAL", &T::compress_energy_j),
      column("decompress_s", "REAL", &T::decompress_s),
      column("decompress_energy_j", "REAL", &T::decompress_energy_j),
      column("total_energy_j", "REAL", &T::total_energy_j),
      column("co2_g", "REAL", &T::co2_g),
      column("target_reached", "INTEGER", &T::target_reached),
      column("tta_s", "REAL", &T::tta_s),
      column("eta_j", "REAL", &T::eta_j),
      column("epochs_to_target", "INTEGER", &T::epochs_to_target),
      column("max_power_w", "REAL", &T::max_power_w),
      column("enforced_power_limit_w", "REAL", &T::enforced_power_limit_w),
      column("energy_kind", "TEXT", &T::energy_kind),
      column("hardware", "TEXT", &T::hardware),
      column("spec_json", "TEXT", &T::spec),
      column("result_json", "TEXT", &T::result),
      column("provenance_json", "TEXT", &T::provenance),
      column("engine", "TEXT NOT NULL DEFAULT 'libtorch'", &T::engine),  // schema 3
      column("system_fingerprint", "TEXT", &T::system_fingerprint),     // schema 5
  };
  return c;
}

// The child tables after their `trial_id` (a foreign key to trials.id, deleted with its trial).
const std::vector<Column<EpochRow>>& epoch_columns() {
  using E = EpochRow;
  static const std::vector<Column<E>> c = {
      column("epoch", "INTEGER NOT NULL", &E::epoch),         column("train_loss", "REAL", &E::train_loss),
      column("val_loss", "REAL", &E::val_loss),               column("relative_error", "REAL", &E::relative_error),
      column("lr", "REAL", &E::lr),                           column("duration_s", "REAL", &E::duration_s),
      column("elapsed_s", "REAL", &E::elapsed_s),             column("energy_j", "REAL", &E::energy_j),
      column("target_met", "INTEGER", &E::target_met),        column("eval_s", "REAL", &E::eval_s),
      column("energy_pm_j", "REAL", &E::energy_pm_j),
  };
  return c;
}

const std::vector<Column<PhaseRow>>& phase_columns() {
  using P = PhaseRow;
  static const std::vector<Column<P>> c = {
      column("phase", "TEXT NOT NULL", &P::phase),   column("source", "TEXT NOT NULL", &P::source),
      column("duration_s", "REAL", &P::duration_s),  column("energy_j", "REAL", &P::energy_j),
      column("co2_g", "REAL", &P::co2_g),            column("energy_kind", "TEXT", &P::energy_kind),
  };
  return c;
}

const std::vector<Column<SampleRow>>& sample_columns() {
  using S = SampleRow;
  static const std::vector<Column<S>> c = {
      column("t_s", "REAL NOT NULL", &S::t_s), column("phase", "TEXT", &S::phase),
      column("power_w", "REAL", &S::power_w)};
  return c;
}

template <typename R>
std::string names(const std::vector<Column<R>>& cols, const std::string& first = "") {
  std::string s = first;
  for (const auto& c : cols) s += (s.empty() ? "" : ", ") + std::string(c.name);
  return s;
}

template <typename R>
std::string definitions(const std::vector<Column<R>>& cols) {
  std::string s;
  for (const auto& c : cols) s += ", " + std::string(c.name) + " " + c.sql;
  return s;
}

// INSERT INTO table(first..., columns...) VALUES(?, ...).
template <typename R>
std::string insert_sql(const char* table, const std::vector<Column<R>>& cols, const std::string& first) {
  std::string q;
  const std::size_t n = cols.size() + (first.empty() ? 0 : 1);
  for (std::size_t i = 0; i < n; ++i) q += i ? ",?" : "?";
  return std::string("INSERT INTO ") + table + "(" + names(cols, first) + ") VALUES(" + q + ")";
}

template <typename R>
void bind_all(Stmt& s, const std::vector<Column<R>>& cols, const R& r, int first_index) {
  for (std::size_t i = 0; i < cols.size(); ++i) cols[i].bind(s, first_index + static_cast<int>(i), r);
}

template <typename R>
void read_all(const Stmt& s, const std::vector<Column<R>>& cols, R& r, int first_column) {
  for (std::size_t i = 0; i < cols.size(); ++i) cols[i].read(s, first_column + static_cast<int>(i), r);
}

// The schema of the current version, made from the column lists.
std::string schema_sql() {
  const std::string child = "trial_id INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE";
  return "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);\n"
         "CREATE TABLE IF NOT EXISTS experiments(name TEXT PRIMARY KEY, source TEXT, spec_json TEXT NOT NULL, "
         "first_run_unix_s REAL);\n"
         "CREATE TABLE IF NOT EXISTS trials(id INTEGER PRIMARY KEY" + definitions(trial_columns()) + ");\n"
         "CREATE INDEX IF NOT EXISTS trials_experiment ON trials(experiment);\n"
         "CREATE TABLE IF NOT EXISTS epochs(" + child + definitions(epoch_columns()) +
         ", PRIMARY KEY(trial_id, epoch));\n"
         "CREATE TABLE IF NOT EXISTS phases(" + child + definitions(phase_columns()) +
         ", PRIMARY KEY(trial_id, source, phase));\n"
         "CREATE TABLE IF NOT EXISTS power_samples(" + child + definitions(sample_columns()) + ");\n"
         "CREATE INDEX IF NOT EXISTS power_samples_trial ON power_samples(trial_id);\n";
}

// Forward migrations: `sql` takes a database of version to_version - 1 to to_version. Each must
// leave the tables exactly as schema_sql() makes them for to_version (a test compares the two).
struct Migration {
  int to_version;
  const char* what;
  const char* sql;
};
const std::vector<Migration>& migrations() {
  static const std::vector<Migration> m = {
      {2, "epochs.eval_s, the evaluation's seconds per epoch", "ALTER TABLE epochs ADD COLUMN eval_s REAL"},
      {3, "trials.engine, the training engine (earlier trials ran libtorch)",
       "ALTER TABLE trials ADD COLUMN engine TEXT NOT NULL DEFAULT 'libtorch'"},
      {4, "epochs.energy_pm_j, the measurement ± of each epoch's cumulative energy",
       "ALTER TABLE epochs ADD COLUMN energy_pm_j REAL"},
      {5, "trials.system_fingerprint, the system a trial ran on (empty for earlier trials: their keys name the "
          "spec alone, so a run on any system runs them again)",
       "ALTER TABLE trials ADD COLUMN system_fingerprint TEXT"},
  };
  return m;
}

}  // namespace

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

bool claim_alive(const Claim& c, const ProcessIdentity& me, double now_unix_s) {
  const ProcessIdentity holder{c.holder.host, c.holder.boot_id, c.holder.pid, c.holder.pid_start};
  if (same_boot(holder, me)) return process_alive(holder);
  return now_unix_s - c.heartbeat_unix_s < kClaimLeaseS;
}

double unix_time_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

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

Store::Store(const std::string& path, StoreAccess access) : path_(path), read_only_(access == StoreAccess::kReadOnly) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (path.empty())
    throw InputError("an empty database path (an unset shell variable?)", "give the results database's file name");
  const fs::file_status st = fs::status(path, ec);
  if (access != StoreAccess::kCreate && !fs::exists(st))
    throw InputError(path + ": no such database", "run an experiment first (balerbench run EXPERIMENT.json)");
  if (fs::is_directory(st))
    throw InputError(path + ": is a folder, not a results database", "give the database file's path");
  if (fs::exists(st) && !fs::is_regular_file(st))
    throw InputError(path + ": is not a regular file", "give the path of a results database file");
  try {
    if (read_only_)
      open_read_only();
    else
      open(access);
  } catch (const InputError&) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw;
  } catch (const std::runtime_error& e) {
    const bool disk = db_ && disk_error(db_);
    sqlite3_close(db_);
    db_ = nullptr;
    throw InputError(path + ": " + e.what(), disk ? kDiskFullHint : "is it an SQLite database?");
  } catch (...) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw;
  }
}

namespace {

// The claims of trials being run (Store::claim_trial). Not part of the results: a writer makes the
// table when it opens the file, and merge never copies it.
constexpr char kClaimsSql[] =
    "CREATE TABLE IF NOT EXISTS claims(trial_key TEXT PRIMARY KEY, host TEXT NOT NULL, boot_id TEXT NOT NULL, "
    "pid INTEGER NOT NULL, pid_start TEXT NOT NULL, claimed_unix_s REAL NOT NULL, heartbeat_unix_s REAL NOT NULL)";

// `path` as an SQLite URI ("file:/abs/path"), every byte a URI reserves escaped.
std::string file_uri(const std::string& path) {
  const std::string abs = std::filesystem::absolute(path).lexically_normal().string();
  std::string out = "file:";
  for (const unsigned char c : abs) {
    if (std::isalnum(c) || c == '/' || c == '-' || c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

double now_unix_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

void Store::open(StoreAccess access) {
  namespace fs = std::filesystem;
  if (access == StoreAccess::kCreate && fs::path(path_).has_parent_path()) {
    std::error_code ec;
    fs::create_directories(fs::path(path_).parent_path(), ec);
    if (ec)
      throw InputError(path_ + ": cannot make its folder: " + ec.message(),
                       "check that the folder's parents are folders and writable, or give another --db");
  }
  const int flags = SQLITE_OPEN_READWRITE | (access == StoreAccess::kCreate ? SQLITE_OPEN_CREATE : 0);
  if (sqlite3_open_v2(path_.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
    const std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    throw InputError(path_ + ": cannot open the database: " + msg, "check the path and its permissions");
  }
  sqlite3_busy_timeout(db_, 10000);
  exec("PRAGMA foreign_keys=ON");
  // What the file is, before anything changes it: a foreign file is refused as it was found.
  const std::optional<int> version = schema_version();
  {
    Stmt wal(db_, "PRAGMA journal_mode=WAL");
    wal.step();
  }
  exec("PRAGMA synchronous=NORMAL");
  if (version) {
    if (*version < kStoreSchemaVersion) migrate(*version, true);
  } else {
    exec("BEGIN IMMEDIATE");
    exec(schema_sql());
    Stmt(db_, "INSERT OR REPLACE INTO meta(key, value) VALUES('schema_version', ?)")
        .bind(1, std::to_string(kStoreSchemaVersion))
        .run();
    exec("COMMIT");
  }
  exec(kClaimsSql);
}

void Store::open_read_only() {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::file_size(path_, ec) == 0 && !ec)
    throw InputError(path_ + ": an empty file, not a results database",
                     "give the database that `balerbench run` wrote (--db), or run an experiment into it first");
  // Opened for writing where the file allows it, but with every write refused (query_only): then the
  // last connection to close removes the -wal and -shm files that reading a WAL database makes, as
  // SQLite does for writers, and the folder is left as it was found. Where the file is read-only to
  // this user, SQLite opens it read-only.
  auto open_uri = [this](const std::string& uri, int flags) {
    sqlite3_close(db_);
    db_ = nullptr;
    if (sqlite3_open_v2(uri.c_str(), &db_, flags | SQLITE_OPEN_URI, nullptr) != SQLITE_OK) {
      const std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
      throw InputError(path_ + ": cannot open the database: " + msg, "check the path and its permissions");
    }
    sqlite3_busy_timeout(db_, 10000);
    exec("PRAGMA query_only=1");
  };
  // A -wal beside the file holds trials not yet folded into it: a run writing now, or one that was
  // killed. Then the connection is read-only, so that closing it never folds them in (which changes
  // the file): the writer, or the next run, does that.
  const bool pending_wal = fs::file_size(path_ + "-wal", ec) > 0 && !ec;
  open_uri(file_uri(path_), pending_wal ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE);
  std::optional<int> version;
  try {
    version = schema_version();
  } catch (const InputError&) {
    throw;
  } catch (const std::runtime_error&) {
    // A database in WAL mode needs its -shm file to be read. In a folder this user cannot write, with
    // no -wal left beside the file (a writer that closed cleanly leaves none), the file alone is the
    // whole database: read it as immutable.
    const int code = sqlite3_errcode(db_) & 0xff;
    if (!(code == SQLITE_CANTOPEN || code == SQLITE_READONLY)) throw;
    if (pending_wal)
      throw InputError(path_ + ": its -wal file holds trials not yet in the database file (a run is writing it, or "
                               "was killed), and reading them needs a " + path_ + "-shm file that cannot be made "
                               "in that folder",
                       "run `balerbench report` on it once as a user who can write the folder (the next run into "
                       "it folds them in too), or copy the file and its -wal to a folder you can write");
    open_uri(file_uri(path_) + "?immutable=1", SQLITE_OPEN_READONLY);
    version = schema_version();
  }
  if (!version)
    throw InputError(path_ + ": an SQLite file with no tables, not a results database",
                     "give the database that `balerbench run` wrote (--db), or run an experiment into it first");
  if (*version == kStoreSchemaVersion) return;
  // An older schema: copied into memory and migrated there, the file left as it is.
  sqlite3* memory = nullptr;
  if (sqlite3_open(":memory:", &memory) != SQLITE_OK) {
    sqlite3_close(memory);
    throw std::runtime_error("sqlite: cannot open an in-memory database");
  }
  sqlite3_backup* copy = sqlite3_backup_init(memory, "main", db_, "main");
  const int rc = copy ? sqlite3_backup_step(copy, -1) : SQLITE_ERROR;
  sqlite3_backup_finish(copy);
  if (rc != SQLITE_DONE) {
    const std::string msg = sqlite3_errmsg(memory);
    sqlite3_close(memory);
    throw std::runtime_error("sqlite: cannot read the database into memory: " + msg);
  }
  sqlite3_close(db_);
  db_ = memory;
  exec("PRAGMA foreign_keys=ON");
  migrate(*version, false);
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
  Stmt v(db_, "SELECT value FROM meta WHERE key='schema_version'");
  if (!v.step()) return std::nullopt;
  const std::string text = v.text(0);
  int version = 0;
  try {
    version = std::stoi(text);
  } catch (const std::exception&) {
    version = 0;
  }
  if (version < 1 || version > kStoreSchemaVersion)
    throw InputError(path_ + ": results database schema version " + text + "; this balerbench reads 1 to " +
                         std::to_string(kStoreSchemaVersion),
                     "use the balerbench that wrote it (a newer one), or another --db path");
  return version;
}

Store::~Store() {
  if (db_) sqlite3_close(db_);
}

void Store::exec(const std::string& sql) const {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    const std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    throw std::runtime_error("sqlite: " + msg);
  }
}

void Store::migrate(int from_version, bool backup_first) {
  namespace fs = std::filesystem;
  // A consistent copy of the whole database (WAL included) before anything changes.
  const std::string backup = path_ + ".schema" + std::to_string(from_version) + ".bak";
  if (backup_first && !fs::exists(backup)) {
    // A temporary of this process's own: two runs opening one older database at once each make a
    // whole copy, and the first to finish names the backup.
    std::random_device rd;
    const std::string tmp = backup + ".partial-" + std::to_string(::getpid()) + "-" + std::to_string(rd());
    Stmt(db_, "VACUUM INTO ?").bind(1, tmp).run();
    if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, backup.c_str(), RENAME_NOREPLACE) != 0) {
      std::error_code ec;
      if (!fs::exists(backup, ec)) fs::rename(tmp, backup);  // a file system without RENAME_NOREPLACE
      fs::remove(tmp, ec);
    }
  }
  std::string what;
  exec("BEGIN IMMEDIATE");
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
  return s.step() ? parse_or_null(s.text(0)) : json(nullptr);
}

std::vector<std::string> Store::experiments() const {
  std::vector<std::string> out;
  Stmt s(db_, "SELECT experiment FROM trials GROUP BY experiment ORDER BY min(id)");
  while (s.step()) out.push_back(s.text(0));
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
    if (!disk) throw;  // a duplicate key, a bug: not a reason to stop a sweep with a disk hint
    throw StoreWriteError(path_ + ": could not store trial " + t.key + ": " + e.what() + " (hint: " + kDiskFullHint +
                          ": the trials stored so far are kept and the rest run)");
  }
}

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
    std::optional<Claim> existing;
    {
      Stmt q(db_,
             "SELECT host, boot_id, pid, pid_start, claimed_unix_s, heartbeat_unix_s FROM claims WHERE trial_key=?");
      q.bind(1, key);
      if (q.step()) existing = Claim{key, {q.text(0), q.text(1), q.integer(2), q.text(3)}, q.real(4), q.real(5)};
    }
    if (existing && !(existing->holder == me)) {
      if (alive(*existing)) {
        outcome.kind = ClaimOutcome::kHeldByOther;
        outcome.other = existing;
        exec("COMMIT");
        return outcome;
      }
      outcome.taken_over = existing;
    }
    const double now = now_unix_s();
    Stmt(db_,
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
    exec("COMMIT");
  } catch (const std::exception& e) {
    const bool disk = disk_error(db_);
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
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

void Store::close_as_single_file() {
  Stmt mode(db_, "PRAGMA journal_mode=DELETE");  // checkpoints the WAL into the file and removes it
  if (!mode.step() || mode.text(0) != "delete")
    throw std::runtime_error("sqlite: " + path_ + ": could not leave WAL mode (another connection holds it?)");
}

std::vector<TrialRecord> Store::trials(const std::string& experiment, bool children, bool samples) const {
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

std::pair<int64_t, int64_t> Store::merge_from(const Store& other) {
  // Everything is read from `other` before anything is written here, so that a damaged foreign file is
  // an InputError naming it (not an SQLite error read as this database's fault) and leaves this one as
  // it was.
  struct Experiment {
    std::string name, source, spec_json;
  };
  std::vector<Experiment> experiments;
  std::vector<TrialRecord> trials;
  try {
    // SQLite finds most damage only on the pages it reads, and a merge reads them all: check them first.
    {
      Stmt check(other.db_, "PRAGMA quick_check(1)");
      if (check.step() && check.text(0) != "ok")
        throw InputError(other.path_ + ": the file is damaged (SQLite's quick_check: " + check.text(0) + ")",
                         "restore it from a copy; sqlite3 FILE '.recover' may save what is left");
    }
    Stmt ex(other.db_, "SELECT name, source, spec_json FROM experiments");
    while (ex.step()) {
      Experiment e{ex.text(0), ex.text(1), ex.text(2)};
      try {
        parse_or_null(e.spec_json);
      } catch (const std::invalid_argument& bad) {
        throw InputError(other.path_ + ": experiment '" + e.name + "' spec_json " + bad.what(),
                         "the file was damaged or edited by hand; restore it or run its trials again");
      }
      experiments.push_back(std::move(e));
    }
    trials = other.trials("", true);
  } catch (const InputError&) {
    throw;
  } catch (const std::runtime_error& e) {
    throw InputError(other.path_ + ": cannot read it: " + e.what(),
                     "the file is damaged or not a balerbench database; check it with sqlite3 FILE 'PRAGMA "
                     "integrity_check'");
  }
  for (const Experiment& e : experiments)
    Stmt(db_, "INSERT OR IGNORE INTO experiments(name, source, spec_json, first_run_unix_s) VALUES(?,?,?,NULL)")
        .bind(1, e.name)
        .bind(2, e.source)
        .bind(3, e.spec_json)
        .run();
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
