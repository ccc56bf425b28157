// baler_project.cpp: see baler_project.h.
#include "datasets/baler_project.h"

#include "common/error.h"

namespace balerbench {

namespace fs = std::filesystem;

BalerProject open_baler_project(const std::string& path) {
  const std::string hint = "give the project folder, as in --baler-project workspaces/WS/P";
  if (path.empty()) throw InputError("--baler-project: empty path", hint);
  std::error_code ec;
  if (!fs::is_directory(path, ec)) throw InputError(path + ": no such project folder", hint);
  // The layout is read from the path as given (made absolute, without following links), as Baler reads
  // it from its working folder: a `workspaces` that is a link to a folder of another name is still
  // Baler's workspaces. The path with every link followed is the fallback, for a project reached through
  // a link of its own.
  auto layout_of = [](fs::path dir) {
    if (dir.filename().empty()) dir = dir.parent_path();  // "workspaces/WS/P/"
    return dir;
  };
  BalerProject p;
  const fs::path given = layout_of(fs::absolute(path, ec).lexically_normal());
  const fs::path resolved = layout_of(fs::canonical(path, ec));
  if (ec) throw InputError(path + ": cannot resolve the folder: " + ec.message(), hint);
  p.dir = given.parent_path().parent_path().filename() == "workspaces" ? given : resolved;
  p.name = p.dir.filename().string();
  p.workspace = p.dir.parent_path().filename().string();
  const fs::path workspaces = p.dir.parent_path().parent_path();
  if (workspaces.filename() != "workspaces")
    throw InputError(path + ": not a Baler project folder: its grandparent is '" + workspaces.filename().string() +
                         "', Baler's layout is workspaces/WS/P",
                     hint);
  p.root = workspaces.parent_path();
  p.config = p.dir / "config" / (p.name + "_config.py");
  p.output = p.dir / "output";
  if (!fs::is_regular_file(p.config, ec))
    throw InputError(path + ": no config/" + p.name + "_config.py",
                     "Baler's newProject mode writes one; it defines set_config(c)");
  return p;
}

}  // namespace balerbench
