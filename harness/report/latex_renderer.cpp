// latex_renderer.cpp: --format latex: each table as a table environment in booktabs' rules (first
// column left, the others right), its title as the caption and its notes as comments below; scaled
// to the text's width or on a landscape page on request (LatexFit). Stored text (a system's
// label, a GPU's name, an error) is escaped, and on one line: a line break in it would end a comment
// and make what follows live LaTeX.
#include <sstream>

#include "harness/report/table_renderer.h"

namespace balerbench::report {
namespace {

// Every character LaTeX treats specially in text, written as text: the ten of its special
// characters, and < and > (OT1 has none: they would print as an inverted ! and ?).
// A line break (or any other control character: TeX refuses most as invalid) is a space, so text never
// ends a comment's line or makes a paragraph inside a cell.
std::string latex_escape(const std::string& s) {
  std::string out;
  for (char c : one_line(s)) {
    switch (c) {
      case '_': case '%': case '&': case '#': case '$': case '{': case '}':
        out += '\\';
        out += c;
        break;
      case '~': out += "\\textasciitilde{}"; break;  // "~12 repeats would resolve it": not a non-breaking space
      case '^': out += "\\textasciicircum{}"; break;
      case '\\': out += "\\textbackslash{}"; break;
      case '<': out += "$<$"; break;
      case '>': out += "$>$"; break;
      default: out += c;
    }
  }
  return out;
}

// One table in booktabs' rules (\toprule, \midrule, \bottomrule), fitted to the page as `fit` says.
void render_one(std::ostream& o, const Table& t, LatexFit fit) {
  o << "% " << one_line(t.title) << "\n";
  if (fit == LatexFit::kLandscape) o << "\\begin{landscape}\n";
  o << "\\begin{table}[ht]\n\\centering\n";
  if (fit == LatexFit::kResize) o << "\\resizebox{\\textwidth}{!}{%\n";
  o << "\\begin{tabular}{";
  for (std::size_t i = 0; i < t.columns.size(); ++i) o << (i ? "r" : "l");
  o << "}\n\\toprule\n";
  for (std::size_t i = 0; i < t.columns.size(); ++i) o << (i ? " & " : "") << latex_escape(t.columns[i]);
  o << " \\\\\n\\midrule\n";
  for (const auto& r : t.rows) {
    for (std::size_t i = 0; i < r.size(); ++i) o << (i ? " & " : "") << latex_escape(cell_text(r[i]));
    o << " \\\\\n";
  }
  o << "\\bottomrule\n\\end{tabular}" << (fit == LatexFit::kResize ? "}" : "") << "\n\\caption{"
    << latex_escape(t.title) << "}\n\\end{table}\n";
  if (fit == LatexFit::kLandscape) o << "\\end{landscape}\n";
  for (const auto& n : t.notes) o << "% " << one_line(n) << "\n";
}

// The packages the tables need, as a comment above them.
std::string preamble(LatexFit fit) {
  return std::string("% balerbench tables: \\usepackage{booktabs}") +
         (fit == LatexFit::kResize ? " \\usepackage{graphicx}" : fit == LatexFit::kLandscape ? " \\usepackage{pdflscape}" : "") +
         " in the preamble\n";
}

class LatexRenderer : public TableRenderer {
 public:
  std::string render(const std::vector<Table>& tables) const override { return render_latex(tables, LatexFit::kNone); }
};

}  // namespace

std::string render_latex(const std::vector<Table>& tables, LatexFit fit) {
  if (tables.empty()) return "";
  return preamble(fit) + render_each(tables, [fit](std::ostream& o, const Table& t) { render_one(o, t, fit); });
}

const TableRenderer& latex_renderer() {
  static const LatexRenderer r;
  return r;
}

}  // namespace balerbench::report
