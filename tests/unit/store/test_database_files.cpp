// test_database_files.cpp: the files that make up a results database on disk (database_files.h): an
// output that names one of them, however spelled, is refused; one whose name only begins like them
// is not.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "harness/store/database_files.h"
#include "harness/store/store.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

namespace fs = std::filesystem;

TEST(DatabaseFiles, EveryFileOfTheDatabaseHasARole) {
  TempDir d;
  const std::string db = d.path("w.sqlite");
  EXPECT_EQ(database_file_role(db, db), "the results database itself");
  EXPECT_NE(database_file_role(db, db + "-wal").find("write-ahead log"), std::string::npos);
  EXPECT_NE(database_file_role(db, db + "-shm").find("shared-memory index"), std::string::npos);
  EXPECT_NE(database_file_role(db, db + "-journal").find("rollback journal"), std::string::npos);
  EXPECT_NE(database_file_role(db, db + "-mj1A2B3C4D").find("super-journal"), std::string::npos);
  EXPECT_NE(database_file_role(db, db + ".unstored-0123456789ab-42.sqlite").find("side file"), std::string::npos);
  EXPECT_NE(database_file_role(db, db + ".unstored-0123456789ab-42.sqlite-wal").find("side file"), std::string::npos);
  EXPECT_NE(database_file_role(db, db + ".partial-host-1-abc").find("merge"), std::string::npos);
  // Names that only begin as the database's do, or lie elsewhere, are outputs like any other.
  for (const std::string& other : {db + ".html", db + "-wal.html", db + "-walx", d.path("w.sqlit"),
                                   d.path("sub/w.sqlite-wal"), d.path("x.sqlite-wal"), db + ".md"})
    EXPECT_EQ(database_file_role(db, other), "") << other;
}

TEST(DatabaseFiles, SpellingsLinksAndHardLinksAreSeenThrough) {
  TempDir d;
  fs::create_directories(d.path("real"));
  fs::create_directories(d.path("sub"));
  { Store s(d.path("real/w.sqlite")); }
  write_text(d.path("real/w.sqlite-wal"), "trials");
  const std::string db = d.path("real/w.sqlite");
  EXPECT_NE(database_file_role(db, d.path("sub/../real/w.sqlite-wal")), "");
  EXPECT_NE(database_file_role(d.path("real/./w.sqlite"), d.path("real/w.sqlite-wal")), "");
  // A link at the output: it would be written through.
  fs::create_symlink("real/w.sqlite-wal", d.path("out.html"));
  EXPECT_NE(database_file_role(db, d.path("out.html")), "");
  // A hard link to the write-ahead log.
  fs::create_hard_link(d.path("real/w.sqlite-wal"), d.path("sub/hard.html"));
  EXPECT_NE(database_file_role(db, d.path("sub/hard.html")), "");
  // The database given through a link: SQLite keeps its -wal beside the file the link points to, and
  // balerbench its side files beside the link.
  fs::create_symlink("real/w.sqlite", d.path("link.sqlite"));
  EXPECT_NE(database_file_role(d.path("link.sqlite"), d.path("real/w.sqlite-wal")), "");
  EXPECT_NE(database_file_role(d.path("link.sqlite"), d.path("link.sqlite.unstored-k-1.sqlite")), "");
  EXPECT_NE(database_file_role(d.path("link.sqlite"), d.path("link.sqlite-wal")), "");
  // A folder given through a link.
  fs::create_directory_symlink("real", d.path("alias"));
  EXPECT_NE(database_file_role(d.path("alias/w.sqlite"), d.path("real/w.sqlite-shm")), "");
  EXPECT_NE(database_file_role(db, d.path("alias/w.sqlite-journal")), "");
}

TEST(DatabaseFiles, TheCheckIsAnInputErrorThatSaysWhichFileAndWhy) {
  TempDir d;
  const std::string db = d.path("w.sqlite");
  expect_input_error([&] { check_output_is_not_database(db + "-wal", "--out", db); },
                     "--out " + db + "-wal: is the write-ahead log of the results database " + db);
  expect_input_error([&] { check_output_is_not_database(db + "-wal", "--out", db); },
                     "writing there would lose trials");
  expect_input_error([&] { check_output_is_not_database(db, "--html", db); },
                     "--html " + db + ": is the results database itself; writing there would lose trials");
  check_output_is_not_database(d.path("report.html"), "--out", db);
}

}  // namespace
}  // namespace balerbench
