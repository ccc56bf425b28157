// terminal_view.cpp: terminal_view (tables.h): a table cut to its decision columns, for the Markdown
// that `report` and `run` print to a terminal. The numbers are the table's own; only columns go.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "harness/report/table_renderer.h"
#include "harness/report/tables.h"

namespace balerbench {
namespace {

using nlohmann::json;

constexpr char kLowSuffix[] = "_ci95_low";
constexpr char kHighSuffix[] = "_ci95_high";

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A kept column of the view: the table's column `at`, with its interval's upper end `high` when
// `at` is an interval's lower end and both are kept.
struct ViewColumn {
  std::size_t at;
  std::optional<std::size_t> high;
};

std::vector<ViewColumn> view_columns(const Table& t) {
  const auto kept = [&](const std::string& c) {
    return std::find(t.decision_columns.begin(), t.decision_columns.end(), c) != t.decision_columns.end();
  };
  const auto index_of = [&](const std::string& c) -> std::optional<std::size_t> {
    const auto it = std::find(t.columns.begin(), t.columns.end(), c);
    return it == t.columns.end() ? std::nullopt : std::optional<std::size_t>(it - t.columns.begin());
  };
  std::vector<ViewColumn> out;
  for (std::size_t i = 0; i < t.columns.size(); ++i) {
    const std::string& c = t.columns[i];
    if (!kept(c)) continue;
    if (ends_with(c, kHighSuffix)) {
      const std::string low = c.substr(0, c.size() - (sizeof kHighSuffix - 1)) + kLowSuffix;
      if (kept(low) && index_of(low)) continue;  // shown in its lower end's cell
    }
    ViewColumn v{i, std::nullopt};
    if (ends_with(c, kLowSuffix)) {
      const std::string high = c.substr(0, c.size() - (sizeof kLowSuffix - 1)) + kHighSuffix;
      if (kept(high)) v.high = index_of(high);
    }
    out.push_back(v);
  }
  return out;
}

json cell(const std::vector<json>& row, std::size_t i) { return i < row.size() ? row[i] : json(nullptr); }

}  // namespace

namespace {

// The decision columns of `t`, with a note that begins with `lead` and ends with `rest`.
Table decision_view(const Table& t, const std::string& lead, const std::string& rest) {
  if (t.decision_columns.empty()) return t;
  const std::vector<ViewColumn> columns = view_columns(t);
  if (columns.size() == t.columns.size()) return t;
  Table v;
  v.name = t.name;
  v.title = t.title;
  for (const ViewColumn& c : columns) v.columns.push_back(c.high ? "95% interval" : t.columns[c.at]);
  for (const auto& row : t.rows) {
    std::vector<json> cells;
    for (const ViewColumn& c : columns) {
      if (!c.high) {
        cells.push_back(cell(row, c.at));
        continue;
      }
      const json low = cell(row, c.at), high = cell(row, *c.high);
      cells.push_back(low.is_null() || high.is_null()
                          ? json(nullptr)
                          : json("[" + report::cell_text(low) + ", " + report::cell_text(high) + "]"));
    }
    v.rows.push_back(std::move(cells));
  }
  std::size_t shown = 0;  // the table's columns in the view, an interval's two ends counted apart
  for (const ViewColumn& c : columns) shown += c.high ? 2 : 1;
  v.notes.push_back(lead + ": the columns to decide by, " + std::to_string(shown) + " of " +
                    std::to_string(t.columns.size()) + " (an interval's two ends in one cell). " + rest);
  for (const auto& n : t.notes) v.notes.push_back(n);
  return v;
}

}  // namespace

Table terminal_view(const Table& t) {
  return decision_view(t, "Terminal view",
                       "--wide prints every column (medians, spreads, kWh, memory, ...); so do --out FILE and the "
                       "CSV, LaTeX, JSON and HTML formats.");
}

Table paper_view(const Table& t) {
  return decision_view(t, "Paper view",
                       "--wide gives every column (medians, spreads, kWh, memory, ...), as the CSV, JSON and HTML "
                       "formats do.");
}

}  // namespace balerbench
