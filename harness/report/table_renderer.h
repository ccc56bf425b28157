// table_renderer.h: the output formats of the report tables (Markdown, CSV, LaTeX, JSON), one
// renderer each, chosen by the format's name (what --format takes). A new format is one new file
// with its renderer, and one line in table_renderer.cpp.
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

// The renderer of `format` (md, csv, latex, json); InputError naming the formats otherwise.
const TableRenderer& renderer_for(const std::string& format);

// A cell as text for people (Markdown, LaTeX): "-" for null, "yes"/"no", integers as they are,
// other numbers to four significant digits (whole numbers from 1000, exponents outside 1e-3..1e7).
std::string cell_text(const nlohmann::json& v);

}  // namespace balerbench::report
