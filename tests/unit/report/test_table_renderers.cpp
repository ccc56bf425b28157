// test_table_renderers.cpp: stored text in the report's text formats (report/table_renderer.h): a
// label, an error or a name that is hostile stays text. CSV: no cell a spreadsheet runs as a formula
// (OWASP's CSV injection), numbers still numbers. LaTeX: no line break ends a comment or splits a
// cell. Markdown: no row split, no raw HTML, no link. No LibTorch headers.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/report/table_renderer.h"
#include "harness/report/tables.h"

namespace balerbench {
namespace {

using nlohmann::json;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1)
    out.push_back(text.substr(start, end - start));
  return out;
}

Table one_cell(const json& cell) {
  Table t;
  t.name = "t";
  t.title = "title";
  t.columns = {"c"};
  t.rows = {{cell}};
  return t;
}

// The one cell of a one-column CSV table, as written.
std::string csv_cell_of(const json& cell) {
  const std::vector<std::string> lines = lines_of(render_tables({one_cell(cell)}, "csv"));
  return lines.size() == 2 ? lines[1] : "(" + std::to_string(lines.size()) + " lines)";
}

TEST(CsvRenderer, TextASpreadsheetWouldRunIsNeutralised) {
  EXPECT_EQ(csv_cell_of("=HYPERLINK(\"http://x\";\"y\")"), "\"'=HYPERLINK(\"\"http://x\"\";\"\"y\"\")\"");
  EXPECT_EQ(csv_cell_of("=1+1"), "\"'=1+1\"");
  EXPECT_EQ(csv_cell_of("+cmd|' /C calc'!A0"), "\"'+cmd|' /C calc'!A0\"");
  EXPECT_EQ(csv_cell_of("-2+3"), "\"'-2+3\"");
  EXPECT_EQ(csv_cell_of("@SUM(A1)"), "\"'@SUM(A1)\"");
  EXPECT_EQ(csv_cell_of("\t=1"), "\"'\t=1\"");
  EXPECT_EQ(csv_cell_of("  =1"), "\"'  =1\"");
  EXPECT_EQ(render_tables({one_cell("\r=1")}, "csv"), "c\n\"'\r=1\"\n");
  // A header is a cell too.
  Table t = one_cell(1);
  t.columns = {"=evil"};
  EXPECT_EQ(render_tables({t}, "csv"), "\"'=evil\"\n1\n");
}

TEST(CsvRenderer, NumbersStayNumbersAndPlainTextStaysAsItIs) {
  EXPECT_EQ(csv_cell_of(-5), "-5");
  EXPECT_EQ(csv_cell_of(-1.25), "-1.25");
  EXPECT_EQ(csv_cell_of(3e-12), "3e-12");
  EXPECT_EQ(csv_cell_of("-1.5"), "-1.5");  // a number as text: a spreadsheet reads a number
  EXPECT_EQ(csv_cell_of("+2e-3"), "+2e-3");
  EXPECT_EQ(csv_cell_of("-"), "-");  // the placeholder of an empty figure
  EXPECT_EQ(csv_cell_of(nullptr), "");
  EXPECT_EQ(csv_cell_of(true), "true");
  EXPECT_EQ(csv_cell_of("fp32"), "fp32");
  EXPECT_EQ(csv_cell_of("a - b"), "a - b");
  EXPECT_EQ(csv_cell_of("-inf"), "\"'-inf\"");
  EXPECT_EQ(csv_cell_of("1e"), "1e");
  EXPECT_EQ(csv_cell_of("-1e"), "\"'-1e\"");
}

// A line break in stored text (a system label, a GPU name) ended the "% " comment line, and what
// followed was live LaTeX (was: "\input{/etc/hostname}" on a line of its own).
TEST(LatexRenderer, ALineBreakNeverEndsACommentOrSplitsACell) {
  Table t = one_cell("a\nb\r\nc\rd");
  t.title = "CPU x\n\\input{/etc/hostname}";
  t.columns = {"c\n\\def"};
  t.notes = {"note\n\\input{/etc/passwd}", "second\r\\write18{id}"};
  const std::string tex = render_tables({t}, "latex");
  for (const std::string& line : lines_of(tex))  // a live command only inside a comment
    if (line.find("\\input") != std::string::npos || line.find("\\write18") != std::string::npos)
      EXPECT_EQ(line.rfind("% ", 0), 0u) << line;
  EXPECT_NE(tex.find("% CPU x \\input{/etc/hostname}\n"), std::string::npos) << tex;
  EXPECT_NE(tex.find("% note \\input{/etc/passwd}\n% second \\write18{id}\n"), std::string::npos) << tex;
  EXPECT_NE(tex.find("\\caption{CPU x \\textbackslash{}input\\{/etc/hostname\\}}"), std::string::npos) << tex;
  EXPECT_NE(tex.find("\na b c d \\\\\n"), std::string::npos) << tex;
  EXPECT_EQ(tex.find('\r'), std::string::npos);
  EXPECT_EQ(lines_of(tex).size(), lines_of(render_tables({one_cell("x")}, "latex")).size() + 2) << tex;
}

TEST(MarkdownRenderer, PipesLineBreaksAndHtmlStayText) {
  Table t;
  t.title = "T\n# not a heading";
  t.columns = {"a|b", "c"};
  t.rows = {{"x|y\nz", "<script>alert(1)</script>"}, {"p < 0.05, <= 1", "[click](javascript:alert(1))"},
            {"a\\|b", "<!-- c --> <https://x>"}};
  t.notes = {"n\n| fake | row |", "<img src=x onerror=alert(1)>"};
  const std::string md = render_tables({t}, "md");
  const std::vector<std::string> lines = lines_of(md);
  ASSERT_EQ(lines.size(), 1u + 1 + 2 + 3 + 1 + 2) << md;  // title, blank, header, rule, rows, blank, notes
  EXPECT_EQ(lines[0], "### T # not a heading");
  EXPECT_EQ(lines[2], "| a\\|b | c |");
  EXPECT_EQ(lines[4], "| x\\|y z | &lt;script>alert(1)&lt;/script> |");
  EXPECT_EQ(lines[5], "| p < 0.05, <= 1 | [click]\\(javascript:alert(1)) |");
  EXPECT_EQ(lines[6], "| a\\\\\\|b | &lt;!-- c --> &lt;https://x> |");
  EXPECT_EQ(lines[8], "- n | fake | row |");
  EXPECT_EQ(lines[9], "- &lt;img src=x onerror=alert(1)>");
}

TEST(TableRenderer, OneLineTurnsEveryBreakAndControlIntoASpace) {
  EXPECT_EQ(report::one_line("a\r\nb\nc\rd\te\x01" "f\x7f" "g"), "a b c d e f g");
  EXPECT_EQ(report::one_line("\xc3\xa9t\xc3\xa9"), "\xc3\xa9t\xc3\xa9");  // UTF-8 is kept
}

}  // namespace
}  // namespace balerbench
