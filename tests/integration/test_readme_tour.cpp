// test_readme_tour.cpp: the README's tour of the CLI, run as written. The ```sh block under "A tour of
// the CLI" is taken from README.md as it stands and run by bash, line after line in order, from a
// folder outside the repository, with R (the repository), B (this build's binary) and T (the tour's
// scratch folder) set as the block says a user may set them; so that a command in the README that no
// longer runs, runs only after something the README does not say, or reads or writes the checkout by
// a relative path, fails here.
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
  ASSERT_NE(block.find("R=${R:-$PWD}"), std::string::npos) << block;
  ASSERT_NE(block.find("T=${T:-$(mktemp -d)}; cd \"$T\""), std::string::npos) << block;
  TempDir elsewhere, scratch;  // where the user stands, and the tour's own folder
  // -x: each command is echoed (with a '+') before it runs, so a failure names its line.
  write_text(elsewhere.path("tour.sh"), "set -euxo pipefail\n" + block);
  const CommandResult r = run_command("cd " + elsewhere.root() + " && R=" + source_dir() + " B=" + balerbench_binary() +
                                      " T=" + scratch.root() + " bash tour.sh");
  const std::string tail = r.out.size() > 6000 ? r.out.substr(r.out.size() - 6000) : r.out;
  ASSERT_EQ(r.exit_code, 0) << "the README's tour stopped at the last '+' line below:\n" << tail;
  // What the tour says its commands make, all in its scratch folder; nothing where the user stood.
  for (const char* made : {"cms_like.npz", "cms_like.json", "cfd.npz", "out/training/model.pt",
                           "out/compressed_output/compressed.npz", "out/decompressed_output/decompressed.npz", "m.json",
                           "trace.json", "tour.sqlite", "s0.sqlite", "s1.sqlite", "all.sqlite", "report.html", "bso.sqlite"})
    EXPECT_TRUE(fs::exists(scratch.path(made))) << made << "\n" << tail;
  std::size_t left_where_run = 0;
  for (const auto& e : fs::directory_iterator(elsewhere.root())) left_where_run += e.path().filename() != "tour.sh";
  EXPECT_EQ(left_where_run, 0u) << "the tour wrote where it was run from, not in T";
  EXPECT_NE(r.out.find("merged 2 databases into all.sqlite"), std::string::npos) << tail;
}

}  // namespace
}  // namespace balerbench
