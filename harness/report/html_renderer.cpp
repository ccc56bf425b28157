// html_renderer.cpp: --format html's tables: each table as a <section> holding a sortable <table>
// (every cell as cell_text shows it, with its exact value in data-v for sorting and for checks) and
// its notes folded in a <details> below. A wide table shows its decision columns first (the
// terminal view's), with a button that shows every column; all are in the page. Rows of failed, skipped, warm-up and disturbed trials (a
// table's status, warmup and disturbed cells) are marked with a class and a legend, never dropped.
// report_page.cpp puts these sections into the page with the summary and the figures.
#include <algorithm>
#include <sstream>

#include "harness/report/html_text.h"
#include "harness/report/table_renderer.h"

namespace balerbench::report {
namespace {

using nlohmann::json;

// What a trial's row is marked as, from its status, warmup and disturbed cells.
struct Marks {
  bool failed = false, skipped = false, warmup = false, disturbed = false;
  std::string classes() const {
    std::string c;
    for (const auto& [on, name] : {std::pair{failed, "bb-failed"}, std::pair{skipped, "bb-skipped"},
                                   std::pair{warmup, "bb-warmup"}, std::pair{disturbed, "bb-disturbed"}})
      if (on) c += (c.empty() ? "" : " ") + std::string(name);
    return c;
  }
};

// The columns that mark a row (-1: the table has none).
struct MarkColumns {
  std::ptrdiff_t status = -1, warmup = -1, disturbed = -1;
  Marks of(const std::vector<json>& row) const {
    const auto text = [&](std::ptrdiff_t i) {
      return i >= 0 && static_cast<std::size_t>(i) < row.size() && row[i].is_string() ? row[i].get<std::string>()
                                                                                      : std::string();
    };
    return {text(status) == "failed", text(status) == "skipped", text(warmup) == "yes", text(disturbed) == "yes"};
  }
};

MarkColumns mark_columns(const Table& t) {
  MarkColumns m;
  for (std::size_t i = 0; i < t.columns.size(); ++i) {
    if (t.columns[i] == "status") m.status = static_cast<std::ptrdiff_t>(i);
    if (t.columns[i] == "warmup") m.warmup = static_cast<std::ptrdiff_t>(i);
    if (t.columns[i] == "disturbed") m.disturbed = static_cast<std::ptrdiff_t>(i);
  }
  return m;
}

// "Marked rows: 3 failed, 1 warm-up (in no statistic)": the legend above a table with marked rows.
std::string legend_of(const Table& t, const MarkColumns& m) {
  int failed = 0, skipped = 0, warmup = 0, disturbed = 0;
  for (const auto& row : t.rows) {
    const Marks k = m.of(row);
    failed += k.failed;
    skipped += k.skipped;
    warmup += k.warmup;
    disturbed += k.disturbed;
  }
  std::string s;
  const auto add = [&](int n, const char* cls, const std::string& what) {
    if (n) s += std::string(" <span class=\"bb-key ") + cls + "\">" + std::to_string(n) + " " + what + "</span>";
  };
  add(failed, "bb-failed", "failed (the error column says why)");
  add(skipped, "bb-skipped", "skipped");
  add(warmup, "bb-warmup", "warm-up (in no statistic)");
  add(disturbed, "bb-disturbed", "on a disturbed machine (kept in the statistics; see the notes)");
  return s.empty() ? s : "<p class=\"bb-legend\">Marked rows:" + s + "</p>\n";
}

// Per column: whether it is one of the table's decision columns (all are, when it names none).
std::vector<bool> decision_mask(const Table& t) {
  std::vector<bool> mask(t.columns.size(), true);
  if (t.decision_columns.empty()) return mask;
  for (std::size_t i = 0; i < t.columns.size(); ++i)
    mask[i] = std::find(t.decision_columns.begin(), t.decision_columns.end(), t.columns[i]) != t.decision_columns.end();
  return mask;
}

// The classes of a cell: a number (right-aligned), a long text (wraps), a column shown on demand.
std::string cell_classes(const json& v, bool extra) {
  constexpr std::size_t kLongText = 40;
  std::string c = v.is_number() ? "num" : v.is_string() && v.get<std::string>().size() > kLongText ? "bb-long" : "";
  if (extra) c += c.empty() ? "bb-extra" : " bb-extra";
  return c.empty() ? c : " class=\"" + c + "\"";
}

void render_row(std::ostream& o, const std::vector<json>& row, const std::string& marks, const std::vector<bool>& mask) {
  o << "<tr" << (marks.empty() ? "" : " class=\"" + marks + "\"") << ">";
  for (std::size_t i = 0; i < row.size(); ++i) {
    const json& v = row[i];
    o << "<td" << cell_classes(v, i < mask.size() && !mask[i]) << " data-v=\"" << html_escape(json_for_script(v))
      << "\">" << html_escape(cell_text(v)) << "</td>";
  }
  o << "</tr>\n";
}

void render_notes(std::ostream& o, const Table& t) {
  if (t.notes.empty()) return;
  o << "<details class=\"bb-notes\"><summary>Notes (" << t.notes.size() << ")</summary>\n<ul>\n";
  for (const auto& n : t.notes) o << "<li>" << html_escape(n) << "</li>\n";
  o << "</ul></details>\n";
}

void render_one(std::ostream& o, const Table& t, const std::string& id_prefix) {
  o << "<section class=\"bb-table\" id=\"" << html_escape(id_prefix + html_id(t.name)) << "\" data-table=\""
    << html_escape(t.name) << "\">\n<h3>" << html_escape(t.title) << "</h3>\n";
  const MarkColumns marks = mark_columns(t);
  o << legend_of(t, marks);
  const std::vector<bool> mask = decision_mask(t);
  const auto shown = static_cast<std::size_t>(std::count(mask.begin(), mask.end(), true));
  if (shown < mask.size())
    o << "<p class=\"bb-column-choice\">The " << shown << " columns to decide by; <button type=\"button\" "
      << "class=\"bb-columns\" data-all=\"show all " << mask.size() << " columns\" data-few=\"show only the "
      << shown << " columns to decide by\">show all " << mask.size() << " columns</button></p>\n";
  o << "<div class=\"bb-scroll\"><table class=\"bb-sortable\"><thead><tr>";
  for (std::size_t i = 0; i < t.columns.size(); ++i)
    o << "<th scope=\"col\" aria-sort=\"none\"" << (mask[i] ? "" : " class=\"bb-extra\"")
      << "><button type=\"button\" title=\"sort by " << html_escape(t.columns[i]) << "\">"
      << html_escape(t.columns[i]) << "</button></th>";
  o << "</tr></thead>\n<tbody>\n";
  for (const auto& r : t.rows) render_row(o, r, marks.of(r).classes(), mask);
  o << "</tbody></table></div>\n";
  if (t.rows.empty()) o << "<p class=\"bb-empty\">No rows: no trial gave this table anything (see the notes).</p>\n";
  render_notes(o, t);
  o << "</section>\n";
}

class HtmlRenderer : public TableRenderer {
 public:
  std::string render(const std::vector<Table>& tables) const override { return html_tables(tables, "table-"); }
};

}  // namespace

std::string html_tables(const std::vector<Table>& tables, const std::string& id_prefix) {
  std::ostringstream o;
  for (const auto& t : tables) render_one(o, t, id_prefix);
  return o.str();
}

const TableRenderer& html_renderer() {
  static const HtmlRenderer r;
  return r;
}

}  // namespace balerbench::report
