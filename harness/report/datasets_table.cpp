// datasets_table.cpp: --table datasets, docs/reference_tables.md T2's shape: each dataset the finished
// trials used, with its shape, dtype, size and the number of trials on it.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "harness/report/tables.h"

namespace balerbench::report {

using nlohmann::json;

std::vector<Table> make_datasets_tables(const std::vector<TrialRecord>& trials, const TableOptions&) {
  Table t;
  t.name = "datasets";
  t.title = "Datasets (T2's shape)";
  t.columns = {"dataset", "shape", "dtype", "bytes", "trials"};
  std::map<std::string, std::pair<std::vector<json>, int64_t>> rows;
  std::vector<std::string> order;
  for (const auto& r : trials) {
    if (r.status != TrialStatus::kOk || !r.result.is_object() || !r.result.contains("dataset")) continue;
    const json& d = r.result["dataset"];
    if (!d.is_object()) continue;
    // Every field read with a fallback: a const json's operator[] on a missing key is undefined (a
    // trial stored without the dataset's dtype read freed memory under ThreadSanitizer).
    const auto text = [&d](const char* key) -> std::string {
      return d.contains(key) && d[key].is_string() ? d[key].get<std::string>() : "";
    };
    const std::string label = !text("label").empty() ? text("label") : !text("path").empty() ? text("path") : "?";
    if (!rows.count(label)) {
      std::string shape = "(";
      const json dims = d.contains("shape") && d["shape"].is_array() ? d["shape"] : json::array();
      for (std::size_t i = 0; i < dims.size(); ++i)
        shape += (i ? ", " : "") + (dims[i].is_number_integer() ? std::to_string(dims[i].get<int64_t>()) : "?");
      rows[label] = {{label, shape + ")", d.contains("dtype") ? d["dtype"] : json("-"),
                      d.contains("bytes") ? d["bytes"] : json(nullptr)},
                     0};
      order.push_back(label);
    }
    ++rows[label].second;
  }
  for (const auto& l : order) {
    auto row = rows[l].first;
    row.push_back(rows[l].second);
    t.rows.push_back(row);
  }
  t.notes.push_back("bytes = rows x features x the file's item size (the data array alone, not the .npz).");
  return {t};
}

}  // namespace balerbench::report
