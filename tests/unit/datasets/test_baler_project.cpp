// test_baler_project.cpp: a Baler project folder found as Baler's CLI finds it (datasets/baler_project.h).
#include <gtest/gtest.h>

#include <filesystem>

#include "datasets/baler_project.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

namespace fs = std::filesystem;

TEST(BalerProjectFolder, IsFoundAsBalersCliFindsIt) {
  TempDir dir;
  expect_input_error([&] { open_baler_project(dir.path("nope")); }, "no such project folder");
  fs::create_directories(dir.path("elsewhere/WS/P/config"));
  expect_input_error([&] { open_baler_project(dir.path("elsewhere/WS/P")); }, "Baler's layout is workspaces/WS/P");
  fs::create_directories(dir.path("workspaces/WS/P"));
  expect_input_error([&] { open_baler_project(dir.path("workspaces/WS/P")); }, "no config/P_config.py");
  fs::create_directories(dir.path("workspaces/WS/P/config"));
  write_text(dir.path("workspaces/WS/P/config/P_config.py"), "");
  const BalerProject p = open_baler_project(dir.path("workspaces/WS/P/"));
  EXPECT_EQ(p.name, "P");
  EXPECT_EQ(p.workspace, "WS");
  EXPECT_EQ(p.root, fs::canonical(dir.root()));
  EXPECT_EQ(p.output, p.dir / "output");
}

// A `workspaces` that is a symbolic link to a folder of another name is Baler's workspaces all the same:
// Baler runs the project through it (was: refused, "its grandparent is 'stuff'").
TEST(BalerProjectFolder, AWorkspacesFolderThatIsALinkIsAccepted) {
  TempDir dir;
  fs::create_directories(dir.path("stuff/WS/P/config"));
  write_text(dir.path("stuff/WS/P/config/P_config.py"), "");
  fs::create_directories(dir.path("root"));
  fs::create_directory_symlink(dir.path("stuff"), dir.path("root/workspaces"));
  const BalerProject p = open_baler_project(dir.path("root/workspaces/WS/P"));
  EXPECT_EQ(p.name, "P");
  EXPECT_EQ(p.workspace, "WS");
  EXPECT_EQ(p.root, fs::path(dir.path("root")));
  EXPECT_TRUE(fs::is_regular_file(p.config));
  expect_input_error([&] { open_baler_project(dir.path("stuff/WS/P")); }, "its grandparent is 'stuff'");
}

}  // namespace
}  // namespace balerbench
