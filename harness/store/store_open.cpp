// store_open.cpp: opening the results database (store.h): the path's checks, read-write with the
// schema made or migrated, and read-only without changing the file or its folder.
#include <sqlite3.h>

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <stdexcept>

#include "common/error.h"
#include "harness/store/store.h"
#include "harness/store/store_sql.h"

namespace balerbench {

using namespace store_sql;

std::size_t sqlite_path_bytes(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path full = fs::weakly_canonical(fs::absolute(path, ec), ec);
  return ec ? path.size() : full.native().size();
}

namespace {

void check_sqlite_path_length(const std::string& path) {
  const std::size_t bytes = sqlite_path_bytes(path);
  if (bytes <= kSqliteMaxPathBytes) return;
  throw InputError(path + ": its full path is " + std::to_string(bytes) +
                       " bytes, and SQLite opens a database only by a full path of at most " +
                       std::to_string(kSqliteMaxPathBytes) + " bytes",
                   "give a shorter path (SQLite follows links to their end, so a link does not shorten it)");
}

}  // namespace

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
  check_sqlite_path_length(path);
  // A constructor that throws runs no destructor: what was opened is closed here.
  const auto close_all = [this] {
    sqlite3_close(db_);
    db_ = nullptr;
  };
  try {
    if (read_only_)
      open_read_only();
    else
      open(access);
  } catch (const InputError&) {
    close_all();
    throw;
  } catch (const StoreBusyError& e) {
    close_all();
    if (read_only_) throw InputError(std::string(e.what()));  // nothing of this command is lost; the hint is in it
    throw;
  } catch (const std::runtime_error& e) {
    const bool disk = db_ && disk_error(db_);
    close_all();
    // A full disk while the database is made is a write that failed (exit code 4), not the input's fault.
    if (disk && !read_only_)
      throw StoreWriteError(path + ": " + e.what() + " (hint: " + kDiskFullHint + ")", e.what());
    throw InputError(path + ": " + e.what(), "is it an SQLite database?");
  } catch (...) {
    close_all();
    throw;
  }
}

namespace {

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

// A new in-memory database holding all of `db`'s main database.
sqlite3* copy_into_memory(sqlite3* db) {
  sqlite3* memory = nullptr;
  if (sqlite3_open(":memory:", &memory) != SQLITE_OK) {
    sqlite3_close(memory);
    throw std::runtime_error("sqlite: cannot open an in-memory database");
  }
  sqlite3_backup* copy = sqlite3_backup_init(memory, "main", db, "main");
  const int rc = copy ? sqlite3_backup_step(copy, -1) : SQLITE_ERROR;
  sqlite3_backup_finish(copy);
  if (rc != SQLITE_DONE) {
    const std::string msg = sqlite3_errmsg(memory);
    sqlite3_close(memory);
    throw std::runtime_error("sqlite: cannot read the database into memory: " + msg);
  }
  return memory;
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
  sqlite3_busy_timeout(db_, static_cast<int>(kStoreBusyTimeoutS * 1000));
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
    sqlite3_busy_timeout(db_, static_cast<int>(kStoreBusyTimeoutS * 1000));
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
  sqlite3* memory = copy_into_memory(db_);
  sqlite3_close(db_);
  db_ = memory;
  exec("PRAGMA foreign_keys=ON");
  migrate(*version, false);
}

}  // namespace balerbench
