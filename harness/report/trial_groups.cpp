// trial_groups.cpp: see trial_groups.h.
#include "harness/report/trial_groups.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "harness/base/precision_mode.h"
#include "models/architecture.h"

namespace balerbench::report {
namespace {

using nlohmann::json;

// Where a trial sits among the groups: its grid coordinates, system and spec variant.
struct TrialKey {
  const TrialRecord* trial;
  std::string system, variant;
};
TrialKey key_of(const TrialRecord& t) { return {&t, system_of(t).fingerprint, spec_variant_of(t)}; }

bool same_config(const Group& g, const TrialKey& k) {
  const TrialRecord& t = *k.trial;
  return g.batch_size == t.batch_size && g.precision == t.precision && g.engine == t.engine &&
         g.epochs == t.epochs && g.power_limit_w == t.power_limit_w && g.system == k.system && g.variant == k.variant &&
         g.model == model_of(t) && g.compression_ratio == compression_ratio_of(t);
}

const nlohmann::json* run_config_of(const TrialRecord& t) {
  if (!t.spec.is_object() || !t.spec.contains("run_config") || !t.spec["run_config"].is_object()) return nullptr;
  return &t.spec["run_config"];
}

std::optional<int64_t> model_integer(const Group& g, const char* key) {
  for (const TrialRecord* t : g.ok) {
    if (!t->result.is_object() || !t->result.contains("model") || !t->result["model"].is_object()) continue;
    const json& m = t->result["model"];
    if (m.contains(key) && m[key].is_number_integer()) return m[key].get<int64_t>();
  }
  return std::nullopt;
}

// The model's place in the registry (models/architecture.h), an unknown name after them all.
std::size_t model_rank(const std::string& model) {
  const auto& names = model_names();
  return static_cast<std::size_t>(std::find(names.begin(), names.end(), model) - names.begin());
}

}  // namespace

// Stored trials name their precision as text; a name this version does not know (a newer
// version's database) keeps its name, sorts last and is described as itself.
std::string mode_name(const std::string& p) {
  const std::optional<Precision> mode = find_precision(p);
  return mode ? precision_info(*mode).description : p;
}

int precision_rank(const std::string& p) {
  const std::optional<Precision> mode = find_precision(p);
  return mode ? precision_info(*mode).report_rank : static_cast<int>(precision_table().size());
}

std::string watts_label(const std::optional<double>& w) {
  if (!w) return "as found";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g W", *w);
  return buf;
}

std::string ratio_label(const std::optional<double>& r) {
  if (!r) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", *r);
  return buf;
}

std::string model_of(const TrialRecord& t) {
  if (const json* c = run_config_of(t); c && c->contains("model_name") && (*c)["model_name"].is_string())
    return (*c)["model_name"].get<std::string>();
  if (t.result.is_object() && t.result.contains("model") && t.result["model"].is_object() &&
      t.result["model"].contains("name") && t.result["model"]["name"].is_string())
    return t.result["model"]["name"].get<std::string>();
  return "";
}

std::optional<double> compression_ratio_of(const TrialRecord& t) {
  if (const json* c = run_config_of(t); c && c->contains("compression_ratio") && (*c)["compression_ratio"].is_number())
    return (*c)["compression_ratio"].get<double>();
  return std::nullopt;
}

std::optional<int64_t> Group::latent() const { return model_integer(*this, "latent"); }
std::optional<int64_t> Group::parameters() const { return model_integer(*this, "parameters"); }

Group configuration_of(const TrialRecord& t) {
  Group g;
  g.model = model_of(t);
  g.compression_ratio = compression_ratio_of(t);
  g.batch_size = t.batch_size;
  g.precision = t.precision;
  g.engine = t.engine;
  g.power_limit_w = t.power_limit_w;
  g.epochs = t.epochs;
  return g;
}

std::vector<Group> group_trials(const std::vector<TrialRecord>& trials) {
  std::vector<Group> groups;
  for (const auto& t : trials) {
    const TrialKey k = key_of(t);
    auto it = std::find_if(groups.begin(), groups.end(), [&](const Group& g) { return same_config(g, k); });
    if (it == groups.end()) {
      Group g = configuration_of(t);
      g.system = k.system;
      g.variant = k.variant;
      groups.push_back(g);
      it = groups.end() - 1;
    }
    if (is_warmup(t))
      ++it->warmups;
    else if (t.status == TrialStatus::kOk)
      it->ok.push_back(&t);
    else if (t.status == TrialStatus::kSkipped)
      ++it->skipped;
    else
      ++it->failed;
  }
  const bool several = std::any_of(groups.begin(), groups.end(), [&](const Group& g) { return !same_model(g, groups[0]); });
  for (Group& g : groups) g.names_model = several;
  return groups;
}

// Grid points with at least one finished trial: the measured tables show only these (the trials
// table lists the failures, and failures_note counts them).
std::vector<Group> finished(const std::vector<Group>& groups) {
  std::vector<Group> out;
  for (const auto& g : groups)
    if (!g.ok.empty()) out.push_back(g);
  return out;
}

// The configuration of a group, system aside: what --table across matches between systems.
bool same_configuration(const Group& a, const Group& b) {
  return a.batch_size == b.batch_size && a.precision == b.precision && a.engine == b.engine && a.epochs == b.epochs &&
         a.power_limit_w == b.power_limit_w && a.variant == b.variant && same_model(a, b);
}

bool same_model(const Group& a, const Group& b) {
  return a.model == b.model && a.compression_ratio == b.compression_ratio;
}

bool model_before(const Group& a, const Group& b) {
  if (a.model != b.model) {
    const std::size_t ra = model_rank(a.model), rb = model_rank(b.model);
    return ra != rb ? ra < rb : a.model < b.model;
  }
  return a.compression_ratio.value_or(-1) < b.compression_ratio.value_or(-1);
}

void sort_for_precision(std::vector<Group>& groups) {
  std::stable_sort(groups.begin(), groups.end(), [](const Group& a, const Group& b) {
    if (!same_model(a, b)) return model_before(a, b);
    if (a.batch_size != b.batch_size) return a.batch_size < b.batch_size;
    if (a.power_limit_w != b.power_limit_w) return watts_label(a.power_limit_w) < watts_label(b.power_limit_w);
    if (a.epochs != b.epochs) return a.epochs < b.epochs;
    if (a.precision != b.precision) return precision_rank(a.precision) < precision_rank(b.precision);
    return a.engine < b.engine;
  });
}

Axes varying(const std::vector<Group>& groups) {
  std::set<int64_t> b, e;
  std::set<std::string> m, r, p, n, l;
  for (const auto& g : groups) {
    m.insert(g.model);
    r.insert(ratio_label(g.compression_ratio));
    b.insert(g.batch_size);
    e.insert(g.epochs);
    p.insert(g.precision);
    n.insert(g.engine);
    l.insert(watts_label(g.power_limit_w));
  }
  Axes a;
  a.model = m.size() > 1;
  a.ratio = r.size() > 1;
  a.batch = b.size() > 1;
  a.precision = p.size() > 1;
  a.engine = n.size() > 1;
  a.limit = l.size() > 1;
  a.epochs = e.size() > 1;
  return a;
}

void axis_columns(Table& t, const Axes& a, bool with_precision) {
  if (a.model) t.columns.push_back("model");
  if (a.ratio) t.columns.push_back("compression_ratio");
  if (a.model || a.ratio) {
    t.columns.push_back("latent");
    t.columns.push_back("parameters");
  }
  if (a.batch) t.columns.push_back("batch_size");
  if (a.precision && with_precision) t.columns.push_back("precision");
  if (a.engine) t.columns.push_back("engine");
  if (a.limit) t.columns.push_back("power_limit");
  if (a.epochs) t.columns.push_back("epochs");
}

void axis_cells(std::vector<json>& row, const Group& g, const Axes& a, bool with_precision) {
  const auto integer = [](const std::optional<int64_t>& v) { return v ? json(*v) : json(nullptr); };
  if (a.model) row.push_back(g.model.empty() ? json(nullptr) : json(g.model));
  if (a.ratio) row.push_back(g.compression_ratio ? json(*g.compression_ratio) : json(nullptr));
  if (a.model || a.ratio) {
    row.push_back(integer(g.latent()));
    row.push_back(integer(g.parameters()));
  }
  if (a.batch) row.push_back(g.batch_size);
  if (a.precision && with_precision) row.push_back(g.precision);
  if (a.engine) row.push_back(g.engine);
  if (a.limit) row.push_back(watts_label(g.power_limit_w));
  if (a.epochs) row.push_back(g.epochs);
}

std::vector<SystemTrials> systems_in(const std::vector<TrialRecord>& trials) {
  std::vector<SystemTrials> out;
  for (const auto& t : trials) {
    const SystemId id = system_of(t);
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const SystemTrials& s) { return s.id.fingerprint == id.fingerprint; });
    if (it == out.end()) {
      out.push_back({id, {}});
      it = out.end() - 1;
    }
    it->trials.push_back(&t);
  }
  return out;
}

}  // namespace balerbench::report
