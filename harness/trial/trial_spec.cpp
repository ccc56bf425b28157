// trial_spec.cpp: see trial_spec.h.
#include "harness/trial/trial_spec.h"

#include <sstream>

namespace balerbench {
namespace {

using nlohmann::json;

std::string format_number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

}  // namespace

json RecurrenceAttempt::to_json() const {
  json j = plan.to_json();
  j["eta"] = eta;
  j["max_power_w"] = max_power_w;
  return j;
}

std::string TrialSpec::label() const {
  const std::string fidelity = (labels_model ? model() + " " : std::string()) +
                               (labels_ratio ? "cr=" + format_number(compression_ratio()) + " " : std::string());
  return fidelity + "bs=" + std::to_string(batch_size()) + " " + precision_name(precision()) + " " + engine_name(engine()) +
         " pl=" + (power_limit_w ? format_number(*power_limit_w) + "W" : std::string("-")) +
         " ep=" + std::to_string(epochs()) +
         (warmup       ? " warm-up"
          : recurrence ? " recurrence " + std::to_string(recurrence->plan.recurrence + 1) + " attempt " +
                             std::to_string(recurrence->plan.attempt) + " (" + recurrence->plan.stage +
                             (recurrence->plan.profile_power_limit ? ", profiling limits" : "") + ")"
                       : " #" + std::to_string(repeat));
}

}  // namespace balerbench
