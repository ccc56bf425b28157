// test_paths.cpp: the user's paths (datasets/paths.h), write_file_atomic's
// failures, and experiment names that must stay file names.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "datasets/npy.h"
#include "common/paths.h"
#include "harness/sweep/experiment.h"
#include "tests/test_util.h"
#include "common/atomic_file.h"

namespace balerbench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TEST(SafeFileName, KeepsPortableCharactersAndNeverLeavesTheFolder) {
  EXPECT_EQ(safe_file_name("t3_precision-cpu.v2+x"), "t3_precision-cpu.v2+x");
  EXPECT_EQ(safe_file_name("a/b"), "a_b");
  EXPECT_EQ(safe_file_name("a\\b c"), "a_b_c");
  EXPECT_EQ(safe_file_name("../../escaped"), "_.._.._escaped");
  EXPECT_EQ(safe_file_name(std::string("a\0b\n", 4)), "a_b_");
  EXPECT_EQ(safe_file_name("\xc3\xa9t\xc3\xa9"), "\xc3\xa9t\xc3\xa9");  // UTF-8 characters are kept
  EXPECT_EQ(safe_file_name("\xe6\x97\xa5\xe6\x9c\xac-run"), "\xe6\x97\xa5\xe6\x9c\xac-run");
  EXPECT_EQ(safe_file_name("\xc3t"), "_t");             // a lead byte without its continuation
  EXPECT_EQ(safe_file_name("\xc0\xaf"), "__");         // an overlong '/'
  EXPECT_EQ(safe_file_name("\xed\xa0\x80"), "___");   // a surrogate
  EXPECT_EQ(safe_file_name("\xc2\x85x"), "__x");       // U+0085, a control character
  EXPECT_EQ(safe_file_name(""), "_");
  EXPECT_EQ(safe_file_name("."), "_.");
  EXPECT_EQ(safe_file_name(".."), "_..");
  EXPECT_EQ(safe_file_name(".hidden"), "_.hidden");
}

TEST(OutputPaths, AFolderUnderARegularFileIsAnInputErrorNamingIt) {
  TempDir dir;
  write_text(dir.path("afile"), "x");
  expect_input_error([&] { check_output_folder(dir.path("afile")); }, "afile: is not a folder");
  expect_input_error([&] { check_output_folder(dir.path("afile/sub/deeper")); }, "afile is not a folder");
  expect_input_error([&] { create_output_folder(dir.path("afile/sub")); }, "afile is not a folder");
  expect_input_error([&] { check_output_file(dir.path("afile/x.json")); }, "x.json: " + dir.path("afile") + " is not a folder");
  fs::create_directories(dir.path("folder"));
  expect_input_error([&] { check_output_file(dir.path("folder")); }, "is a folder, not a file");
  // What does not exist yet but can be created passes, and nothing is created by a check.
  check_output_folder(dir.path("new/deeper"));
  check_output_file(dir.path("new/deeper/x.json"));
  check_output_file("relative-name.json");
  EXPECT_FALSE(fs::exists(dir.path("new")));
  create_output_folder(dir.path("new/deeper"));
  EXPECT_TRUE(fs::is_directory(dir.path("new/deeper")));
}

TEST(OutputPaths, WriteFileAtomicTurnsPathErrorsIntoInputErrors) {
  TempDir dir;
  write_text(dir.path("afile"), "x");
  const std::vector<uint8_t> bytes = {1, 2, 3};
  expect_input_error([&] { write_file_atomic(dir.path("afile/x.bin"), bytes); }, "afile is not a folder");
  expect_input_error([&] { write_file_atomic(dir.path("afile/sub/x.bin"), bytes); }, "afile is not a folder");
  fs::create_directories(dir.path("folder"));
  expect_input_error([&] { write_file_atomic(dir.path("folder"), bytes); }, "is a folder, not a file");
  EXPECT_EQ(read_text(dir.path("afile")), "x");
  write_file_atomic(dir.path("made/here/x.bin"), bytes);
  EXPECT_EQ(fs::file_size(dir.path("made/here/x.bin")), 3u);
}

// Under a file-size limit (SIGXFSZ ignored, as balerbench's main does), in a child process: a
// WriteError (exit code 4 in main) naming the file, and no temporary file left behind.
TEST(OutputPaths, WriteFileAtomicUnderAFileSizeLimitIsAWriteErrorAndLeavesNothing) {
  TempDir dir;
  const std::string path = dir.path("big.bin");
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit = {4096, 4096};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    try {
      write_file_atomic(path, std::vector<uint8_t>(100000, 7));
    } catch (const WriteError& e) {
      const std::string what = e.what();
      _exit(what.find("big.bin: write failed: File too large") != std::string::npos &&
                    what.find("file-size limit") != std::string::npos
                ? 0
                : 2);
    } catch (...) {
      _exit(3);
    }
    _exit(4);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "2: other message, 3: other exception, 4: no exception";
  EXPECT_TRUE(fs::is_empty(dir.root())) << "the temporary file is removed";
}

// A link at an output is followed to its file; a loop of links is an error, not a file put in its place.
TEST(OutputPaths, ALinkIsFollowedAndALoopOfLinksIsRefused) {
  TempDir d;
  std::filesystem::create_symlink("target.sqlite", d.path("link.sqlite"));
  EXPECT_EQ(output_target(d.path("link.sqlite")), d.path("target.sqlite"));
  std::filesystem::create_symlink("loop2", d.path("loop1"));
  std::filesystem::create_symlink("loop1", d.path("loop2"));
  expect_input_error([&] { output_target(d.path("loop1")); }, "a loop of links?");
  expect_input_error([&] { check_output_file(d.path("loop1")); }, "a loop of links?");
}

// One file however its path is spelled: `..`, a link at the file or at a folder above it, a hard link;
// an output that names an input so is refused, one beside it is not.
TEST(OutputPaths, AnOutputThatNamesAnInputIsRefusedHoweverSpelled) {
  TempDir d;
  write_text(d.path("exp.json"), "{}");
  fs::create_directories(d.path("sub"));
  fs::create_symlink("exp.json", d.path("link.json"));
  fs::create_directory_symlink(d.root(), d.path("sub/up"));
  fs::create_hard_link(d.path("exp.json"), d.path("hard.json"));
  for (const std::string& same : {d.path("exp.json"), d.path("sub/../exp.json"), d.path("./exp.json"),
                                  d.path("link.json"), d.path("sub/up/exp.json"), d.path("hard.json")}) {
    EXPECT_TRUE(same_file(same, d.path("exp.json"))) << same;
    expect_input_error([&] { check_output_is_not_input(same, "--html", d.path("exp.json"), "the experiment file"); },
                       "--html " + same + ": is the experiment file (" + d.path("exp.json") + "), which this command reads");
  }
  for (const std::string& other : {d.path("exp.json.html"), d.path("sub/exp.json"), d.path("new/exp.json")}) {
    EXPECT_FALSE(same_file(other, d.path("exp.json"))) << other;
    check_output_is_not_input(other, "--html", d.path("exp.json"), "the experiment file");
  }
  // A link that dangles names the file it would create; an empty path (an option not given) is no output.
  fs::create_symlink("later.json", d.path("dangling.json"));
  EXPECT_TRUE(same_file(d.path("dangling.json"), d.path("later.json")));
  check_output_is_not_input("", "--html", d.path("exp.json"), "the experiment file");
  check_output_is_not_input(d.path("exp.json"), "--html", "", "the experiment file");
  EXPECT_EQ(resolved_path(d.path("sub/up/sub/../link.json")), fs::canonical(d.path("exp.json")).string());
}

TEST(InputPaths, AFolderOrAMissingFileIsAnInputError) {
  TempDir dir;
  expect_input_error([&] { check_input_file(dir.root(), "config file"); }, "is a folder (config file expected)");
  expect_input_error([&] { check_input_file(dir.path("none.json"), "config file"); }, "config file not found");
  expect_input_error([&] { load_experiment(dir.root()); }, "is a folder (experiment file expected)");
  expect_input_error([&] { read_npy(dir.root()); }, "is a folder");
  write_text(dir.path("ok.json"), "{}");
  check_input_file(dir.path("ok.json"), "config file");
}

}  // namespace
}  // namespace balerbench
