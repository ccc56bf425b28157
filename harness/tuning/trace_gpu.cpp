// trace_gpu.cpp: see trace_gpu.h. TraceGpu is the GPU the optimiser profiles: its limits are the
// batch size's rows, its meter readings their shares of an epoch.
#include "harness/tuning/trace_gpu.h"

#include <stdexcept>

#include "harness/power/optimizer.h"
#include "harness/tuning/replay_text.h"

namespace balerbench {
namespace {

// A GPU made of trace rows, for the power-limit optimiser's live interface: at the limit in force,
// each of an epoch's `steps` steps takes 1/steps of the row's time per epoch and energy per epoch.
// Its readings count from the last limit change (a reading's origin is free, power/optimizer.h), so a
// profile's time and energy are the row's shares exactly, not differences of growing sums.
class TraceGpu {
 public:
  TraceGpu(const std::vector<PowerPoint>& points, int64_t steps) : points_(points), steps_(steps) {}
  void set_limit(double w) {
    current_ = nullptr;
    for (const PowerPoint& p : points_)
      if (p.limit_w == w) current_ = &p;
    if (!current_) throw std::logic_error("replay: the optimiser set " + num_text(w) + " W, which has no row");
    since_ = {0, 0};
  }
  void step() {
    if (!current_) throw std::logic_error("replay: a step before any limit was set");
    const double dt = current_->time_per_epoch_s / static_cast<double>(steps_);
    const double de = current_->energy_per_epoch_j() / static_cast<double>(steps_);
    since_.time_s += dt;
    since_.energy_j += de;
    total_time_s += dt;
    total_energy_j += de;
  }
  PowerLimitOptimizer::Reading reading() const { return since_; }
  double total_time_s = 0, total_energy_j = 0;

 private:
  const std::vector<PowerPoint>& points_;
  int64_t steps_;
  const PowerPoint* current_ = nullptr;
  PowerLimitOptimizer::Reading since_;
};

}  // namespace

Profile profile_limits(const std::vector<PowerPoint>& points, double eta) {
  std::vector<double> limits;
  for (const PowerPoint& p : points) limits.push_back(p.limit_w);
  const int64_t steps = static_cast<int64_t>(limits.size());
  TraceGpu gpu(points, steps);
  OptimizerOptions oo;
  oo.eta = eta;
  oo.wait_steps = 0;
  oo.warmup_steps = 0;
  oo.profile_steps = 1;
  oo.gpu_count = 1;
  PowerLimitOptimizer opt(
      oo, limits, [&gpu](double w) { gpu.set_limit(w); }, [&gpu] { return gpu.reading(); });
  for (int64_t s = 0; s < steps; ++s) {
    opt.on_step_begin();
    gpu.step();
    opt.on_step_end();
  }
  opt.on_epoch_end();
  if (opt.state() != PowerLimitOptimizer::State::kDone || !opt.chosen_w())
    throw std::logic_error("replay: the power-limit optimiser did not finish in one epoch");
  return {*opt.chosen_w(), gpu.total_time_s, gpu.total_energy_j, opt.to_json()};
}

double trace_optimum(const std::vector<PowerPoint>& points, double eta) {
  const double max_w = points.front().limit_w;
  double best = 0, best_cost = 0;
  for (const PowerPoint& p : points) {  // highest first
    const double cost = (eta * p.average_power_w + (1 - eta) * max_w) * p.time_per_epoch_s;
    if (best == 0 || cost < best_cost) {
      best = p.limit_w;
      best_cost = cost;
    }
  }
  return best;
}

}  // namespace balerbench
