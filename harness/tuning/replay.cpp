// replay.cpp: see replay.h. replay_job reads as: the job resolved against the traces (workload,
// target, batch sizes, limits, runs), then the recurrences (each attempt planned by the tuner, its
// power limit profiled just in time through the power-limit optimiser on a GPU made of trace rows,
// its run sampled from the train trace), then the expected figures of the default, the final choice
// and the best in hindsight.
#include "harness/tuning/replay.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <set>
#include <sstream>

#include "common/error.h"
#include "harness/base/analysis.h"
#include "harness/power/optimizer.h"
#include "harness/tuning/seeded_random.h"

namespace balerbench {
namespace {

using nlohmann::json;

std::string num_text(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

template <typename T>
std::string list_text(const T& values, const char* unit = "") {
  std::string s;
  for (const auto& v : values) s += (s.empty() ? "" : ", ") + num_text(static_cast<double>(v)) + unit;
  return s.empty() ? "none" : s;
}

std::string workload_name(const std::string& d, const std::string& n, const std::string& o) {
  return d + "/" + n + "/" + o;
}

// The GPU a power trace measured: "v100" from summary_power_v100.csv, else the file's stem.
std::string gpu_of(const std::string& power_file) {
  const std::string stem = std::filesystem::path(power_file).stem().string();
  const std::string prefix = "summary_power_";
  return stem.rfind(prefix, 0) == 0 && stem.size() > prefix.size() ? stem.substr(prefix.size()) : stem;
}

// The only value of `field` among `rows` of the dataset, for a network or optimizer not given.
template <typename Row>
std::string only_value(const std::vector<Row>& rows, const std::string& dataset, std::string Row::*field,
                       const std::string& file, const char* what, const char* option) {
  std::set<std::string> values;
  for (const Row& r : rows)
    if (r.dataset == dataset) values.insert(r.*field);
  if (values.empty()) {
    std::set<std::string> datasets;
    for (const Row& r : rows) datasets.insert(r.dataset);
    std::string list;
    for (const auto& d : datasets) list += (list.empty() ? "" : ", ") + d;
    throw InputError(file + ": no rows for dataset '" + dataset + "'", "its datasets: " + list);
  }
  if (values.size() > 1) {
    std::string list;
    for (const auto& v : values) list += (list.empty() ? "" : ", ") + v;
    throw InputError(file + ": dataset '" + dataset + "' has rows for several " + what + "s (" + list + ")",
                     std::string("choose one with ") + option);
  }
  return *values.begin();
}

struct RunPath {
  int64_t run = 0;
  std::optional<int64_t> target_epoch;
  int64_t line = 0;
};

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

// The just-in-time profile of one batch size: the power-limit optimiser, on a GPU made of the batch
// size's rows, profiles every limit for an equal share of one epoch (no wait, no warm-up: the trace
// has no warm-up effects), highest first, and chooses the cheapest.
struct Profile {
  double chosen_w = 0, epoch_time_s = 0, epoch_energy_j = 0;
  json optimizer;
};
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

// The limit whose row costs least per epoch (ties: the highest), at the batch size's MaxPower.
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

const PowerPoint& point_at(const std::vector<PowerPoint>& points, double w) {
  for (const PowerPoint& p : points)
    if (p.limit_w == w) return p;
  throw std::logic_error("replay: no point at " + num_text(w) + " W");
}

// Everything replay_job works from, once the job is resolved against the traces.
struct Resolved {
  std::string dataset, network, optimizer;
  double target = 0;
  int64_t max_epochs = 0, default_bs = 0;
  std::string default_rule;
  std::vector<int64_t> batch_sizes;
  std::map<int64_t, std::vector<PowerPoint>> power;
  std::map<int64_t, std::vector<RunPath>> runs;
  std::set<double> limits;
  double max_power_w = 0;
  std::vector<std::string> notes;
};

std::vector<PowerPoint> points_for(const std::vector<const PowerRow*>& rows, const ReplayJob& job, int64_t bs,
                                   const std::string& workload, const std::string& file,
                                   std::vector<std::string>& notes) {
  std::vector<PowerPoint> measured;
  for (const PowerRow* r : rows)
    measured.push_back(
        {r->power_limit_w, r->time_per_epoch_s, r->average_power_w, "line " + std::to_string(r->line), false});
  std::sort(measured.begin(), measured.end(),
            [](const PowerPoint& a, const PowerPoint& b) { return a.limit_w > b.limit_w; });
  if (job.power_limits_w.empty()) return measured;
  std::vector<double> wanted = job.power_limits_w;
  std::sort(wanted.begin(), wanted.end(), std::greater<double>());
  wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
  std::vector<double> have;
  for (const PowerPoint& p : measured) have.push_back(p.limit_w);
  const std::string where = file + ":" + std::to_string(rows.front()->line);
  std::vector<PowerPoint> out;
  for (double w : wanted) {
    const auto exact =
        std::find_if(measured.begin(), measured.end(), [w](const PowerPoint& p) { return p.limit_w == w; });
    if (exact != measured.end()) {
      out.push_back(*exact);
      continue;
    }
    if (!job.interpolate)
      throw InputError(
          where + ": batch size " + std::to_string(bs) + " of " + workload + " has no row at " + num_text(w) + " W",
          "its measured limits: " + list_text(have, " W") + "; drop " + num_text(w) +
              " from --power-limits, or add --interpolate to interpolate linearly between the measured "
              "limits around it (labelled interpolated)");
    const PowerPoint* hi = nullptr;
    const PowerPoint* lo = nullptr;
    for (const PowerPoint& p : measured) {
      if (p.limit_w > w && (!hi || p.limit_w < hi->limit_w)) hi = &p;
      if (p.limit_w < w && (!lo || p.limit_w > lo->limit_w)) lo = &p;
    }
    if (!hi || !lo)
      throw InputError(where + ": batch size " + std::to_string(bs) + " of " + workload + " has no row at " +
                           num_text(w) + " W, and no measured limit " + (hi ? "below" : "above") + " it",
                       "replay interpolates between measured limits, never beyond them; its measured limits: " +
                           list_text(have, " W"));
    const double f = (w - lo->limit_w) / (hi->limit_w - lo->limit_w);
    PowerPoint p;
    p.limit_w = w;
    p.time_per_epoch_s = lo->time_per_epoch_s + f * (hi->time_per_epoch_s - lo->time_per_epoch_s);
    p.average_power_w = lo->average_power_w + f * (hi->average_power_w - lo->average_power_w);
    p.interpolated = true;
    p.source = "interpolated between " + num_text(lo->limit_w) + " W (" + lo->source + ") and " +
               num_text(hi->limit_w) + " W (" + hi->source + ")";
    notes.push_back("batch size " + std::to_string(bs) + " at " + num_text(w) + " W: " + p.source +
                    " (time per epoch and average power each linearly)");
    out.push_back(p);
  }
  return out;
}

Resolved resolve(const TrainTrace& train, const PowerTrace& power, const ReplayJob& job) {
  Resolved r;
  r.dataset = job.dataset;
  if (r.dataset.empty()) throw InputError("no dataset given", "name the workload's dataset, e.g. --workload cifar100");
  const ZeusJobDefaults* d = find_zeus_job_defaults(r.dataset);
  r.network = !job.network.empty() ? job.network
              : d                  ? d->network
                  : only_value(train.rows, r.dataset, &TrainRow::network, train.file, "network", "--network");
  r.optimizer = !job.optimizer.empty() ? job.optimizer
                : d                    ? d->optimizer
                    : only_value(train.rows, r.dataset, &TrainRow::optimizer, train.file, "optimizer", "--optimizer");
  const std::string workload = workload_name(r.dataset, r.network, r.optimizer);
  auto of_workload = [&](const auto& row) {
    return row.dataset == r.dataset && row.network == r.network && row.optimizer == r.optimizer;
  };
  std::vector<const TrainRow*> trows;
  for (const TrainRow& t : train.rows)
    if (of_workload(t)) trows.push_back(&t);
  std::vector<const PowerRow*> prows;
  for (const PowerRow& p : power.rows)
    if (of_workload(p)) prows.push_back(&p);
  auto workloads_in = [](const auto& rows) {
    std::set<std::string> w;
    for (const auto& x : rows) w.insert(workload_name(x.dataset, x.network, x.optimizer));
    std::string s;
    for (const auto& x : w) s += (s.empty() ? "" : ", ") + x;
    return s;
  };
  if (trows.empty())
    throw InputError(train.file + ": no rows for " + workload, "its workloads: " + workloads_in(train.rows));
  if (prows.empty())
    throw InputError(power.file + ": no rows for " + workload, "its workloads: " + workloads_in(power.rows));

  // The target and the epochs allowed.
  std::set<double> targets;
  for (const TrainRow* t : trows) targets.insert(t->target_metric);
  if (job.target_metric)
    r.target = *job.target_metric;
  else if (d)
    r.target = d->target_metric;
  else
    throw InputError(r.dataset + " is not one of Zeus's six workloads: give its target with --target",
                     "the targets in " + train.file + ": " + list_text(targets));
  if (!targets.count(r.target))
    throw InputError(train.file + ": no row of " + workload + " has target_metric " + num_text(r.target),
                     "its targets: " + list_text(targets));
  if (job.max_epochs)
    r.max_epochs = *job.max_epochs;
  else if (d)
    r.max_epochs = d->max_epochs;
  else
    throw InputError(r.dataset + " is not one of Zeus's six workloads: give its epoch limit with --max-epochs",
                     "the most epochs a recurrence may train before it is stopped unreached");
  if (r.max_epochs < 1) throw InputError("--max-epochs must be at least 1");

  // The batch sizes: those both traces hold (Zeus's simulator joins them), at the target.
  std::map<int64_t, int64_t> train_line, power_line;  // batch size -> its first line
  for (const TrainRow* t : trows) train_line.emplace(t->batch_size, t->line);
  for (const PowerRow* p : prows) power_line.emplace(p->batch_size, p->line);
  std::map<int64_t, std::vector<RunPath>> at_target;
  for (const TrainRow* t : trows)
    if (t->target_metric == r.target) at_target[t->batch_size].push_back({t->run, t->target_epoch, t->line});
  std::vector<int64_t> train_only, power_only;
  for (const auto& [bs, line] : train_line)
    if (!power_line.count(bs)) train_only.push_back(bs);
  for (const auto& [bs, line] : power_line)
    if (!train_line.count(bs)) power_only.push_back(bs);
  auto check_batch_size = [&](int64_t bs, const char* why) {
    if (!train_line.count(bs) && !power_line.count(bs))
      throw InputError(train.file + ": batch size " + std::to_string(bs) + " (" + why + ") of " + workload +
                           " has no rows in either trace",
                       "the batch sizes both traces hold: " + list_text([&] {
                         std::vector<int64_t> both;
                         for (const auto& [b, l] : train_line)
                           if (power_line.count(b)) both.push_back(b);
                         return both;
                       }()));
    if (!power_line.count(bs))
      throw InputError(train.file + ":" + std::to_string(train_line.at(bs)) + ": batch size " + std::to_string(bs) +
                           " (" + why + ") of " + workload + " has no power rows in " + power.file,
                       "replay never invents a measurement: choose batch sizes the power trace measured (" +
                           list_text([&] {
                             std::vector<int64_t> v;
                             for (const auto& [b, l] : power_line) v.push_back(b);
                             return v;
                           }()) +
                           ")");
    if (!train_line.count(bs))
      throw InputError(power.file + ":" + std::to_string(power_line.at(bs)) + ": batch size " + std::to_string(bs) +
                           " (" + why + ") of " + workload + " has no rows in " + train.file,
                       "without training runs there is no epoch to target; choose batch sizes the train trace holds");
    if (!at_target.count(bs))
      throw InputError(train.file + ":" + std::to_string(train_line.at(bs)) + ": batch size " + std::to_string(bs) +
                           " (" + why + ") of " + workload + " has no row at target_metric " + num_text(r.target),
                       "each batch size needs its runs' epochs to that target; drop it with --batch-sizes");
  };
  if (!job.batch_sizes.empty()) {
    for (int64_t bs : job.batch_sizes) check_batch_size(bs, "listed");
    r.batch_sizes = job.batch_sizes;
    std::sort(r.batch_sizes.begin(), r.batch_sizes.end());
    r.batch_sizes.erase(std::unique(r.batch_sizes.begin(), r.batch_sizes.end()), r.batch_sizes.end());
  } else {
    for (const auto& [bs, line] : train_line)
      if (power_line.count(bs)) {
        check_batch_size(bs, "in both traces");
        r.batch_sizes.push_back(bs);
      }
    if (!train_only.empty())
      r.notes.push_back("left out, as Zeus's simulator joins the traces: batch sizes " + list_text(train_only) +
                        " (in " + train.file + " only, no power rows on this GPU)");
    if (!power_only.empty())
      r.notes.push_back("left out: batch sizes " + list_text(power_only) + " (in " + power.file +
                        " only, no training runs)");
  }

  // The default batch size.
  if (job.default_batch_size) {
    r.default_bs = *job.default_batch_size;
    r.default_rule = "given";
  } else if (d) {
    int64_t bmax = 0;  // the largest batch size this GPU measured for the dataset (any network, optimizer)
    for (const PowerRow& p : power.rows)
      if (p.dataset == r.dataset) bmax = std::max(bmax, p.batch_size);
    r.default_bs = std::min(d->default_batch_size, bmax);
    r.default_rule = "Zeus's rule: min(" + std::to_string(d->default_batch_size) + ", the largest batch size " +
                     power.file + " measured for " + r.dataset + ", " + std::to_string(bmax) + ")";
  } else {
    throw InputError(r.dataset +
                         " is not one of Zeus's six workloads: give its default batch size with "
                         "--default-batch-size",
                     "the batch size the job would use without the optimiser; one of " + list_text(r.batch_sizes));
  }
  if (std::find(r.batch_sizes.begin(), r.batch_sizes.end(), r.default_bs) == r.batch_sizes.end()) {
    check_batch_size(r.default_bs, "the default");
    throw InputError("the default batch size " + std::to_string(r.default_bs) + " is not among the batch sizes " +
                         list_text(r.batch_sizes),
                     "add it to --batch-sizes: the first recurrence starts there");
  }

  // Power per batch size, and the runs.
  for (int64_t bs : r.batch_sizes) {
    std::vector<const PowerRow*> rows;
    for (const PowerRow* p : prows)
      if (p->batch_size == bs) rows.push_back(p);
    r.power[bs] = points_for(rows, job, bs, workload, power.file, r.notes);
    for (const PowerPoint& p : r.power[bs]) r.limits.insert(p.limit_w);
    r.runs[bs] = at_target.at(bs);
  }
  // MaxPower, as Zeus's simulator: the largest limit among the power rows the train trace joins.
  std::set<std::tuple<std::string, std::string, std::string, int64_t>> trained;
  for (const TrainRow& t : train.rows) trained.insert({t.dataset, t.network, t.optimizer, t.batch_size});
  for (const PowerRow& p : power.rows)
    if (trained.count({p.dataset, p.network, p.optimizer, p.batch_size}))
      r.max_power_w = std::max(r.max_power_w, p.power_limit_w);
  return r;
}

Expected expected_of(const Resolved& r, int64_t bs, double w, double eta) {
  const PowerPoint& p = point_at(r.power.at(bs), w);
  Expected e;
  e.batch_size = bs;
  e.power_limit_w = w;
  e.interpolated = p.interpolated;
  double epochs = 0;
  for (const RunPath& run : r.runs.at(bs)) {
    ++e.runs;
    if (run.target_epoch && *run.target_epoch <= r.max_epochs) {
      ++e.runs_reached;
      epochs += static_cast<double>(*run.target_epoch);
    }
  }
  if (e.runs_reached == 0) return e;
  e.mean_epochs = epochs / static_cast<double>(e.runs_reached);
  e.tta_s = e.mean_epochs * p.time_per_epoch_s;
  e.eta_j = e.tta_s * p.average_power_w;
  e.cost_j = zeus_cost(eta, e.eta_j, e.tta_s, r.max_power_w);
  return e;
}

}  // namespace

const std::vector<ZeusJobDefaults>& zeus_job_defaults() {
  static const std::vector<ZeusJobDefaults> kDefaults = {
      {"cifar100", "shufflenetv2", "adadelta", 0.6, 100, 1024},
      {"imagenet", "resnet50", "adadelta", 0.65, 100, 256},
      {"squad", "bert_base_uncased", "adamw", 84.0, 6, 32},
      {"librispeech", "deepspeech2", "adamw", 40.0, 16, 256},
      {"movielens-1m", "ncf", "adam", 0.41, 100, 1024},
      {"sentiment140", "bert_base_uncased", "adamw", 0.84, 10, 128},
  };
  return kDefaults;
}

const ZeusJobDefaults* find_zeus_job_defaults(const std::string& dataset) {
  for (const ZeusJobDefaults& d : zeus_job_defaults())
    if (d.dataset == dataset) return &d;
  return nullptr;
}

json Expected::to_json() const {
  return {{"batch_size", batch_size},
          {"power_limit_w", power_limit_w},
          {"runs", runs},
          {"runs_reached", runs_reached},
          {"mean_epochs", runs_reached ? json(mean_epochs) : json(nullptr)},
          {"tta_s", runs_reached ? json(tta_s) : json(nullptr)},
          {"eta_j", runs_reached ? json(eta_j) : json(nullptr)},
          {"cost_j", runs_reached ? json(cost_j) : json(nullptr)},
          {"interpolated", interpolated}};
}

ReplayResult replay_job(const TrainTrace& train, const PowerTrace& power, const ReplayJob& job,
                        const ReplayOptions& options) {
  if (!(options.eta >= 0 && options.eta <= 1)) throw InputError("--eta must be in [0, 1]");
  if (!(options.beta > 1))
    throw InputError("--beta must be greater than 1", "Zeus's default is 2; inf turns the early stop off");
  if (options.recurrences && *options.recurrences < 1) throw InputError("--recurrences must be at least 1");
  const Resolved rv = resolve(train, power, job);
  ReplayResult out;
  out.train_file = train.file;
  out.power_file = power.file;
  out.job = {rv.dataset, rv.network, rv.optimizer, rv.target, rv.max_epochs, rv.default_bs};
  out.default_batch_size_rule = rv.default_rule;
  out.batch_sizes = rv.batch_sizes;
  out.power = rv.power;
  out.max_power_w = rv.max_power_w;
  out.options = options;
  out.notes = rv.notes;
  out.recurrences = options.recurrences.value_or(2 * static_cast<int64_t>(rv.batch_sizes.size()) *
                                                 static_cast<int64_t>(rv.limits.size()));
  for (const auto& [bs, points] : rv.power)
    for (const PowerPoint& p : points) out.any_interpolated = out.any_interpolated || p.interpolated;

  TunerOptions to;
  to.eta = options.eta;
  to.beta = options.beta;
  to.max_power_w = rv.max_power_w;
  to.max_attempts = options.max_attempts;
  to.batch_size_optimizer.seed = options.seed;
  RecurrenceTuner tuner(rv.batch_sizes, rv.default_bs, to);
  // The runs are sampled from a stream of their own, so that the bandit's draws and the runs drawn
  // do not move together.
  const uint64_t path_seed = options.seed ^ 0x9E3779B97F4A7C15ULL;
  SeededRandom paths(path_seed);
  std::map<int64_t, Profile> profiles;
  while (tuner.recurrences_done() < out.recurrences) {
    ReplayAttempt a;
    a.plan = tuner.next();
    const int64_t bs = a.plan.batch_size;
    const std::vector<PowerPoint>& points = rv.power.at(bs);
    if (a.plan.profile_power_limit) {
      // As Zeus's simulator, the limits are profiled (and the choice kept) before the bound is
      // checked: the chosen limit's epoch cost is what the bound is checked against.
      const Profile p = profile_limits(points, options.eta);
      profiles[bs] = p;
      tuner.set_power_limit(bs, p.chosen_w);
      out.jit.push_back({bs, a.plan.recurrence, p.chosen_w, trace_optimum(points, options.eta), p.optimizer});
      a.profiled = true;
    }
    a.power_limit_w = *tuner.power_limit(bs);
    const PowerPoint& row = point_at(points, a.power_limit_w);
    a.interpolated = row.interpolated;
    const std::vector<RunPath>& runs = rv.runs.at(bs);
    const RunPath& path = runs[paths.below(runs.size())];
    a.run = path.run;
    a.target_epoch = path.target_epoch;
    a.train_line = path.line;
    a.epochs_allowed = rv.max_epochs;
    if (a.plan.cost_bound_j) {
      // The most whole epochs whose cost stays within the bound (MaxPower: this batch size's
      // highest limit, as Zeus's simulator has it here).
      const double epoch_cost =
          options.eta * row.energy_per_epoch_j() + (1 - options.eta) * points.front().limit_w * row.time_per_epoch_s;
      const double fit = std::floor(*a.plan.cost_bound_j / epoch_cost);
      a.epochs_allowed =
          fit < static_cast<double>(rv.max_epochs) ? static_cast<int64_t>(std::max(0.0, fit)) : rv.max_epochs;
    }
    AttemptOutcome o;
    const std::string at = "batch size " + std::to_string(bs) + " at " + num_text(a.power_limit_w) + " W (" +
                           power.file + " " + row.source + ")";
    if (a.epochs_allowed == 0) {
      o.ran = false;
      a.ran = false;
      a.how = "not run: one epoch at " + at + " would pass the cost bound";
    } else {
      a.reached = path.target_epoch && *path.target_epoch <= a.epochs_allowed;
      a.epochs = a.reached ? *path.target_epoch : a.epochs_allowed;
      const std::string run_text =
          "run " + std::to_string(path.run) + " (" + train.file + " line " + std::to_string(path.line) + ")";
      const std::string epochs_text =
          a.reached ? std::to_string(a.epochs) + " epochs to target, " + run_text
                    : std::to_string(a.epochs) + " epochs, stopped " +
                          (a.epochs < rv.max_epochs ? std::string("at the cost bound") : std::string("at max_epochs")) +
                          " (" + run_text +
                          (path.target_epoch ? " reaches it at epoch " + std::to_string(*path.target_epoch)
                                             : std::string(" never reaches it")) +
                          ")";
      if (a.profiled) {
        const Profile& p = profiles.at(bs);
        o.time_s = p.epoch_time_s + static_cast<double>(a.epochs - 1) * row.time_per_epoch_s;
        o.energy_j = p.epoch_energy_j + static_cast<double>(a.epochs - 1) * row.energy_per_epoch_j();
        a.how = epochs_text + "; epoch 1 profiled the " + std::to_string(points.size()) +
                " limits (the mean of their rows), the rest at " + at;
      } else {
        o.time_s = static_cast<double>(a.epochs) * row.time_per_epoch_s;
        o.energy_j = static_cast<double>(a.epochs) * row.energy_per_epoch_j();
        a.how = epochs_text + " x " + at;
      }
      o.reached = a.reached;
      a.time_s = o.time_s;
      a.energy_j = o.energy_j;
    }
    a.result = tuner.finish(a.plan, o);
    out.total_time_s += a.time_s;
    out.total_energy_j += a.energy_j;
    out.total_cost_j += a.result.cost_j;
    out.attempts.push_back(std::move(a));
  }
  out.tuner = tuner.to_json();
  out.tuner["path_seed"] = path_seed;
  out.tuner["path_random_draws"] = paths.draws();

  // The default, the final choice, the best in hindsight.
  out.default_config = expected_of(rv, rv.default_bs, rv.power.at(rv.default_bs).front().limit_w, options.eta);
  if (out.default_config.runs_reached < out.default_config.runs)
    out.notes.push_back("the default configuration reaches the target in " +
                        std::to_string(out.default_config.runs_reached) + " of its " +
                        std::to_string(out.default_config.runs) + " runs; its figures are over those");
  for (auto it = out.attempts.rbegin(); it != out.attempts.rend(); ++it)
    if (it->reached) {
      out.final_choice = expected_of(rv, it->plan.batch_size, it->power_limit_w, options.eta);
      break;
    }
  std::optional<Expected> best;
  std::vector<std::string> incomplete;
  for (int64_t bs : rv.batch_sizes)
    for (const PowerPoint& p : rv.power.at(bs)) {
      const Expected e = expected_of(rv, bs, p.limit_w, options.eta);
      if (e.runs_reached < e.runs) {
        if (p.limit_w == rv.power.at(bs).front().limit_w) incomplete.push_back(std::to_string(bs));
        continue;
      }
      if (!best || e.cost_j < best->cost_j) best = e;
    }
  if (!incomplete.empty())
    out.notes.push_back(
        "best in hindsight: batch sizes where a run misses the target within max_epochs are left "
        "out of it (" +
        [&] {
          std::string s;
          for (const auto& x : incomplete) s += (s.empty() ? "" : ", ") + x;
          return s;
        }() +
        ")");
  if (best) out.hindsight_best = *best;
  for (const JitChoice& j : out.jit)
    if (j.chosen_w != j.trace_optimum_w)
      out.notes.push_back("batch size " + std::to_string(j.batch_size) + ": the optimiser chose " +
                          num_text(j.chosen_w) + " W, the rows' cheapest epoch is at " + num_text(j.trace_optimum_w) +
                          " W");
  return out;
}

json ReplayResult::to_json() const {
  json attempts_json = json::array();
  for (const ReplayAttempt& a : attempts)
    attempts_json.push_back({{"plan", a.plan.to_json()},
                             {"power_limit_w", a.power_limit_w},
                             {"run", a.run},
                             {"target_epoch", a.target_epoch ? json(*a.target_epoch) : json(nullptr)},
                             {"train_line", a.train_line},
                             {"epochs_allowed", a.epochs_allowed},
                             {"epochs", a.epochs},
                             {"ran", a.ran},
                             {"reached", a.reached},
                             {"profiled", a.profiled},
                             {"interpolated", a.interpolated},
                             {"time_s", a.time_s},
                             {"energy_j", a.energy_j},
                             {"cost_j", a.result.cost_j},
                             {"observed_cost_j", a.result.observed_cost_j},
                             {"how", a.how}});
  json jit_json = json::array();
  for (const JitChoice& j : jit)
    jit_json.push_back({{"batch_size", j.batch_size},
                        {"recurrence", j.recurrence},
                        {"chosen_w", j.chosen_w},
                        {"trace_optimum_w", j.trace_optimum_w},
                        {"optimizer", j.optimizer}});
  return {{"train_file", train_file},
          {"power_file", power_file},
          {"gpu", gpu_of(power_file)},
          {"job",
           {{"dataset", job.dataset},
            {"network", job.network},
            {"optimizer", job.optimizer},
            {"target_metric", job.target_metric},
            {"max_epochs", job.max_epochs},
            {"default_batch_size", job.default_batch_size},
            {"default_batch_size_rule", default_batch_size_rule}}},
          {"batch_sizes", batch_sizes},
          {"max_power_w", max_power_w},
          {"recurrences", recurrences},
          {"attempts", attempts_json},
          {"power_limit_choices", jit_json},
          {"default", default_config.to_json()},
          {"final_choice", final_choice ? final_choice->to_json() : json(nullptr)},
          {"best_in_hindsight", hindsight_best.runs ? hindsight_best.to_json() : json(nullptr)},
          {"totals", {{"time_s", total_time_s}, {"energy_j", total_energy_j}, {"cost_j", total_cost_j}}},
          {"tuner", tuner},
          {"notes", notes}};
}

namespace {

json num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }
// 100 x (1 - a / b): what a saves against b, in percent.
json saving(double a, double b) { return b > 0 ? num(100.0 * (1.0 - a / b)) : json(nullptr); }

std::string config_text(const Expected& e) {
  return std::to_string(e.batch_size) + " @ " + num_text(e.power_limit_w) + " W";
}

}  // namespace

std::vector<Table> replay_tables(const ReplayResult& r) {
  const std::string gpu = gpu_of(r.power_file);
  const std::string workload = workload_name(r.job.dataset, r.job.network, r.job.optimizer);
  const double n = static_cast<double>(r.recurrences);
  const Expected& d = r.default_config;
  Table summary;
  summary.name = "replay";
  summary.title = "Replay of " + workload + " on " + gpu + " (Zeus's traces): target " + num_text(r.job.target_metric) +
                  ", eta " + num_text(r.options.eta) + ", beta " + num_text(r.options.beta) + ", " +
                  std::to_string(r.recurrences) + " recurrences, seed " + std::to_string(r.options.seed);
  summary.columns = {"configuration", "batch_size",        "power_limit_w",   "tta_s",  "eta_j",
                     "cost_j",        "energy_saving_pct", "time_saving_pct", "figures"};
  const std::string source = r.any_interpolated ? "trace, some interpolated" : "trace";
  auto expected_row = [&](const std::string& what, const Expected& e) {
    return std::vector<json>{what,
                             e.batch_size,
                             e.power_limit_w,
                             num(e.tta_s),
                             num(e.eta_j),
                             num(e.cost_j),
                             saving(e.eta_j, d.eta_j),
                             saving(e.tta_s, d.tta_s),
                             std::string(e.interpolated ? "interpolated" : "trace") + ", mean of " +
                                 std::to_string(e.runs_reached) + " runs"};
  };
  summary.rows.push_back(expected_row("default (default batch size, highest limit)", d));
  summary.rows.push_back({"balerbench's choices, mean per recurrence (all " + std::to_string(r.recurrences) +
                              " recurrences, exploration included)",
                          nullptr, nullptr, num(r.total_time_s / n), num(r.total_energy_j / n), num(r.total_cost_j / n),
                          saving(r.total_energy_j / n, d.eta_j), saving(r.total_time_s / n, d.tta_s),
                          source + ", " + std::to_string(r.attempts.size()) + " attempts"});
  if (r.final_choice) summary.rows.push_back(expected_row("final choice (the last recurrence's)", *r.final_choice));
  if (r.hindsight_best.runs) summary.rows.push_back(expected_row("best in hindsight", r.hindsight_best));
  summary.notes = {
      "traces: " + r.train_file + " and " + r.power_file +
          "; every figure is a trace row or a combination of rows "
          "(the figures column says which; docs: Choosing batch size and power limit)",
      "job: " + workload + ", target_metric " + num_text(r.job.target_metric) + ", max_epochs " +
          std::to_string(r.job.max_epochs) + ", default batch size " + std::to_string(r.job.default_batch_size) + " (" +
          r.default_batch_size_rule + "); batch sizes " + list_text(r.batch_sizes),
      "cost = eta x energy + (1 - eta) x MaxPower x time, MaxPower " + num_text(r.max_power_w) +
          " W (the power trace's largest limit, as Zeus's simulator)",
      "savings are against the default: 100 x (1 - figure / default's)",
      "seeds: batch-size optimiser " + std::to_string(r.options.seed) + ", sampled runs " +
          r.tuner.value("path_seed", json(nullptr)).dump(),
  };
  if (r.hindsight_best.runs && r.hindsight_best.cost_j > 0) {
    const double regret = r.total_cost_j - n * r.hindsight_best.cost_j;
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "cost over all recurrences: %.0f J; at the best in hindsight every time %.0f J "
                  "(regret %.0f J, %.1f%%)",
                  r.total_cost_j, n * r.hindsight_best.cost_j, regret, 100 * regret / (n * r.hindsight_best.cost_j));
    summary.notes.push_back(buf);
  }
  for (const std::string& note : r.notes) summary.notes.push_back(note);

  Table attempts;
  attempts.name = "replay_attempts";
  attempts.title = "Every attempt of the replay of " + workload + " on " + gpu;
  attempts.columns = {"recurrence", "attempt",      "stage",          "batch_size", "power_limit_w", "profiled",
                      "run",        "target_epoch", "epochs_allowed", "epochs",     "reached",       "time_s",
                      "energy_j",   "cost_j",       "cost_bound_j",   "figures"};
  for (const ReplayAttempt& a : r.attempts)
    attempts.rows.push_back({a.plan.recurrence + 1, a.plan.attempt, a.plan.stage, a.plan.batch_size, a.power_limit_w,
                             a.profiled, a.run, a.target_epoch ? json(*a.target_epoch) : json(nullptr),
                             a.epochs_allowed, a.epochs, a.reached, num(a.time_s), num(a.energy_j),
                             num(a.result.cost_j), a.plan.cost_bound_j ? num(*a.plan.cost_bound_j) : json(nullptr),
                             a.how});
  attempts.notes = {
      "recurrences are numbered from 1; an attempt that could not run one epoch under the cost bound "
      "costs nothing, and the optimiser observes 100 x the bound for it (Zeus's simulator)",
      "stage: pruning (each round walks down from the start, then up) or thompson (Gaussian Thompson "
      "sampling over the survivors)"};

  Table limits;
  limits.name = "replay_power_limits";
  limits.title = "Power limits profiled just in time in the replay of " + workload + " on " + gpu;
  limits.columns = {"batch_size", "recurrence", "power_limit_w", "time_s", "energy_j",
                    "cost_j",     "chosen",     "cheapest_row",  "row"};
  for (const JitChoice& j : r.jit) {
    const std::vector<PowerPoint>& points = r.power.at(j.batch_size);
    for (const json& p : j.optimizer["profiles"]) {
      const double w = p["limit_w"].get<double>();
      limits.rows.push_back({j.batch_size, j.recurrence + 1, w, p["time_s"], p["energy_j"], p["cost_j"],
                             w == j.chosen_w, w == j.trace_optimum_w, point_at(points, w).source});
    }
  }
  limits.notes = {
      "each batch size's first attempt profiles every limit for an equal share of its first epoch "
      "(the power-limit optimiser, fed the rows instead of meter readings); cost at eta " +
      num_text(r.options.eta) +
      " with that batch size's highest limit as MaxPower, as Zeus's "
      "simulator profiles it"};
  return {summary, attempts, limits};
}

std::vector<Table> reproduction_tables(const Reproduction& rep) {
  Table t;
  t.name = "reproduction";
  t.title =
      "Zeus's headline result replayed: energy and time saved against the default configuration (the "
      "default batch size at the highest limit)";
  t.columns = {"gpu",
               "workload",
               "default",
               "recurrences",
               "seeds",
               "energy_saving_pct",
               "time_saving_pct",
               "final_choice",
               "final_energy_saving_pct",
               "final_time_saving_pct",
               "best_in_hindsight",
               "best_energy_saving_pct",
               "best_time_saving_pct"};
  auto mean = [](const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return v.empty() ? NAN : s / static_cast<double>(v.size());
  };
  struct Range {
    double lo = INFINITY, hi = -INFINITY;
    int64_t n = 0;
    void add(double v) {
      if (!std::isfinite(v)) return;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      ++n;
    }
    json text() const {
      if (n == 0) return nullptr;
      std::ostringstream s;
      s.setf(std::ios::fixed);
      s.precision(1);
      s << lo << "%-" << hi << "%";
      return s.str();
    }
  };
  std::map<std::string, std::array<Range, 4>> ranges;  // gpu -> all-recurrence energy, time; final energy; best energy
  std::vector<std::string> gpus;
  for (const Reproduction::Row& row : rep.rows) {
    if (row.runs.empty()) continue;
    const ReplayResult& first = row.runs.front();
    std::vector<double> e_all, t_all, e_final, t_final;
    std::map<std::string, int> finals;
    for (const ReplayResult& r : row.runs) {
      const double n = static_cast<double>(r.recurrences);
      const Expected& d = r.default_config;
      e_all.push_back(100 * (1 - r.total_energy_j / n / d.eta_j));
      t_all.push_back(100 * (1 - r.total_time_s / n / d.tta_s));
      if (r.final_choice) {
        e_final.push_back(100 * (1 - r.final_choice->eta_j / d.eta_j));
        t_final.push_back(100 * (1 - r.final_choice->tta_s / d.tta_s));
        ++finals[config_text(*r.final_choice)];
      }
    }
    // The final choices, the most frequent first.
    std::vector<std::pair<int, std::string>> by_count;
    for (const auto& [c, k] : finals) by_count.push_back({-k, c});
    std::sort(by_count.begin(), by_count.end());
    std::string final_text;
    for (const auto& [k, c] : by_count)
      final_text +=
          (final_text.empty() ? "" : ", ") + c + (row.runs.size() > 1 ? " (" + std::to_string(-k) + "x)" : "");
    const Expected& d = first.default_config;
    const Expected& b = first.hindsight_best;
    t.rows.push_back({row.gpu, first.job.dataset, config_text(d), first.recurrences,
                      static_cast<int64_t>(row.runs.size()), num(mean(e_all)), num(mean(t_all)), final_text,
                      num(mean(e_final)), num(mean(t_final)), b.runs ? json(config_text(b)) : json(nullptr),
                      b.runs ? saving(b.eta_j, d.eta_j) : json(nullptr),
                      b.runs ? saving(b.tta_s, d.tta_s) : json(nullptr)});
    if (!ranges.count(row.gpu)) gpus.push_back(row.gpu);
    auto& g = ranges[row.gpu];
    g[0].add(mean(e_all));
    g[1].add(mean(t_all));
    g[2].add(mean(e_final));
    if (b.runs) g[3].add(100 * (1 - b.eta_j / d.eta_j));
  }
  t.notes = {
      "made by: " + rep.command,
      "energy_saving_pct / time_saving_pct: the mean per recurrence over all recurrences (exploration, "
      "early-stopped attempts and profiling included) against the default's expected ETA / TTA; final_*: the "
      "expected ETA / TTA of the configuration of the last recurrence; best_*: the cheapest configuration in "
      "hindsight (mean over the trace's runs); means over the seeds",
      "eta 0.5, beta 2, recurrences 2 x |batch sizes| x |power limits|, default batch sizes from Zeus's "
      "example scripts (run_alibaba.py); why the figures differ from the paper's: docs/batch_size_and_power_limit.md"};
  Table r;
  r.name = "reproduction_ranges";
  r.title = "The ranges over the workloads beside the paper's";
  r.columns = {"gpu",
               "workloads",
               "energy_saving_pct",
               "time_saving_pct",
               "final_energy_saving_pct",
               "best_energy_saving_pct",
               "paper_energy_saving_pct",
               "paper_time_saving_pct"};
  for (const std::string& gpu : gpus) {
    const auto& g = ranges.at(gpu);
    int64_t workloads = 0;
    for (const Reproduction::Row& row : rep.rows) workloads += row.gpu == gpu && !row.runs.empty();
    r.rows.push_back({gpu, workloads, g[0].text(), g[1].text(), g[2].text(), g[3].text(),
                      std::string(kZeusPaperEnergyRange), std::string(kZeusPaperTimeSaving)});
  }
  r.notes = {"paper (You, Chung, Chowdhury, NSDI'23): energy " + std::string(kZeusPaperEnergyRange) +
             " and training "
             "time " +
             kZeusPaperTimeSaving +
             " less across its six workloads; the ranges here are over the workloads "
             "replayed on each GPU"};
  return {t, r};
}

}  // namespace balerbench
