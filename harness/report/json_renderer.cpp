// json_renderer.cpp: --format json: {"tables": [{table, title, columns, rows, notes}]}, each row an
// object from column name to value (numbers as numbers, null where not known).
#include "harness/report/table_renderer.h"

namespace balerbench::report {
namespace {

using nlohmann::json;

json table_json(const Table& t) {
  json rows = json::array();
  for (const auto& r : t.rows) {
    json obj = json::object();
    for (std::size_t i = 0; i < t.columns.size() && i < r.size(); ++i) obj[t.columns[i]] = r[i];
    rows.push_back(obj);
  }
  return {{"table", t.name}, {"title", t.title}, {"columns", t.columns}, {"rows", rows}, {"notes", t.notes}};
}

class JsonRenderer : public TableRenderer {
 public:
  std::string render(const std::vector<Table>& tables) const override {
    json all = json::array();
    for (const auto& t : tables) all.push_back(table_json(t));
    return json{{"tables", all}}.dump(2) + "\n";
  }
};

}  // namespace

const TableRenderer& json_renderer() {
  static const JsonRenderer r;
  return r;
}

}  // namespace balerbench::report
