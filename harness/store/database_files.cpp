// database_files.cpp: see database_files.h.
#include "harness/store/database_files.h"

#include <filesystem>
#include <vector>

#include "common/error.h"
#include "common/paths.h"
#include "harness/store/side_files.h"

namespace balerbench {
namespace {

namespace fs = std::filesystem;

// A database's file: its name is the database's followed by `tag` (exactly, or as a prefix).
struct DatabaseFile {
  const char* tag;
  bool prefix;
  const char* role;
};

// A role names the database as DB (but the database itself: the message names it already).
constexpr DatabaseFile kDatabaseFiles[] = {
    {"", false, "the results database itself"},
    {"-wal", false, "the write-ahead log of the results database DB (its latest trials may live only there)"},
    {"-shm", false, "the shared-memory index of the write-ahead log of the results database DB"},
    {"-journal", false, "the rollback journal of the results database DB"},
    {"-mj", true, "a super-journal of the results database DB"},
    {kSideFileTag, true, "a side file of the results database DB (a trial kept aside while it was locked)"},
    {kMergeTemporaryTag, true, "the temporary of a merge into the results database DB"},
};

// The role of the file named `name` among those of the database named `db_name` in the same folder.
const char* role_by_name(const std::string& name, const std::string& db_name) {
  if (db_name.empty() || name.compare(0, db_name.size(), db_name) != 0) return nullptr;
  const std::string tag = name.substr(db_name.size());
  for (const DatabaseFile& f : kDatabaseFiles)
    if (f.prefix ? tag.rfind(f.tag, 0) == 0 : tag == f.tag) return f.role;
  return nullptr;
}

// The database's place as SQLite opens it (every link followed; SQLite keeps -wal beside the file a
// link points to) and as balerbench names its side files (beside the path given, its folder resolved).
std::vector<fs::path> database_places(const std::string& db_path) {
  std::vector<fs::path> places{fs::path(resolved_path(db_path))};
  std::error_code ec;
  const fs::path given = fs::absolute(db_path, ec).lexically_normal();
  if (!ec && !given.filename().empty())
    places.push_back(fs::path(resolved_path(given.parent_path().string())) / given.filename());
  return places;
}

// `role` with the database's path in place of DB.
std::string with_database(const char* role, const std::string& db_path) {
  std::string text = role;
  const std::size_t at = text.find("DB");
  return at == std::string::npos ? text : text.replace(at, 2, db_path);
}

}  // namespace

std::string database_file_role(const std::string& db_path, const std::string& path) {
  const fs::path out(resolved_path(path));
  for (const fs::path& db : database_places(db_path))
    if (out.parent_path() == db.parent_path())
      if (const char* role = role_by_name(out.filename().string(), db.filename().string()))
        return with_database(role, db_path);
  // The same file under another name (a hard link): compared with the database's files that exist.
  std::error_code ec;
  if (!fs::exists(path, ec)) return "";
  std::vector<std::string> existing = side_files_of(db_path);
  for (const char* tag : {"", "-wal", "-shm", "-journal"}) existing.push_back(db_path + tag);
  const std::string db_name = fs::path(db_path).filename().string();
  for (const std::string& file : existing)
    if (fs::equivalent(path, file, ec) && !ec)
      if (const char* role = role_by_name(fs::path(file).filename().string(), db_name))
        return with_database(role, db_path);
  return "";
}

void check_output_is_not_database(const std::string& path, const std::string& option, const std::string& db_path) {
  const std::string role = database_file_role(db_path, path);
  if (role.empty()) return;
  throw InputError(option + " " + path + ": is " + role + "; writing there would lose trials",
                   "give " + option + " another file: the database and the files SQLite and balerbench keep beside "
                   "it (-wal, -shm, -journal, .unstored-*) are never outputs");
}

}  // namespace balerbench
