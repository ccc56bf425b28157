// store.cpp: see store.h.
#include "harness/store/store.h"

#include <sqlite3.h>

#include <filesystem>
#include <map>
#include <stdexcept>

#include "datasets/error.h"

namespace balerbench {
namespace {

using nlohmann::json;

const char* const kSchema = R"sql(
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS experiments(
  name TEXT PRIMARY KEY, source TEXT, spec_json TEXT NOT NULL, first_run_unix_s REAL);
CREATE TABLE IF NOT EXISTS trials(
  id INTEGER PRIMARY KEY, trial_key TEXT NOT NULL UNIQUE, experiment TEXT NOT NULL,
  grid_index INTEGER, repeat INTEGER, batch_size INTEGER, precision TEXT, power_limit_w REAL, epochs INTEGER,
  status TEXT NOT NULL, error TEXT, started_unix_s REAL, finished_unix_s REAL,
  train_s REAL, train_energy_j REAL, compress_s REAL, compress_energy_j REAL,
  decompress_s REAL, decompress_energy_j REAL, total_energy_j REAL, co2_g REAL,
  target_reached INTEGER, tta_s REAL, eta_j REAL, epochs_to_target INTEGER,
  max_power_w REAL, enforced_power_limit_w REAL, energy_kind TEXT, hardware TEXT,
  spec_json TEXT, result_json TEXT, provenance_json TEXT);
CREATE INDEX IF NOT EXISTS trials_experiment ON trials(experiment);
CREATE TABLE IF NOT EXISTS epochs(
  trial_id INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE, epoch INTEGER NOT NULL,
  train_loss REAL, val_loss REAL, relative_error REAL, lr REAL, duration_s REAL, elapsed_s REAL,
  energy_j REAL, target_met INTEGER, PRIMARY KEY(trial_id, epoch));
CREATE TABLE IF NOT EXISTS phases(
  trial_id INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE, phase TEXT NOT NULL, source TEXT NOT NULL,
  duration_s REAL, energy_j REAL, co2_g REAL, energy_kind TEXT, PRIMARY KEY(trial_id, source, phase));
CREATE TABLE IF NOT EXISTS power_samples(
  trial_id INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE, t_s REAL NOT NULL, phase TEXT, power_w REAL);
CREATE INDEX IF NOT EXISTS power_samples_trial ON power_samples(trial_id);
)sql";

// A prepared statement, finalized on scope exit.
class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s_, nullptr) != SQLITE_OK)
      throw std::runtime_error(std::string("sqlite: ") + sqlite3_errmsg(db) + " in: " + sql);
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
    throw std::runtime_error(std::string("sqlite: ") + sqlite3_errmsg(db_));
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

json parse_or_null(const std::string& text) {
  if (text.empty()) return nullptr;
  return json::parse(text, nullptr, false);
}

}  // namespace

Store::Store(const std::string& path, bool create) : path_(path) {
  namespace fs = std::filesystem;
  if (!create && !fs::exists(path))
    throw InputError(path + ": no such database", "run an experiment first (balerbench run EXPERIMENT.json)");
  if (create && fs::path(path).has_parent_path()) fs::create_directories(fs::path(path).parent_path());
  const int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0);
  if (sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
    const std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw InputError(path + ": cannot open the database: " + msg, "check the path and its permissions");
  }
  sqlite3_busy_timeout(db_, 10000);
  try {
    exec("PRAGMA foreign_keys=ON");
    {
      Stmt wal(db_, "PRAGMA journal_mode=WAL");
      wal.step();
    }
    exec("PRAGMA synchronous=NORMAL");
    std::optional<std::string> version;
    {
      Stmt has_meta(db_, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name='meta'");
      has_meta.step();
      if (has_meta.integer(0) > 0) {
        Stmt v(db_, "SELECT value FROM meta WHERE key='schema_version'");
        if (v.step()) version = v.text(0);
      } else {
        Stmt any(db_, "SELECT count(*) FROM sqlite_master WHERE type='table'");
        any.step();
        if (any.integer(0) > 0)
          throw InputError(path + ": an SQLite file that is not a balerbench results database",
                           "use another --db path");
      }
    }
    if (version && *version != std::to_string(kStoreSchemaVersion))
      throw InputError(path + ": results database schema version " + *version + ", this balerbench uses " +
                           std::to_string(kStoreSchemaVersion),
                       "use a database written by this version, or another --db path");
    if (!version) {
      exec("BEGIN IMMEDIATE");
      exec(kSchema);
      Stmt(db_, "INSERT OR REPLACE INTO meta(key, value) VALUES('schema_version', ?)")
          .bind(1, std::to_string(kStoreSchemaVersion))
          .run();
      exec("COMMIT");
    }
  } catch (const std::runtime_error& e) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw InputError(path + ": " + e.what(), "is it an SQLite database?");
  } catch (...) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw;
  }
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

std::set<std::string> Store::trial_keys(const std::string& status) const {
  std::set<std::string> out;
  Stmt s(db_, status.empty() ? "SELECT trial_key FROM trials" : "SELECT trial_key FROM trials WHERE status=?");
  if (!status.empty()) s.bind(1, status);
  while (s.step()) out.insert(s.text(0));
  return out;
}

int64_t Store::insert_trial(const TrialRecord& t, bool replace) {
  exec("BEGIN IMMEDIATE");
  try {
    if (replace) Stmt(db_, "DELETE FROM trials WHERE trial_key=?").bind(1, t.key).run();
    Stmt ins(db_,
             "INSERT INTO trials(trial_key, experiment, grid_index, repeat, batch_size, precision, power_limit_w, "
             "epochs, status, error, started_unix_s, finished_unix_s, train_s, train_energy_j, compress_s, "
             "compress_energy_j, decompress_s, decompress_energy_j, total_energy_j, co2_g, target_reached, tta_s, "
             "eta_j, epochs_to_target, max_power_w, enforced_power_limit_w, energy_kind, hardware, spec_json, "
             "result_json, provenance_json) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    ins.bind(1, t.key).bind(2, t.experiment).bind(3, t.grid_index).bind(4, t.repeat).bind(5, t.batch_size);
    ins.bind(6, t.precision).bind(7, t.power_limit_w).bind(8, t.epochs).bind(9, t.status).bind(10, t.error);
    ins.bind(11, t.started_unix_s).bind(12, t.finished_unix_s).bind(13, t.train_s).bind(14, t.train_energy_j);
    ins.bind(15, t.compress_s).bind(16, t.compress_energy_j).bind(17, t.decompress_s);
    ins.bind(18, t.decompress_energy_j).bind(19, t.total_energy_j).bind(20, t.co2_g).bind(21, t.target_reached);
    ins.bind(22, t.tta_s).bind(23, t.eta_j).bind(24, t.epochs_to_target).bind(25, t.max_power_w);
    ins.bind(26, t.enforced_power_limit_w).bind(27, t.energy_kind).bind(28, t.hardware).bind(29, t.spec.dump());
    ins.bind(30, t.result.dump()).bind(31, t.provenance.dump());
    ins.run();
    const int64_t id = sqlite3_last_insert_rowid(db_);
    Stmt ep(db_,
            "INSERT INTO epochs(trial_id, epoch, train_loss, val_loss, relative_error, lr, duration_s, elapsed_s, "
            "energy_j, target_met) VALUES(?,?,?,?,?,?,?,?,?,?)");
    for (const auto& e : t.epoch_rows) {
      ep.bind(1, id).bind(2, e.epoch).bind(3, e.train_loss).bind(4, e.val_loss).bind(5, e.relative_error);
      ep.bind(6, e.lr).bind(7, e.duration_s).bind(8, e.elapsed_s).bind(9, e.energy_j).bind(10, e.target_met);
      ep.run();
    }
    Stmt ph(db_,
            "INSERT INTO phases(trial_id, phase, source, duration_s, energy_j, co2_g, energy_kind) "
            "VALUES(?,?,?,?,?,?,?)");
    for (const auto& p : t.phases) {
      ph.bind(1, id).bind(2, p.phase).bind(3, p.source).bind(4, p.duration_s).bind(5, p.energy_j);
      ph.bind(6, p.co2_g).bind(7, p.energy_kind);
      ph.run();
    }
    Stmt sm(db_, "INSERT INTO power_samples(trial_id, t_s, phase, power_w) VALUES(?,?,?,?)");
    for (const auto& s : t.samples) {
      sm.bind(1, id).bind(2, s.t_s).bind(3, s.phase).bind(4, s.power_w);
      sm.run();
    }
    exec("COMMIT");
    return id;
  } catch (...) {
    exec("ROLLBACK");
    throw;
  }
}

std::vector<TrialRecord> Store::trials(const std::string& experiment, bool children, bool samples) const {
  std::vector<TrialRecord> out;
  Stmt s(db_, std::string("SELECT id, trial_key, experiment, grid_index, repeat, batch_size, precision, "
                          "power_limit_w, epochs, status, error, started_unix_s, finished_unix_s, train_s, "
                          "train_energy_j, compress_s, compress_energy_j, decompress_s, decompress_energy_j, "
                          "total_energy_j, co2_g, target_reached, tta_s, eta_j, epochs_to_target, max_power_w, "
                          "enforced_power_limit_w, energy_kind, hardware, spec_json, result_json, provenance_json "
                          "FROM trials") +
                  (experiment.empty() ? "" : " WHERE experiment=?") + " ORDER BY id");
  if (!experiment.empty()) s.bind(1, experiment);
  std::map<int64_t, std::size_t> by_id;
  while (s.step()) {
    TrialRecord t;
    t.id = s.integer(0);
    t.key = s.text(1);
    t.experiment = s.text(2);
    t.grid_index = s.integer(3);
    t.repeat = s.integer(4);
    t.batch_size = s.integer(5);
    t.precision = s.text(6);
    t.power_limit_w = s.opt_real(7);
    t.epochs = s.integer(8);
    t.status = s.text(9);
    t.error = s.text(10);
    t.started_unix_s = s.real(11);
    t.finished_unix_s = s.real(12);
    t.train_s = s.opt_real(13);
    t.train_energy_j = s.opt_real(14);
    t.compress_s = s.opt_real(15);
    t.compress_energy_j = s.opt_real(16);
    t.decompress_s = s.opt_real(17);
    t.decompress_energy_j = s.opt_real(18);
    t.total_energy_j = s.opt_real(19);
    t.co2_g = s.opt_real(20);
    t.target_reached = s.integer(21) != 0;
    t.tta_s = s.opt_real(22);
    t.eta_j = s.opt_real(23);
    t.epochs_to_target = s.opt_int(24);
    t.max_power_w = s.opt_real(25);
    t.enforced_power_limit_w = s.opt_real(26);
    t.energy_kind = s.text(27);
    t.hardware = s.text(28);
    t.spec = parse_or_null(s.text(29));
    t.result = parse_or_null(s.text(30));
    t.provenance = parse_or_null(s.text(31));
    by_id[t.id] = out.size();
    out.push_back(std::move(t));
  }
  if (!children || out.empty()) return out;
  const std::string where = experiment.empty() ? "" : " WHERE trial_id IN (SELECT id FROM trials WHERE experiment=?)";
  Stmt ep(db_,
          "SELECT trial_id, epoch, train_loss, val_loss, relative_error, lr, duration_s, elapsed_s, energy_j, "
          "target_met FROM epochs" +
              where + " ORDER BY trial_id, epoch");
  if (!experiment.empty()) ep.bind(1, experiment);
  while (ep.step()) {
    EpochRow e;
    e.epoch = ep.integer(1);
    e.train_loss = ep.real(2);
    e.val_loss = ep.real(3);
    e.relative_error = ep.opt_real(4);
    e.lr = ep.real(5);
    e.duration_s = ep.real(6);
    e.elapsed_s = ep.real(7);
    e.energy_j = ep.opt_real(8);
    e.target_met = ep.integer(9) != 0;
    out[by_id.at(ep.integer(0))].epoch_rows.push_back(e);
  }
  Stmt ph(db_, "SELECT trial_id, phase, source, duration_s, energy_j, co2_g, energy_kind FROM phases" + where +
                   " ORDER BY rowid");
  if (!experiment.empty()) ph.bind(1, experiment);
  while (ph.step()) {
    PhaseRow p;
    p.phase = ph.text(1);
    p.source = ph.text(2);
    p.duration_s = ph.real(3);
    p.energy_j = ph.opt_real(4);
    p.co2_g = ph.opt_real(5);
    p.energy_kind = ph.text(6);
    out[by_id.at(ph.integer(0))].phases.push_back(p);
  }
  if (!samples) return out;
  Stmt sm(db_, "SELECT trial_id, t_s, phase, power_w FROM power_samples" + where + " ORDER BY rowid");
  if (!experiment.empty()) sm.bind(1, experiment);
  while (sm.step()) out[by_id.at(sm.integer(0))].samples.push_back({sm.real(1), sm.text(2), sm.real(3)});
  return out;
}

std::pair<int64_t, int64_t> Store::merge_from(const Store& other) {
  int64_t copied = 0, duplicates = 0;
  {
    Stmt ex(other.db_, "SELECT name, source, spec_json FROM experiments");
    while (ex.step())
      Stmt(db_, "INSERT OR IGNORE INTO experiments(name, source, spec_json, first_run_unix_s) VALUES(?,?,?,NULL)")
          .bind(1, ex.text(0))
          .bind(2, ex.text(1))
          .bind(3, ex.text(2))
          .run();
  }
  std::set<std::string> here = trial_keys();
  for (const TrialRecord& t : other.trials("", true)) {
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
