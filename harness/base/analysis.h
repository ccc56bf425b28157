// analysis.h: kept for the two includers other work is changing now (sweep/trial_stages.cpp,
// run/thread_calibration.cpp); include what you use instead: zeus_cost.h (Zeus' cost),
// statistics.h (repeats, intervals, tests), pareto.h (the frontier).
#pragma once

#include "harness/base/pareto.h"
#include "harness/base/statistics.h"
#include "harness/base/zeus_cost.h"
