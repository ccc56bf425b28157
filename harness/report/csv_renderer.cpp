// csv_renderer.cpp: --format csv: exactly one table, header first, no title line, so that it opens
// as it is in pandas and spreadsheets. Titles and notes live in the JSON form (balerbench report
// --out DIR writes it beside the CSV files). Numbers in full (%.10g), text quoted where it must be.
#include <cstdio>
#include <sstream>

#include "common/error.h"
#include "harness/report/table_renderer.h"

namespace balerbench::report {
namespace {

std::string csv_cell(const nlohmann::json& v) {
  if (v.is_null()) return "";
  if (v.is_number_float()) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.10g", v.get<double>());
    return buf;
  }
  std::string s = v.is_string() ? v.get<std::string>() : v.dump();
  if (s.find_first_of(",\"\n") != std::string::npos) {
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  }
  return s;
}

class CsvRenderer : public TableRenderer {
 public:
  std::string render(const std::vector<Table>& tables) const override {
    if (tables.empty()) return "";
    if (tables.size() != 1)
      throw InputError("CSV holds one table per file; " + std::to_string(tables.size()) + " tables selected",
                       "name one with --table (and --experiment), or give --out DIR for one file per table");
    const Table& t = tables.front();
    std::ostringstream o;
    // Headers are quoted as cells are: a column named with a comma ("Baler J/MB, training over 10")
    // was split in two.
    for (std::size_t i = 0; i < t.columns.size(); ++i) o << (i ? "," : "") << csv_cell(t.columns[i]);
    o << "\n";
    for (const auto& r : t.rows) {
      for (std::size_t i = 0; i < r.size(); ++i) o << (i ? "," : "") << csv_cell(r[i]);
      o << "\n";
    }
    return o.str();
  }
};

}  // namespace

const TableRenderer& csv_renderer() {
  static const CsvRenderer r;
  return r;
}

}  // namespace balerbench::report
