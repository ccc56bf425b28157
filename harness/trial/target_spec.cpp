// target_spec.cpp: see target_spec.h.
#include "harness/trial/target_spec.h"

#include <optional>

#include "harness/base/strict_json.h"

namespace balerbench {

using nlohmann::json;

TargetSpec parse_target_spec(const json& j, const std::string& source) {
  StrictReader tr(j, source, "/target");
  TargetSpec target;
  std::optional<double> val_loss, rel;
  tr.optional_number_in("val_loss", val_loss, 0, 1e300);
  tr.optional_number_in("relative_error", rel, 0, 1e300);
  if (val_loss.has_value() == rel.has_value())
    tr.fail(val_loss ? "relative_error" : "val_loss", "give exactly one of val_loss and relative_error");
  target.metric = val_loss ? "val_loss" : "relative_error";
  target.value = val_loss ? *val_loss : *rel;
  tr.boolean("stop_when_reached", target.stop_when_reached);
  tr.reject_unknown("target keys: val_loss or relative_error, stop_when_reached");
  return target;
}

json TargetSpec::to_json() const {
  if (!enabled()) return nullptr;
  return {{"metric", metric}, {"value", value}, {"stop_when_reached", stop_when_reached}};
}

}  // namespace balerbench
