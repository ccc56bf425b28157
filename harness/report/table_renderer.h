// table_renderer.h: the output formats of the report tables (Markdown, CSV, LaTeX, JSON, HTML), one
// renderer each, chosen by the format's name (what --format takes). A new format is one new file
// with its renderer, and one line in table_renderer.cpp. HTML's renderer gives the tables' sections;
// report_page.h puts them in a page with the summary and the figures.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "harness/report/tables.h"

namespace balerbench::report {

class TableRenderer {
 public:
  virtual ~TableRenderer() = default;
  // Every table in one text, in order; "" (JSON: no tables) when there is none.
  virtual std::string render(const std::vector<Table>& tables) const = 0;
};

// Every table written by `one`, with a blank line between two tables (Markdown, LaTeX).
std::string render_each(const std::vector<Table>& tables, const std::function<void(std::ostream&, const Table&)>& one);

const TableRenderer& markdown_renderer();
const TableRenderer& csv_renderer();
const TableRenderer& latex_renderer();
const TableRenderer& json_renderer();
const TableRenderer& html_renderer();

// The tables as HTML sections, each with the id `id_prefix` + its name (html_renderer's, with
// "table-"); a page with several experiments gives each its own prefix.
std::string html_tables(const std::vector<Table>& tables, const std::string& id_prefix);

// LaTeX for a page that a wide table would overflow: kNone as it is; kResize each tabular scaled to
// \textwidth (graphicx's \resizebox); kLandscape each table on a landscape page (pdflscape).
enum class LatexFit { kNone, kResize, kLandscape };
std::string render_latex(const std::vector<Table>& tables, LatexFit fit);

// The renderer of `format` (md, csv, latex, json, html); InputError naming the formats otherwise.
const TableRenderer& renderer_for(const std::string& format);

// A cell as text for people (Markdown, LaTeX): "-" for null, "yes"/"no", integers as they are,
// other numbers to four significant digits (whole numbers from 1000, exponents outside 1e-3..1e7).
std::string cell_text(const nlohmann::json& v);

// `text` on one line: each line break (CR LF, LF or CR) and every other ASCII control character a
// space. For stored text written into a line of its own: a LaTeX comment, a CSV block's '#' line, a
// Markdown title or list item.
std::string one_line(const std::string& text);

// Stored text as Markdown that stays what it is: on one line (a row or a title never splits), in a
// table's cell a '|' escaped (a cell stays one cell), a '<' that could open raw HTML, a comment or an
// autolink written "&lt;" ("p < 0.05" and "<=" stay as they are), and "](" written "]\(" (no link
// is made).
std::string markdown_text(const std::string& text, bool table_cell = true);

}  // namespace balerbench::report
