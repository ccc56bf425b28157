// cpu_activity.cpp: see cpu_activity.h.
#include "harness/base/cpu_activity.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "harness/base/proc_fs.h"
#include "harness/base/stall_watch.h"

namespace balerbench {

CpuActivity read_cpu_activity(const std::string& proc_root) {
  CpuActivity a;
  a.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  const double tick_s = 1.0 / static_cast<double>(std::max(1L, sysconf(_SC_CLK_TCK)));
  const HostStat h = read_host_stat(proc_root);
  if (h.cpu_fields > 0) {
    if (!h.has_cpu(7)) return a;  // user ... softirq; steal may be missing (old kernels)
    using F = HostStat;
    const auto ticks = [&](F::Field f) { return static_cast<double>(h.cpu[f]); };
    a.host_busy_s = (ticks(F::kUser) + ticks(F::kNice) + ticks(F::kSystem) + ticks(F::kIrq) + ticks(F::kSoftirq)) * tick_s;
    a.host_steal_s = (h.has_cpu(8) ? ticks(F::kSteal) : 0.0) * tick_s;
    a.valid = true;
  }
  a.cpus = std::max(h.cpus, 1);
  rusage self{}, children{};
  getrusage(RUSAGE_SELF, &self);
  getrusage(RUSAGE_CHILDREN, &children);
  auto secs = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; };
  a.self_cpu_s = secs(self.ru_utime) + secs(self.ru_stime) + secs(children.ru_utime) + secs(children.ru_stime);
  a.stalled_s = StallWatch::stalled_s();
  return a;
}

std::string DisturbanceThresholds::text() const {
  char buf[200];
  std::snprintf(buf, sizeof buf,
                "other processes above %g CPUs on average, steal above %g%% of the CPU time, or this process not "
                "running for over %g s and %g%% of the window",
                other_cores, steal_fraction * 100, stalled_s, stalled_fraction * 100);
  return buf;
}

nlohmann::json disturbance(const CpuActivity& begin, const CpuActivity& end, const DisturbanceThresholds& th) {
  if (!begin.valid || !end.valid) return nullptr;
  const double window_s = std::max(end.wall_s - begin.wall_s, 1e-9);
  // /proc/stat counts in ticks (10 ms): the host's busy time is known to a tick per CPU at each end.
  const double other_s = std::max(0.0, (end.host_busy_s - begin.host_busy_s) - (end.self_cpu_s - begin.self_cpu_s));
  const double steal_s = std::max(0.0, end.host_steal_s - begin.host_steal_s);
  const double other_cores = other_s / window_s;
  const double steal_fraction = steal_s / (window_s * end.cpus);
  std::string reason;
  char buf[160];
  if (other_cores > th.other_cores) {
    std::snprintf(buf, sizeof buf, "other processes used %.2f CPUs on average", other_cores);
    reason = buf;
  }
  if (steal_fraction > th.steal_fraction) {
    std::snprintf(buf, sizeof buf, "the hypervisor stole %.1f%% of the CPU time", steal_fraction * 100);
    reason += (reason.empty() ? "" : "; ") + std::string(buf);
  }
  // A stall counted only where both ends saw the same watch running.
  std::optional<double> stalled_s;
  if (begin.stalled_s && end.stalled_s && *end.stalled_s >= *begin.stalled_s) stalled_s = *end.stalled_s - *begin.stalled_s;
  if (stalled_s && *stalled_s > th.stalled_s && *stalled_s > th.stalled_fraction * window_s) {
    std::snprintf(buf, sizeof buf,
                  "the process did not run for %.2f s of the %.2f s although it could have (stopped, or the machine "
                  "paused)",
                  *stalled_s, window_s);
    reason += (reason.empty() ? "" : "; ") + std::string(buf);
  }
  return {{"window_s", window_s},         {"other_cpu_s", other_s},
          {"other_cpu_cores", other_cores}, {"steal_s", steal_s},
          {"steal_fraction", steal_fraction}, {"stalled_s", stalled_s ? nlohmann::json(*stalled_s) : nlohmann::json(nullptr)},
          {"disturbed", !reason.empty()},
          {"threshold", th.text()},         {"reason", reason.empty() ? nlohmann::json(nullptr) : nlohmann::json(reason)}};
}

double process_cpu_s() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

}  // namespace balerbench
