// table_renderer.cpp: see table_renderer.h; also render_tables and report_format_names (tables.h).
#include "harness/report/table_renderer.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <sstream>

#include "common/error.h"

namespace balerbench {
namespace report {
namespace {

struct Format {
  const char* name;
  const TableRenderer& (*renderer)();
};
const Format kFormats[] = {
    {"md", markdown_renderer}, {"csv", csv_renderer}, {"latex", latex_renderer}, {"json", json_renderer},
    {"html", html_renderer}};

}  // namespace

const TableRenderer& renderer_for(const std::string& format) {
  for (const Format& f : kFormats)
    if (format == f.name) return f.renderer();
  std::string names;
  const std::size_t n = std::size(kFormats);
  for (std::size_t i = 0; i < n; ++i) names += (i == 0 ? "" : i + 1 == n ? " or " : ", ") + std::string(kFormats[i].name);
  throw InputError("--format '" + format + "': unknown", names);
}

std::string cell_text(const nlohmann::json& v) {
  if (v.is_null()) return "-";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  const double x = v.get<double>();
  char buf[64];
  const double ax = std::fabs(x);
  if (ax == 0) return "0";
  if (ax >= 1e7 || ax < 1e-3)
    std::snprintf(buf, sizeof buf, "%.3e", x);
  else if (ax >= 1000)
    std::snprintf(buf, sizeof buf, "%.0f", x);
  else
    std::snprintf(buf, sizeof buf, "%.4g", x);
  return buf;
}

std::string one_line(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') continue;  // CR LF: one break
    out += c < 0x20 || c == 0x7f ? ' ' : text[i];
  }
  return out;
}

std::string markdown_text(const std::string& text, bool table_cell) {
  const std::string line = one_line(text);
  std::string out;
  out.reserve(line.size());
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i], next = i + 1 < line.size() ? line[i + 1] : '\0';
    if (c == '|' && table_cell) {
      // Backslashes right before it doubled: "a\|" must not read as an escaped backslash, then a '|'.
      std::size_t k = 0;
      while (k < out.size() && out[out.size() - 1 - k] == '\\') ++k;
      out.append(k, '\\');
      out += "\\|";
    } else if (c == '<' && (std::isalpha(static_cast<unsigned char>(next)) || next == '/' || next == '!' || next == '?'))
      out += "&lt;";
    else if (c == ']' && next == '(')
      out += "]\\";  // the '(' follows
    else
      out += c;
  }
  return out;
}

std::string render_each(const std::vector<Table>& tables, const std::function<void(std::ostream&, const Table&)>& one) {
  std::ostringstream o;
  for (std::size_t k = 0; k < tables.size(); ++k) {
    if (k) o << "\n";
    one(o, tables[k]);
  }
  return o.str();
}

}  // namespace report

const std::vector<std::string>& report_format_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const report::Format& f : report::kFormats) out.emplace_back(f.name);
    return out;
  }();
  return names;
}

std::string render_tables(const std::vector<Table>& tables, const std::string& format) {
  return report::renderer_for(format).render(tables);
}

}  // namespace balerbench
