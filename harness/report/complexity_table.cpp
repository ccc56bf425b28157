// complexity_table.cpp: --table complexity, docs/reference_tables.md T1's shape: the model's layers with
// their parameters, multiply-accumulates and FLOPs per sample and per batch, from the model
// description stored with the first finished trial.
#include <set>
#include <string>
#include <vector>

#include "harness/report/tables.h"

namespace balerbench::report {

using nlohmann::json;

std::vector<Table> make_complexity_tables(const std::vector<TrialRecord>& trials, const TableOptions&) {
  Table t;
  t.name = "complexity";
  t.columns = {"layer",           "part",
               "in_to_out",       "parameters",
               "macs_per_sample", "flops_per_sample",
               "macs_per_batch",  "t1_operations_per_batch"};
  std::set<std::string> seen;
  for (const auto& r : trials) {
    if (r.status != TrialStatus::kOk || !r.result.contains("model")) continue;
    const json& m = r.result["model"];
    const std::string key = m["name"].get<std::string>() + "/" + std::to_string(m["n_features"].get<int64_t>()) + "/" +
                            std::to_string(r.batch_size);
    if (!seen.insert(key).second) continue;
    if (!t.title.empty()) continue;  // one model per table: the first
    t.title = "Model complexity (T1's shape): " + m["name"].get<std::string>() + ", " +
              std::to_string(m["n_features"].get<int64_t>()) + " features, latent " +
              std::to_string(m["latent"].get<int64_t>()) + ", batch " + std::to_string(r.batch_size);
    int64_t params = 0, macs = 0, ops = 0;
    for (const auto& l : m["layers"]) {
      const int64_t mac = l["macs_per_sample"];
      t.rows.push_back({l["name"], l["part"],
                        std::to_string(l["in"].get<int64_t>()) + " -> " + std::to_string(l["out"].get<int64_t>()),
                        l["parameters"], mac, 2 * mac, mac * r.batch_size, l["t1_operations"]});
      params += l["parameters"].get<int64_t>();
      macs += mac;
      ops += l["t1_operations"].get<int64_t>();
    }
    t.rows.push_back({"total", "", "", params, macs, 2 * macs, macs * r.batch_size, ops});
  }
  if (t.title.empty()) t.title = "Model complexity (T1's shape): no finished trial";
  t.notes.push_back(
      "parameters = in x out + out; MACs = multiply-accumulates (in x out per sample, bias not "
      "counted); FLOPs = 2 x MACs; t1_operations = the published T1 convention in x out x batch + out.");
  return {t};
}

}  // namespace balerbench::report
