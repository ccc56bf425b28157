// database_files.h: the files that make up a results database on disk, and the check that keeps
// every output off them. Beside DB, SQLite keeps DB-wal (the write-ahead log: the latest trials live
// there until a checkpoint copies them into DB), DB-shm, DB-journal and super-journals DB-mj*;
// balerbench keeps side files DB.unstored-* (side_files.h) and a merge into DB its temporaries
// DB.partial-*. A report, a page or a merged database written over any of them loses trials, so an
// output that names one, however spelled (links, `..`, a hard link), is refused before any work.
#pragma once

#include <string>

namespace balerbench {

// The tag of a side file's name, after the database's: DB.unstored-KEY-PID.sqlite.
inline constexpr char kSideFileTag[] = ".unstored-";
// The tag of a merge's temporary, after its output's name: OUT.partial-HOST-PID-TAG.
inline constexpr char kMergeTemporaryTag[] = ".partial-";

// What `path` is among the files of the results database `db_path` ("the write-ahead log of the
// results database"), or "" when it is none of them. The database is taken both as SQLite opens it
// (links followed) and as balerbench names its side files (beside `db_path` as given).
std::string database_file_role(const std::string& db_path, const std::string& path);

// InputError (exit 2) when the output `path`, given to `option` ("--out"), is one of the files of the
// results database `db_path`; its message says which and why that would lose trials.
void check_output_is_not_database(const std::string& path, const std::string& option, const std::string& db_path);

}  // namespace balerbench
