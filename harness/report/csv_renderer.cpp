// csv_renderer.cpp: --format csv: exactly one table, header first, no title line, so that it opens
// as it is in pandas and spreadsheets. Titles and notes live in the JSON form (balerbench report
// --out DIR writes it beside the CSV files). Numbers in full (%.10g), text quoted where it must be, and
// text that a spreadsheet would run as a formula neutralised (see neutralised).
#include <cctype>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "common/error.h"
#include "harness/report/table_renderer.h"

namespace balerbench::report {
namespace {

// Whether `s` is a plain decimal number ("-1.5", "2e-3"): a spreadsheet reads it as that number, never
// as a formula, so it is written as it is.
bool plain_number(const std::string& s) {
  std::size_t i = s[0] == '-' || s[0] == '+' ? 1 : 0, digits = 0;
  for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i) ++digits;
  if (i < s.size() && s[i] == '.')
    for (++i; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i) ++digits;
  if (digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    i += i + 1 < s.size() && (s[i + 1] == '-' || s[i + 1] == '+') ? 2 : 1;
    const std::size_t exponent = i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    if (i == exponent) return false;
  }
  return i == s.size();
}

// Text a spreadsheet would run as a formula (OWASP's CSV injection: a cell beginning with =, +, -, @,
// a tab or a carriage return, also after spaces), with a ' put before it: it reads as text. A plain
// number and the "-" of an empty cell stay as they are.
std::string neutralised(std::string s) {
  const std::size_t first = s.find_first_not_of(' ');
  if (first == std::string::npos || s == "-" || plain_number(s)) return s;
  if (std::strchr("=+-@\t\r", s[first]) && s[first] != '\0') s.insert(s.begin(), '\'');
  return s;
}

// Numbers as numbers; text neutralised, and quoted where it must be (a comma, a quote, a line break).
std::string csv_cell(const nlohmann::json& v) {
  if (v.is_null()) return "";
  if (v.is_number_float()) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.10g", v.get<double>());
    return buf;
  }
  if (v.is_number() || v.is_boolean()) return v.dump();
  const std::string s = neutralised(v.is_string() ? v.get<std::string>() : v.dump());
  if (s.find_first_of(",\"\n\r") != std::string::npos || (!s.empty() && s.front() == '\'')) {
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
