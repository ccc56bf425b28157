// batch_size_optimizer_spec.cpp: see batch_size_optimizer_spec.h.
#include "harness/sweep/batch_size_optimizer_spec.h"

#include <cmath>

#include "harness/base/strict_json.h"

namespace balerbench {

using nlohmann::json;

BatchSizeOptimizerSpec parse_batch_size_optimizer_spec(const json& j, const std::string& source) {
  StrictReader br(j, source, "/batch_size_optimizer");
  BatchSizeOptimizerSpec s;
  br.boolean("enabled", s.enabled);
  br.integer("default_batch_size", s.default_batch_size, 1);
  if (br.get("recurrences")) {
    int64_t n = 0;
    br.integer("recurrences", n, 1);
    s.recurrences = n;
  }
  br.number_in("eta", s.eta, 0, 1);
  if (const json* beta = br.get("beta"); beta && beta->is_string()) {
    if (beta->get<std::string>() != "inf") br.fail("beta", "must be a number above 1 or \"inf\"", "Zeus's default is 2");
    s.beta = INFINITY;
  } else {
    br.number_in("beta", s.beta, 1 + 1e-9, 1e9);
  }
  br.integer("seed", s.seed, 0);
  br.integer("max_attempts", s.max_attempts, 1);
  br.integer("pruning_rounds", s.pruning_rounds, 0);
  br.integer("window", s.window, 0);
  br.reject_unknown("batch_size_optimizer keys: enabled, default_batch_size, recurrences, eta, beta, seed, "
                    "max_attempts, pruning_rounds, window");
  return s;
}

json BatchSizeOptimizerSpec::to_json() const {
  if (!enabled) return nullptr;
  return {{"default_batch_size", default_batch_size},
          {"recurrences", recurrences ? json(*recurrences) : json(nullptr)},
          {"eta", eta},
          {"beta", std::isfinite(beta) ? json(beta) : json("inf")},
          {"seed", seed},
          {"max_attempts", max_attempts},
          {"pruning_rounds", pruning_rounds},
          {"window", window}};
}

}  // namespace balerbench
