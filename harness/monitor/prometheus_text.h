// prometheus_text.h: the live metrics in Prometheus' text exposition format
// (version 0.0.4), named by Prometheus' conventions: base units in the name
// (_watts, _joules, _seconds, _bytes), _total on counters.
//
//   balerbench_info{version,command,run_id,host}                      1
//   balerbench_power_watts{meter,domain,kind,category,in_total}          gauge, mean over the trailing second
//   balerbench_energy_joules_total{meter,domain,kind,category,in_total}  counter, since the command started
//     (in_total="false": a domain inside another, e.g. core in package, or wall power; leave it out of sums)
//   balerbench_trial_info{experiment,trial,batch_size,precision,power_limit_w}  1 while a trial runs
//   balerbench_trial_{index,count,epoch,epochs,train_loss,val_loss,samples_per_second,
//                     energy_joules,duration_seconds}{the same labels}
//   process_{resident_memory_bytes,virtual_memory_bytes,cpu_seconds_total,start_time_seconds,threads}
//   balerbench_gpu_memory_{used,total}_bytes{gpu,uuid,name}
//   balerbench_influx_points_{queued,sent,dropped}_total{target}
// Machine-wide series (power, energy, memory) carry no trial labels, so they
// stay one series across a sweep; join them to a trial with balerbench_trial_info.
#pragma once

#include <string>
#include <vector>

#include "harness/monitor/influx_line.h"
#include "harness/monitor/live_metrics.h"
#include "harness/monitor/process_stats.h"

namespace balerbench {

struct ExpositionContext {
  std::string version, run_id, host;
  ProcessStats process;
  std::vector<GpuMemory> gpus;
  std::vector<InfluxStats> influx;
};

std::string render_prometheus(const LiveState& state, const ExpositionContext& context);

// Label values escape backslash, double quote and newline.
std::string prometheus_label_value(const std::string& value);

}  // namespace balerbench
