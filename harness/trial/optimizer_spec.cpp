// optimizer_spec.cpp: see optimizer_spec.h.
#include "harness/trial/optimizer_spec.h"

#include "harness/base/strict_json.h"

namespace balerbench {

using nlohmann::json;

OptimizerSpec parse_optimizer_spec(const json& j, const std::string& source) {
  StrictReader orr(j, source, "/power_limit_optimizer");
  OptimizerSpec o;
  orr.boolean("enabled", o.enabled);
  orr.number_in("eta", o.eta, 0, 1);
  orr.integer("wait_steps", o.wait_steps, 0);
  orr.integer("warmup_steps", o.warmup_steps, 0);
  orr.integer("profile_steps", o.profile_steps, 1);
  orr.number_in("pl_step_w", o.pl_step_w, 1, 1000);
  orr.reject_unknown("power_limit_optimizer keys: enabled, eta, wait_steps, warmup_steps, profile_steps, pl_step_w");
  return o;
}

json OptimizerSpec::to_json() const {
  if (!enabled) return nullptr;
  return {{"eta", eta},
          {"wait_steps", wait_steps},
          {"warmup_steps", warmup_steps},
          {"profile_steps", profile_steps},
          {"pl_step_w", pl_step_w}};
}

}  // namespace balerbench
