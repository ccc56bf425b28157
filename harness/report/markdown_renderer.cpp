// markdown_renderer.cpp: --format md: each table under a "###" title, its cells as cell_text gives
// them, its notes as a list below; tables apart by an empty line. Every text through markdown_text:
// stored text (a label, an error, a name) never splits a row or reaches a renderer as HTML.
#include <sstream>

#include "harness/report/table_renderer.h"

namespace balerbench::report {
namespace {

void render_one(std::ostream& o, const Table& t) {
  o << "### " << markdown_text(t.title, false) << "\n\n|";
  for (const auto& c : t.columns) o << " " << markdown_text(c) << " |";
  o << "\n|";
  for (std::size_t i = 0; i < t.columns.size(); ++i) o << "---|";
  o << "\n";
  for (const auto& r : t.rows) {
    o << "|";
    for (const auto& v : r) o << " " << markdown_text(cell_text(v)) << " |";
    o << "\n";
  }
  if (!t.notes.empty()) o << "\n";
  for (const auto& n : t.notes) o << "- " << markdown_text(n, false) << "\n";
}

class MarkdownRenderer : public TableRenderer {
 public:
  std::string render(const std::vector<Table>& tables) const override { return render_each(tables, render_one); }
};

}  // namespace

const TableRenderer& markdown_renderer() {
  static const MarkdownRenderer r;
  return r;
}

}  // namespace balerbench::report
