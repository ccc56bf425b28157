// plot_library.h: the plotting library the HTML report embeds: the browser builds of Vega and
// Vega-Lite (BSD-3-Clause), put into the page whole so that it opens with no network. They are not
// part of the repository: scripts/setup.sh installs them with `npm ci` from harness/report/html's
// package.json and package-lock.json into harness/report/html/node_modules (git-ignored). The
// binary looks there (the folder is fixed at configure time: BALERBENCH_REPORT_JS_DIR), or in the
// folder named by the environment variable BALERBENCH_REPORT_JS_DIR.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace balerbench::report {

struct PlotLibraryPart {
  std::string name, version;  // "vega", "6.4.0" (its package.json)
  std::string license;        // its LICENSE file, which a copy of the build must carry
  std::string script;         // the minified browser build (a UMD script defining a global)
};

struct PlotLibrary {
  std::vector<PlotLibraryPart> parts;  // vega, then vega-lite (which needs vega)
  std::size_t script_bytes() const;
  std::string versions() const;  // "Vega 6.4.0, Vega-Lite 6.4.3"
};

// $BALERBENCH_REPORT_JS_DIR when set and not empty, else the folder fixed at configure time.
std::string plot_library_dir();
// InputError naming the missing file and the folder, with how to install it, unless every part is there.
void check_plot_library();
// Every part read (check_plot_library's error when one is missing).
PlotLibrary load_plot_library();

}  // namespace balerbench::report
