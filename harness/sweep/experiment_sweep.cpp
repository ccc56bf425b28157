// experiment_sweep.cpp: see experiment_sweep.h.
#include "harness/sweep/experiment_sweep.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "common/error.h"
#include "harness/base/strict_json.h"
#include "models/architecture.h"

namespace balerbench {
namespace {

using nlohmann::json;

// One axis of /sweep: a list of values (a single value is a list of one), each listed once; `fallback`
// when absent or null.
template <typename T, typename F>
std::vector<T> axis(StrictReader& r, const std::string& key, std::vector<T> fallback, F read_one) {
  const json* v = r.get(key);
  if (!v) return fallback;
  if (!v->is_array()) {
    std::vector<T> one{read_one(*v, key)};
    return one;
  }
  if (v->empty()) r.fail(key, "must list at least one value");
  std::vector<T> out;
  std::map<T, std::size_t> seen;  // value -> its first place
  for (std::size_t i = 0; i < v->size(); ++i) {
    const std::string at = key + "/" + std::to_string(i);
    T value = read_one((*v)[i], at);
    // A value listed twice would be the same trials twice under one key: the second would read as
    // "already stored by another run".
    if (const auto first = seen.find(value); first != seen.end())
      r.fail(at, "repeats " + shown((*v)[i]) + ", already listed at " + key + "/" + std::to_string(first->second),
             "list each value once; for more measurements of one configuration raise /sweep/repeats");
    seen.emplace(value, i);
    out.push_back(std::move(value));
  }
  return out;
}

// "AE, AE_Dropout_BN, CFD_dense_AE, FPGA_prototype_model": the dense models balerbench trains.
std::string model_list() {
  std::string s;
  for (const auto& name : model_names()) s += (s.empty() ? "" : ", ") + name;
  return s;
}

std::string checked_model(const StrictReader& r, const std::string& key, const std::string& name) {
  if (name.empty()) r.fail(key, "is required", "one of: " + model_list());
  try {
    check_model_name(name);
  } catch (const InputError& err) {
    r.fail(key, err.what());
  }
  return name;
}

double checked_ratio(const StrictReader& r, const std::string& key, const json& v) {
  if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>()))
    r.fail(key, "must be a positive number, got " + shown(v), kCompressionRatioHint);
  return v.get<double>();
}

bool listed(const json& sweep, const char* key) { return sweep.contains(key) && !sweep[key].is_null(); }

// A setting given in /model and as an axis of /sweep: which would the trials use? Refused, at the axis.
[[noreturn]] void refuse_twice(const json& sweep, const std::string& source, const std::string& axis_key,
                               const std::string& model_key, const json& model_value, const std::string& what) {
  StrictReader(sweep, source, "/sweep")
      .fail(axis_key,
            "conflicts with /model/" + model_key + " (" + shown(model_value) + "): the " + what +
                " is set in both places",
            "give it in one place: to sweep it, list every value in /sweep/" + axis_key + " and remove /model/" +
                model_key + "; for one value, remove /sweep/" + axis_key);
}

// /model's name and compression ratio; each required unless /sweep lists it, and refused when it does.
std::pair<std::optional<std::string>, std::optional<double>> parse_model_section(const json* model, const json& sweep,
                                                                                 const json& root,
                                                                                 const std::string& source) {
  const bool model_axis = listed(sweep, "model"), ratio_axis = listed(sweep, "compression_ratio");
  if (!model) {
    if (!model_axis || !ratio_axis)
      StrictReader(root, source).fail("model", "is required",
                                      "{\"name\": \"AE\", \"compression_ratio\": 1.6}, or the axes /sweep/model and "
                                      "/sweep/compression_ratio");
    return {};
  }
  StrictReader mr(*model, source, "/model");
  std::optional<std::string> name;
  std::optional<double> ratio;
  if (const json* n = mr.get("name")) {
    if (model_axis) refuse_twice(sweep, source, "model", "name", *n, "model");
    std::string text;
    mr.str("name", text);
    name = checked_model(mr, "name", text);
  } else if (!model_axis) {
    mr.fail("name", "is required", "one of: " + model_list() + "; or list several in /sweep/model");
  }
  if (const json* r = mr.get("compression_ratio")) {
    if (ratio_axis) refuse_twice(sweep, source, "compression_ratio", "compression_ratio", *r, "compression ratio");
    ratio = checked_ratio(mr, "compression_ratio", *r);
  } else if (!ratio_axis) {
    mr.fail("compression_ratio", "is required", std::string(kCompressionRatioHint) + "; or list several in "
                                                "/sweep/compression_ratio");
  }
  mr.reject_unknown("model keys: name, compression_ratio");
  return {name, ratio};
}

// /sweep/power_limit_w: watts or null (the limit in force), at least one; [null] when absent.
std::vector<std::optional<double>> parse_power_limit_axis(StrictReader& sr, const json& sweep) {
  std::vector<std::optional<double>> limits;
  if (const json* v = sr.get("power_limit_w"); v && !v->is_array())
    sr.fail("power_limit_w", "expected a list of watts or null, e.g. [null] or [300, 250, 200]");
  if (const json* v = sweep.contains("power_limit_w") ? &sweep["power_limit_w"] : nullptr) {
    if (v->empty()) sr.fail("power_limit_w", "must list at least one value (null = leave the limit as it is)");
    std::map<std::optional<double>, std::size_t> seen;  // limit -> its first place
    for (std::size_t i = 0; i < v->size(); ++i) {
      const json& w = (*v)[i];
      const std::string at = "power_limit_w/" + std::to_string(i);
      if (w.is_null())
        limits.emplace_back(std::nullopt);
      else if (w.is_number() && w.get<double>() > 0 && w.get<double>() < 100000)
        limits.emplace_back(w.get<double>());
      else
        sr.fail(at, "must be a positive number of watts or null, got " + shown(w),
                "watts below 100000 without quotes, or null for the limit in force, e.g. [null, 250]");
      if (const auto first = seen.find(limits.back()); first != seen.end())
        sr.fail(at, "repeats " + shown(w) + ", already listed at power_limit_w/" + std::to_string(first->second),
                "list each limit once; for more measurements of one configuration raise /sweep/repeats");
      seen.emplace(limits.back(), i);
    }
  } else {
    limits = {std::nullopt};
  }
  return limits;
}

// /sweep/batch_size, precision and engine.
void parse_training_axes(StrictReader& sr, Experiment& e) {
  e.batch_sizes = axis<int64_t>(sr, "batch_size", {512}, [&](const json& v, const std::string& k) {
    if (!v.is_number_integer() || v.get<int64_t>() < 1)
      sr.fail(k, "must be a positive integer, got " + shown(v),
              integer_range_hint(1, training_defaults::kMaxBatchSize));
    if (v.get<int64_t>() > training_defaults::kMaxBatchSize)
      sr.fail(k, "must be at most " + std::to_string(training_defaults::kMaxBatchSize) + ", got " + shown(v),
              "a batch larger than the training rows trains on all of them at once");
    return v.get<int64_t>();
  });
  e.precisions = axis<Precision>(sr, "precision", {Precision::kAuto}, [&](const json& v, const std::string& k) {
    if (!v.is_string()) sr.fail(k, "expected a precision name, got " + shown(v), "one of: " + precision_name_list());
    const std::string p = v.get<std::string>();
    const std::optional<Precision> mode = find_precision(p);
    if (!mode) sr.fail(k, "invalid precision '" + p + "'", "one of: " + precision_name_list());
    return *mode;
  });
  e.engines = axis<EngineKind>(sr, "engine", {e.base.engine}, [&](const json& v, const std::string& k) {
    if (!v.is_string()) sr.fail(k, "expected an engine name, got " + shown(v), "one of: " + engine_name_list());
    const std::optional<EngineKind> engine = find_engine(v.get<std::string>());
    if (!engine) sr.fail(k, "invalid engine " + shown(v), "one of: " + engine_name_list());
    return *engine;
  });
}

}  // namespace

void parse_model_axes(const json* model, const json& sweep, const json& root, const std::string& source,
                      Experiment& e) {
  const auto [name, ratio] = parse_model_section(model, sweep, root, source);
  StrictReader sr(sweep, source, "/sweep");
  e.models = axis<std::string>(sr, "model", {name.value_or("")}, [&](const json& v, const std::string& k) {
    if (!v.is_string()) sr.fail(k, "expected a model name, got " + shown(v), "one of: " + model_list());
    return checked_model(sr, k, v.get<std::string>());
  });
  e.compression_ratios = axis<double>(sr, "compression_ratio", {ratio.value_or(0)},
                                      [&](const json& v, const std::string& k) { return checked_ratio(sr, k, v); });
  // Two ratios the tables print alike (4 significant digits) would be two rows no reader can tell apart.
  std::map<std::string, double> printed;
  for (std::size_t i = 0; i < e.compression_ratios.size(); ++i) {
    char text[32];
    std::snprintf(text, sizeof text, "%.4g", e.compression_ratios[i]);
    if (const auto [at, fresh] = printed.emplace(text, e.compression_ratios[i]); !fresh)
      sr.fail("compression_ratio/" + std::to_string(i),
              json(e.compression_ratios[i]).dump() + " and " + json(at->second).dump() + " both print as " + text +
                  " in the tables",
              "list ratios that differ in their first 4 significant digits");
  }
  e.models_path = name ? "/model/name" : "/sweep/model";
  e.compression_ratios_path = ratio ? "/model/compression_ratio" : "/sweep/compression_ratio";
}

void parse_sweep_section(const json& sweep, const std::string& source, Experiment& e) {
  StrictReader sr(sweep, source, "/sweep");
  (void)sr.get("model");  // parse_model_axes's
  (void)sr.get("compression_ratio");
  parse_training_axes(sr, e);
  e.power_limits_w = parse_power_limit_axis(sr, sweep);
  e.epochs = axis<int64_t>(sr, "epochs", {e.base.epochs}, [&](const json& v, const std::string& k) {
    if (!v.is_number_integer() || v.get<int64_t>() < 1)
      sr.fail(k, "must be a positive integer, got " + shown(v), integer_range_hint(1));
    return v.get<int64_t>();
  });
  sr.integer("repeats", e.repeats, 1, kMaxRepeats);
  sr.choice("order", e.order, {"interleaved", "shuffled", "grid"});
  sr.integer("order_seed", e.order_seed, 0);
  sr.integer("warmup_trials", e.warmup_trials, 0, kMaxRepeats);
  if (e.order != "shuffled" && sweep.contains("order_seed"))
    sr.fail("order_seed", "only applies to \"order\": \"shuffled\"", "remove it, or set \"order\": \"shuffled\"");
  sr.reject_unknown("sweep keys: model, compression_ratio, batch_size, precision, engine, power_limit_w, epochs, "
                    "repeats, order, order_seed, warmup_trials");
}

}  // namespace balerbench
