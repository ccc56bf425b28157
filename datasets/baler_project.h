// baler_project.h: a Baler project folder, found as Baler's CLI finds it.
//
// `baler --mode M --project WS P` runs in a folder ROOT that holds workspaces/WS/P/ with
// config/P_config.py (a Python module defining set_config(c)) and output/{training,
// compressed_output,decompressed_output,plotting}/. Relative paths in the config (input_path) are
// relative to ROOT, Baler's working directory.
#pragma once

#include <filesystem>
#include <string>

namespace balerbench {

struct BalerProject {
  std::filesystem::path root;    // the folder holding workspaces/ (Baler's working directory)
  std::string workspace, name;   // WS, P
  std::filesystem::path dir;     // ROOT/workspaces/WS/P
  std::filesystem::path config;  // dir/config/P_config.py
  std::filesystem::path output;  // dir/output
};

// `path` names the project folder (workspaces/WS/P, relative to the working directory or absolute).
// InputError when it is not one: no such folder, not under a folder named workspaces, or no
// config/P_config.py.
BalerProject open_baler_project(const std::string& path);

}  // namespace balerbench
