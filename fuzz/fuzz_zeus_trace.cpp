// fuzz_zeus_trace.cpp: Zeus's published traces (tuning/zeus_trace.h) and their replay
// (tuning/replay.h). The first byte picks what the rest is: a train trace, a power trace, or both
// (split at the first form feed, '\f'), then replayed for the train trace's first dataset, target and
// batch size. A trace that cannot be used is an InputError naming its file and line; a job the
// optimiser cannot finish is a TuningError; nothing else may escape, and a replay's figures are finite.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/error.h"
#include "harness/tuning/replay.h"
#include "harness/tuning/zeus_trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    switch (data[0] % 3) {
      case 0:
        (void)balerbench::parse_train_trace(text, "train.csv");
        break;
      case 1:
        (void)balerbench::parse_power_trace(text, "power.csv");
        break;
      default: {
        const std::size_t cut = text.find('\f');
        if (cut == std::string::npos) return 0;
        const balerbench::TrainTrace train = balerbench::parse_train_trace(text.substr(0, cut), "train.csv");
        const balerbench::PowerTrace power = balerbench::parse_power_trace(text.substr(cut + 1), "power.csv");
        balerbench::ReplayJob job;
        job.dataset = train.rows.front().dataset;
        job.network = train.rows.front().network;
        job.optimizer = train.rows.front().optimizer;
        job.target_metric = train.rows.front().target_metric;
        job.max_epochs = 1 + data[0] % 50;
        job.default_batch_size = train.rows.front().batch_size;
        balerbench::ReplayOptions o;
        o.recurrences = 1 + (data[0] >> 3) % 16;
        o.seed = data[0];
        const balerbench::ReplayResult r = balerbench::replay_job(train, power, job, o);
        if (!std::isfinite(r.total_time_s) || !std::isfinite(r.total_energy_j) || !std::isfinite(r.total_cost_j))
          __builtin_trap();
        (void)balerbench::replay_tables(r);
      }
    }
  } catch (const balerbench::InputError&) {
  } catch (const balerbench::TuningError&) {
  }
  return 0;
}
