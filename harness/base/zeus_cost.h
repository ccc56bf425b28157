// zeus_cost.h: Zeus' cost of a run (docs/batch_size_and_power_limit.md):
// cost = eta * ETA + (1 - eta) * MaxPower * TTA, with ETA in J, TTA in s and MaxPower in W (the
// GPUs' maximum power limit x their count: it only converts seconds into joules), eta in [0, 1];
// small eta favours time, large eta energy.
#pragma once

namespace balerbench {

double zeus_cost(double eta, double energy_j, double time_s, double max_power_w);

}  // namespace balerbench
