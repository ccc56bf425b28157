// experiment_rules.h: what an experiment's sections must agree on, checked once they are all read
// (parse_experiment, experiment.h): each section's own reader sees only its section. Internal to
// sweep/.
#pragma once

#include <string>

#include "harness/sweep/experiment.h"

namespace balerbench {

// Power limits change only when /allow_power_limit_changes says so, /power_limit_optimizer needs
// measured energy, and the optimiser and a list of limits in /sweep/power_limit_w exclude each other.
void check_power_limit_rules(const Experiment& e, const std::string& source);

// With /batch_size_optimizer enabled the job runs recurrences, not a grid: one value on every axis
// but batch size (the default batch size among them), a target each attempt stops at (it sets
// e.target.stop_when_reached), measured energy, no repeats, warm-ups, shuffling nor listed limits.
void check_batch_size_optimizer_rules(Experiment& e, const std::string& source);

}  // namespace balerbench
