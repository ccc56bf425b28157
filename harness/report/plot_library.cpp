// plot_library.cpp: see plot_library.h.
#include "harness/report/plot_library.h"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.h"

#ifndef BALERBENCH_REPORT_JS_DIR
#error "BALERBENCH_REPORT_JS_DIR: the folder of the plotting library, set by harness/CMakeLists.txt"
#endif

namespace balerbench::report {
namespace {

struct PartFiles {
  const char* name;
  const char* title;   // as the page names it
  const char* script;  // under the part's folder
};
const PartFiles kParts[] = {{"vega", "Vega", "build/vega.min.js"}, {"vega-lite", "Vega-Lite", "build/vega-lite.min.js"}};

std::string part_path(const PartFiles& p, const std::string& file) {
  return plot_library_dir() + "/" + p.name + "/" + file;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  if (!in && !in.eof())
    throw InputError(path + ": cannot be read", "check that the plotting library's files are readable");
  return s.str();
}

}  // namespace

std::size_t PlotLibrary::script_bytes() const {
  std::size_t n = 0;
  for (const auto& p : parts) n += p.script.size();
  return n;
}

std::string PlotLibrary::versions() const {
  std::string s;
  for (std::size_t i = 0; i < parts.size(); ++i)
    s += (i ? ", " : "") + std::string(kParts[i].title) + " " + parts[i].version;
  return s;
}

std::string plot_library_dir() {
  const char* env = std::getenv("BALERBENCH_REPORT_JS_DIR");
  return env && *env ? env : BALERBENCH_REPORT_JS_DIR;
}

void check_plot_library() {
  for (const PartFiles& p : kParts)
    for (const std::string file : {std::string(p.script), std::string("package.json"), std::string("LICENSE")}) {
      const std::string path = part_path(p, file);
      std::error_code ec;
      if (!std::filesystem::is_regular_file(path, ec))
        throw InputError("the HTML report's plotting library is not installed: " + path + " is missing",
                         "run scripts/setup.sh (it runs npm ci in harness/report/html), or set "
                         "BALERBENCH_REPORT_JS_DIR to a node_modules folder holding vega and vega-lite");
    }
}

PlotLibrary load_plot_library() {
  check_plot_library();
  PlotLibrary lib;
  for (const PartFiles& p : kParts) {
    PlotLibraryPart part;
    part.name = p.name;
    const nlohmann::json pkg = nlohmann::json::parse(read_all(part_path(p, "package.json")), nullptr, false);
    part.version = pkg.is_object() && pkg.contains("version") && pkg["version"].is_string()
                       ? pkg["version"].get<std::string>()
                       : "(version unknown)";
    part.license = read_all(part_path(p, "LICENSE"));
    part.script = read_all(part_path(p, p.script));
    lib.parts.push_back(std::move(part));
  }
  return lib;
}

}  // namespace balerbench::report
