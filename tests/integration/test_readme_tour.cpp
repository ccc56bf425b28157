// test_readme_tour.cpp: the README's tour of the CLI, run as written. The ```sh block under "A tour of
// the CLI" is taken from README.md as it stands and run by bash, line after line in order, from a
// folder laid out as the repository's root (experiments/, scripts/ and build/ linked in), so that a
// command in the README that no longer runs, or runs only after something the README does not say,
// fails here.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/test_util.h"

namespace balerbench {
namespace {

namespace fs = std::filesystem;

// The ```sh block that follows `heading` in `text`, or "" when there is none.
std::string sh_block_after(const std::string& text, const std::string& heading) {
  const auto at = text.find(heading);
  if (at == std::string::npos) return "";
  const auto open = text.find("```sh\n", at);
  if (open == std::string::npos) return "";
  const auto begin = open + 6;
  const auto close = text.find("\n```", begin);
  return close == std::string::npos ? "" : text.substr(begin, close + 1 - begin);
}

TEST(ReadmeTour, EveryCommandRunsAsWrittenInOrder) {
  const std::string block = sh_block_after(read_text(source_dir() + "/README.md"), "## A tour of the CLI");
  ASSERT_FALSE(block.empty()) << "README.md has no ```sh block under '## A tour of the CLI'";
  ASSERT_NE(block.find("B=build/harness/balerbench"), std::string::npos) << block;
  TempDir dir;
  // The repository's root as the tour sees it: its inputs linked, the build where the README says.
  const fs::path build = fs::path(balerbench_binary()).parent_path().parent_path();
  fs::create_directory_symlink(source_dir() + "/experiments", dir.path("experiments"));
  fs::create_directory_symlink(source_dir() + "/scripts", dir.path("scripts"));
  fs::create_directory_symlink(build, dir.path("build"));
  // -x: each command is echoed (with a '+') before it runs, so a failure names its line.
  write_text(dir.path("tour.sh"), "set -euxo pipefail\n" + block);
  const CommandResult r = run_command("cd " + dir.root() + " && bash tour.sh");
  const std::string tail = r.out.size() > 6000 ? r.out.substr(r.out.size() - 6000) : r.out;
  ASSERT_EQ(r.exit_code, 0) << "the README's tour stopped at the last '+' line below:\n" << tail;
  // What the tour says its commands make.
  for (const char* made : {"output/data/cms_like.npz", "cfd.npz", "out/training/model.pt",
                           "out/compressed_output/compressed.npz", "out/decompressed_output/decompressed.npz", "m.json", "trace.json", "tour.sqlite", "s0.sqlite",
                           "s1.sqlite", "all.sqlite"})
    EXPECT_TRUE(fs::exists(dir.path(made))) << made << "\n" << tail;
  EXPECT_NE(r.out.find("merged 2 databases into all.sqlite"), std::string::npos) << tail;
}

}  // namespace
}  // namespace balerbench
