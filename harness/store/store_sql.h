// store_sql.h: what the results database's files (store.cpp, store_schema.cpp, store_claims.cpp)
// share: SQLite errors and statements, and the tables' columns, listed once so that the schema,
// the inserts and the selects are made from one list. Internal to store/.
#pragma once

#include <sqlite3.h>

#include <nlohmann/json.hpp>

#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/text.h"
#include "harness/store/store.h"

namespace balerbench {
namespace store_sql {


using nlohmann::json;

inline bool busy_error(sqlite3* db) {
  const int code = sqlite3_errcode(db) & 0xff;  // the primary result code
  return code == SQLITE_BUSY || code == SQLITE_LOCKED;
}

// What a lock held by another program needs from the user.
inline constexpr char kLockedHint[] =
    "another program holds a write lock on it (an sqlite3 shell inside BEGIN, a backup tool): end its transaction, "
    "then run the same command again";

// Whether the file at `path` begins as every SQLite database does ("SQLite format 3" and a NUL), and
// what it looks like when it does not; true when it cannot be read (nothing is claimed then).
inline bool has_sqlite_header(const std::string& path, std::string* looks_like) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return true;
  char head[16] = {};
  const std::size_t n = std::fread(head, 1, sizeof head, f);
  std::fclose(f);
  if (n == sizeof head && std::memcmp(head, "SQLite format 3", sizeof head) == 0) return true;
  std::size_t i = 0;
  while (i < n && std::isspace(static_cast<unsigned char>(head[i]))) ++i;
  *looks_like = i < n && (head[i] == '{' || head[i] == '[') ? "it holds JSON: an experiment or config file?"
                : i + 1 < n && head[i] == 'P' && head[i + 1] == 'K' ? "it is a ZIP file: an .npz data file?"
                                                                    : "its first bytes are not SQLite's";
  return false;
}

// A damaged file (SQLITE_CORRUPT, SQLITE_NOTADB) is the user's to mend, so an InputError that names
// it, wherever it is found; a lock held by another connection past the busy timeout is a
// StoreBusyError; every other SQLite failure stays a runtime_error for the caller to place.
[[noreturn]] inline void throw_sqlite(sqlite3* db, const std::string& context) {
  const int code = sqlite3_errcode(db) & 0xff;  // the primary result code
  const std::string msg = std::string("sqlite: ") + sqlite3_errmsg(db) + context;
  const char* file = sqlite3_db_filename(db, "main");
  const std::string name = file && *file ? file : "results database";
  std::string looks_like;
  if (code == SQLITE_NOTADB && file && *file && !has_sqlite_header(file, &looks_like))
    throw InputError(name + ": is not an SQLite database (" + looks_like + "); it is left as it is",
                     "give a results database, as `balerbench run` writes it (a new file name makes a new one, "
                     "e.g. --db results/NAME.sqlite)");
  if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB)
    throw InputError(name + ": the file is damaged (" + msg + ")",
                     "restore it from a copy, or check it with sqlite3 FILE 'PRAGMA integrity_check'");
  if (code == SQLITE_BUSY || code == SQLITE_LOCKED)
    throw StoreBusyError(name + ": the database stayed locked by another connection (" + msg + ") (hint: " +
                         kLockedHint + ")");
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
  int type(int c) const { return sqlite3_column_type(s_, c); }
  int bytes(int c) const { return sqlite3_column_bytes(s_, c); }
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

// The statements run while it lives see one state of the file: a savepoint, which opens a (read)
// transaction when none is open, so that another process's commit between two of them (a trial's row
// in one, its epochs in the next) is seen by both or neither. Released on scope exit.
class ReadSnapshot {
 public:
  explicit ReadSnapshot(sqlite3* db) : db_(db) { Stmt(db_, "SAVEPOINT balerbench_read").run(); }
  ~ReadSnapshot() { sqlite3_exec(db_, "RELEASE balerbench_read", nullptr, nullptr, nullptr); }
  ReadSnapshot(const ReadSnapshot&) = delete;
  ReadSnapshot& operator=(const ReadSnapshot&) = delete;

 private:
  sqlite3* db_;
};

// What a full disk or a file-size limit needs from the user (SQLITE_FULL, SQLITE_IOERR).
inline constexpr char kDiskFullHint[] =
    "the disk may be full or a file-size limit reached; make room and run the same command again";

inline bool disk_error(sqlite3* db) {
  const int code = sqlite3_errcode(db) & 0xff;  // the primary result code
  return code == SQLITE_FULL || code == SQLITE_IOERR;
}

// Empty text is null; text that is not JSON is an error (a damaged or hand-edited database), never a
// value that reads as something else downstream.
inline json parse_or_null(const std::string& text) {
  if (text.empty()) return nullptr;
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded())
    throw std::invalid_argument("holds text that is not JSON: '" + (text.size() > 60 ? text.substr(0, 57) + "..." : text) +
                                "'");
  return j;
}

// ---- the columns, listed once: the schema, the inserts and the selects are made from these ----

// A value as a statement binds it and a row gives it back.
inline void put(Stmt& s, int i, const std::string& v) { s.bind(i, v); }
inline void put(Stmt& s, int i, double v) { s.bind(i, v); }
inline void put(Stmt& s, int i, int64_t v) { s.bind(i, v); }
inline void put(Stmt& s, int i, bool v) { s.bind(i, v); }
inline void put(Stmt& s, int i, const std::optional<double>& v) { s.bind(i, v); }
inline void put(Stmt& s, int i, const std::optional<int64_t>& v) { s.bind(i, v); }
inline void put(Stmt& s, int i, const json& v) { s.bind(i, v.dump()); }
// A stored value as an error shows it: text cut short and on one line, a number as SQLite has it.
inline std::string stored_text(const Stmt& s, int c) {
  if (s.type(c) == SQLITE_BLOB) return "a blob of " + std::to_string(s.bytes(c)) + " bytes";
  if (s.type(c) == SQLITE_TEXT) return "the text '" + message_text(s.text(c), 60) + "'";
  return json(s.real(c)).dump();
}

// A number where the schema has one. SQLite converts text that reads as a number when it is stored, so
// text or a blob in a number's column is damage (sqlite3_column_double would read 'abc' as 0); so is a
// fraction in a whole number's column. (An infinity may be a measured loss; the columns with a range,
// below, refuse it.)
inline double stored_real(const Stmt& s, int c) {
  const int type = s.type(c);
  if (type == SQLITE_TEXT || type == SQLITE_BLOB) throw std::invalid_argument("holds " + stored_text(s, c) + ", not a number");
  return s.real(c);
}
inline int64_t stored_integer(const Stmt& s, int c) {
  const int type = s.type(c);
  if (type == SQLITE_TEXT || type == SQLITE_BLOB) throw std::invalid_argument("holds " + stored_text(s, c) + ", not a number");
  if (type == SQLITE_FLOAT && s.real(c) != static_cast<double>(s.integer(c)))
    throw std::invalid_argument("holds " + stored_text(s, c) + ", not a whole number");
  return s.integer(c);
}

inline void get(const Stmt& s, int c, std::string& v) { v = s.text(c); }
inline void get(const Stmt& s, int c, double& v) { v = s.null(c) ? 0 : stored_real(s, c); }
inline void get(const Stmt& s, int c, int64_t& v) { v = s.null(c) ? 0 : stored_integer(s, c); }
inline void get(const Stmt& s, int c, bool& v) { v = (s.null(c) ? 0 : stored_integer(s, c)) != 0; }
inline void get(const Stmt& s, int c, std::optional<double>& v) {
  v = s.null(c) ? std::nullopt : std::optional<double>(stored_real(s, c));
}
inline void get(const Stmt& s, int c, std::optional<int64_t>& v) {
  v = s.null(c) ? std::nullopt : std::optional<int64_t>(stored_integer(s, c));
}
inline void get(const Stmt& s, int c, json& v) { v = parse_or_null(s.text(c)); }
inline void put(Stmt& s, int i, TrialStatus v) { s.bind(i, trial_status_name(v)); }
inline void get(const Stmt& s, int c, TrialStatus& v) { v = parse_trial_status(s.text(c)); }

// One column of a table of records R: its name, its SQL type, and the record's member.
template <typename R>
struct Column {
  using Record = R;
  const char* name;
  const char* sql;  // type and constraints
  std::function<void(Stmt&, int, const R&)> bind;
  std::function<void(const Stmt&, int, R&)> read;
};

// The hint of every damaged column.
inline constexpr char kDamagedColumnHint[] = "the file was damaged or edited by hand; restore it or run the trials again";

template <typename R, typename T>
Column<R> column(const char* name, const char* sql, T R::*member) {
  return {name, sql, [member](Stmt& s, int i, const R& r) { put(s, i, r.*member); },
          [member, name](const Stmt& s, int c, R& r) {
            try {
              get(s, c, r.*member);
            } catch (const std::invalid_argument& e) {
              throw InputError(std::string("column ") + name + " " + e.what(), kDamagedColumnHint);
            }
          }};
}

// The range a number's column can hold: `what` says it ("a time from 1970 to the year 9999").
struct StoredRange {
  double min_value, max_value;
  const char* what;
};
inline constexpr StoredRange kUnixTimeRange{0, 253402300799.0, "a time from 1970 to the year 9999"};
inline constexpr StoredRange kDurationRange{0, 1e9, "a duration from 0 to 1e9 s"};
inline constexpr StoredRange kWattsRange{0, 1e6, "a power from 0 to 1e6 W"};
inline constexpr StoredRange kBatchSizeRange{1, 9e15, "a batch size of at least 1"};
inline constexpr StoredRange kEpochsRange{0, 9e15, "a number of epochs of 0 or more"};

// A number's column whose values outside `range` are damage (a start time of 1e300 s would print as a
// date of the year -219246529).
template <typename R, typename T>
Column<R> column(const char* name, const char* sql, T R::*member, StoredRange range) {
  Column<R> col = column(name, sql, member);
  col.read = [read = col.read, member, name, range](const Stmt& s, int c, R& r) {
    read(s, c, r);
    const std::optional<double> v = r.*member;
    if (v && (*v < range.min_value || *v > range.max_value))
      throw InputError(std::string("column ") + name + " holds " + json(*v).dump() + ", not " + range.what,
                       kDamagedColumnHint);
  };
  return col;
}

// A loss's column: SQLite stores NaN (a diverged training's loss) as null, read back as NaN, never as
// a loss of 0.
template <typename R>
Column<R> loss_column(const char* name, const char* sql, double R::*member) {
  Column<R> col = column(name, sql, member);
  col.read = [read = col.read, member](const Stmt& s, int c, R& r) {
    if (s.null(c)) r.*member = std::nan("");
    else read(s, c, r);
  };
  return col;
}

// A name's column (an experiment's): text with none of text.h's hidden characters, which would hide
// or reorder it in tables, pages and file names.
template <typename R>
Column<R> name_column(const char* name, const char* sql, std::string R::*member) {
  Column<R> col = column(name, sql, member);
  col.read = [read = col.read, member, name](const Stmt& s, int c, R& r) {
    read(s, c, r);
    if (const std::string problem = hidden_character_problem(r.*member); !problem.empty())
      throw InputError(std::string("column ") + name + " holds the name '" + message_text(r.*member, 60) + "', which " +
                           problem,
                       kDamagedColumnHint);
  };
  return col;
}

// The columns of each table after its key (the trials table after `id INTEGER PRIMARY KEY`).
const std::vector<Column<TrialRecord>>& trial_columns();
const std::vector<Column<EpochRow>>& epoch_columns();
const std::vector<Column<PhaseRow>>& phase_columns();
const std::vector<Column<SampleRow>>& sample_columns();

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
std::string schema_sql();

// Forward migrations: `sql` takes a database of version to_version - 1 to to_version. Each must
// leave the tables exactly as schema_sql() makes them for to_version (a test compares the two).
struct Migration {
  int to_version;
  const char* what;
  const char* sql;
  const char* table;   // the table the migration adds a column to
  const char* column;  // and that column: a file of an older schema lacks it
};
const std::vector<Migration>& migrations();

// The claims of trials being run (Store::claim_trial). Not part of the results: a writer makes the
// table when it opens the file, and merge never copies it.
inline constexpr char kClaimsSql[] =
    "CREATE TABLE IF NOT EXISTS claims(trial_key TEXT PRIMARY KEY, host TEXT NOT NULL, boot_id TEXT NOT NULL, "
    "pid INTEGER NOT NULL, pid_start TEXT NOT NULL, claimed_unix_s REAL NOT NULL, heartbeat_unix_s REAL NOT NULL)";

inline double now_unix_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace store_sql
}  // namespace balerbench
