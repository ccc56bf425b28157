// table_slices.cpp: see table_slices.h.
#include "harness/report/table_slices.h"

#include <algorithm>
#include <map>
#include <set>

namespace balerbench::report {
namespace {

using nlohmann::json;

// A spec as path -> value text ("dataset.rows" -> "2000").
void flatten(const json& j, const std::string& path, std::map<std::string, std::string>& out) {
  if (j.is_object() && !j.empty()) {
    for (const auto& [k, v] : j.items()) flatten(v, path.empty() ? k : path + "." + k, out);
    return;
  }
  std::string text = j.dump();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  out[path.empty() ? "spec" : path] = text;
}

// How a slice's spec variant differs from the other variants of its system: "dataset.rows = 2000, ...".
std::string variant_difference(const Slice& s, const std::vector<Slice>& slices) {
  std::vector<std::map<std::string, std::string>> specs;
  std::map<std::string, std::string> mine;
  for (const auto& o : slices) {
    if (o.system.fingerprint != s.system.fingerprint || o.trials.empty()) continue;
    std::map<std::string, std::string> f;
    flatten(spec_without_grid(o.trials.front().spec), "", f);
    if (&o == &s) mine = f;
    specs.push_back(std::move(f));
  }
  std::set<std::string> paths;
  for (const auto& f : specs)
    for (const auto& kv : f) paths.insert(kv.first);
  std::string out;
  for (const auto& path : paths) {
    bool differs = false;
    for (const auto& f : specs) {
      const auto a = f.find(path);
      const auto b = mine.find(path);
      differs |= (a == f.end()) != (b == mine.end()) || (a != f.end() && b != mine.end() && a->second != b->second);
    }
    const auto it = mine.find(path);
    if (differs) out += (out.empty() ? "" : ", ") + path + " = " + (it != mine.end() ? it->second : "(absent)");
  }
  return out;
}

}  // namespace

std::vector<Slice> slices_of(const std::vector<TrialRecord>& trials) {
  std::vector<Slice> out;
  for (const auto& t : trials) {
    const SystemId id = system_of(t);
    const std::string v = spec_variant_of(t);
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const Slice& s) { return s.system.fingerprint == id.fingerprint && s.variant == v; });
    if (it == out.end()) {
      out.push_back({id, v, {}});
      it = out.end() - 1;
    }
    it->trials.push_back(t);
  }
  return out;
}

void mark_slice(std::vector<Table>& tables, const Slice& s, const std::vector<Slice>& slices, std::size_t n_systems) {
  std::size_t variants_here = 0;
  for (const auto& o : slices) variants_here += o.system.fingerprint == s.system.fingerprint;
  for (auto& t : tables) {
    if (n_systems > 1) {
      t.name += "_" + s.system.fingerprint;
      t.notes.push_back("The trials ran on " + std::to_string(n_systems) +
                        " systems: one table per system, never mixed (--table systems describes them, --table across "
                        "compares them).");
    }
    if (variants_here > 1) {
      t.name += "_v" + s.variant;
      t.title += ", spec variant " + s.variant;
      const std::string diff = variant_difference(s, slices);
      t.notes.push_back("Spec variant " + s.variant + " (" + std::to_string(s.trials.size()) + " trials), one of " +
                        std::to_string(variants_here) + " on this system: the experiment file changed between runs" +
                        (diff.empty() ? "" : "; this variant has " + diff) +
                        ". Variants are never compared with each other; each has its own table.");
    }
  }
}

}  // namespace balerbench::report
