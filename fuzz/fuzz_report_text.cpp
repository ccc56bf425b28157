// fuzz_report_text.cpp: stored text (a label, an error, a name: from a database another balerbench or
// a merge wrote) through the report's text formats (report/table_renderer.h). The input, split at the
// first four '\x1f' bytes, is a table's title, a column's name, two cells and a note. Whatever they
// hold: Markdown keeps its lines and cells (no line break, no unescaped '|' in a row, no '<' that
// opens HTML, no link); LaTeX keeps its lines (no line break ends a comment, no control character);
// CSV reads back as one header and one row of two fields each, every text as it was or behind one
// "'", and no field a spreadsheet would run as a formula.
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "harness/report/table_renderer.h"
#include "harness/report/tables.h"

namespace {

std::vector<std::string> split(const std::string& s, std::size_t fields) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (out.size() + 1 < fields) {
    const std::size_t cut = s.find('\x1f', start);
    if (cut == std::string::npos) break;
    out.push_back(s.substr(start, cut - start));
    start = cut + 1;
  }
  out.push_back(s.substr(start));
  out.resize(fields);
  return out;
}

std::size_t lines(const std::string& s) {
  std::size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

void check_markdown(const balerbench::Table& t) {
  const std::string md = balerbench::render_tables({t}, "md");
  if (lines(md) != 1 + 1 + 2 + t.rows.size() + 1 + t.notes.size()) __builtin_trap();
  for (std::size_t i = 0; i + 1 < md.size(); ++i) {
    const char c = md[i], next = md[i + 1];
    if (c == '<' && (std::isalpha(static_cast<unsigned char>(next)) || next == '/' || next == '!' || next == '?'))
      __builtin_trap();
    if (c == ']' && next == '(') __builtin_trap();
    if (c == '\r') __builtin_trap();
  }
  // Each row line: columns + 1 pipes that no backslash escapes (GitHub's rule) and that an even run
  // of backslashes precedes (Python-Markdown's): the same count either way.
  std::size_t start = md.find("\n|");
  for (std::size_t row = 0; row < 2 + t.rows.size(); ++row) {
    const std::size_t end = md.find('\n', start + 1);
    const std::string line = md.substr(start + 1, end - start - 1);
    std::size_t gfm = 0, python = 0, run = 0;
    for (char c : line) {
      if (c == '|') {
        gfm += run == 0;
        python += run % 2 == 0;
      }
      run = c == '\\' ? run + 1 : 0;
    }
    if (row != 1 && (gfm != t.columns.size() + 1 || python != t.columns.size() + 1)) __builtin_trap();
    start = end;
  }
}

void check_latex(const balerbench::Table& t) {
  const std::string tex = balerbench::render_tables({t}, "latex");
  // The packages' comment; the title's comment, table, centering, tabular, toprule, header, midrule;
  // the rows; bottomrule, end of tabular, caption, end of table; one comment per note.
  if (lines(tex) != 1 + 7 + t.rows.size() + 4 + t.notes.size()) __builtin_trap();
  for (char c : tex)
    if ((static_cast<unsigned char>(c) < 0x20 && c != '\n') || c == 0x7f) __builtin_trap();
}

// RFC 4180 fields of `csv`, records split at line ends outside quotes.
std::vector<std::vector<std::string>> parse_csv(const std::string& csv) {
  std::vector<std::vector<std::string>> records(1, std::vector<std::string>(1));
  bool quoted = false;
  for (std::size_t i = 0; i < csv.size(); ++i) {
    const char c = csv[i];
    if (quoted && c == '"' && i + 1 < csv.size() && csv[i + 1] == '"') {
      records.back().back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (!quoted && c == ',') {
      records.back().emplace_back();
    } else if (!quoted && c == '\n') {
      records.emplace_back(1);
    } else {
      records.back().back() += c;
    }
  }
  if (quoted) __builtin_trap();
  records.pop_back();  // after the last line end
  return records;
}

bool plain_number(const std::string& s) {
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0]))) return false;
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && s.find_first_of("xXpPnNiI") == std::string::npos;
}

void check_csv(const balerbench::Table& t) {
  const auto records = parse_csv(balerbench::render_tables({t}, "csv"));
  if (records.size() != 2 || records[0].size() != 2 || records[1].size() != 2) __builtin_trap();
  const std::string original[] = {t.columns[0], t.columns[1], t.rows[0][0].get<std::string>(),
                                  t.rows[0][1].get<std::string>()};
  const std::string* field[] = {&records[0][0], &records[0][1], &records[1][0], &records[1][1]};
  for (int k = 0; k < 4; ++k) {
    const std::string& f = *field[k];
    if (f != original[k] && f != "'" + original[k]) __builtin_trap();
    const std::size_t first = f.find_first_not_of(' ');
    if (first != std::string::npos && std::strchr("=+-@\t\r", f[first]) && f[first] != '\0' && f != "-" &&
        !plain_number(f))
      __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string> f = split(std::string(reinterpret_cast<const char*>(data), size), 5);
  balerbench::Table t;
  t.name = "t";
  t.title = f[0];
  t.columns = {f[1], "second"};
  t.rows = {{f[2], f[3]}};
  t.notes = {f[4]};
  check_markdown(t);
  check_latex(t);
  check_csv(t);
  return 0;
}
