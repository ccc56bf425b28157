// resolved_job.cpp: see resolved_job.h. resolve_job reads as its steps: the workload (Zeus's
// defaults, else the trace's only network and optimizer), its rows in each trace, the target and the
// epochs allowed, the batch sizes, the default batch size, each batch size's power points and runs,
// and MaxPower. Each step refuses what the traces cannot back, in that order.
#include "harness/tuning/resolved_job.h"

#include <algorithm>
#include <functional>
#include <tuple>

#include "common/error.h"
#include "harness/tuning/replay_text.h"

namespace balerbench {
namespace {

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

// The dataset, network and optimizer of the job; Zeus's defaults for the dataset (null: none).
const ZeusJobDefaults* resolve_workload(const TrainTrace& train, const ReplayJob& job, ResolvedJob& r) {
  r.dataset = job.dataset;
  if (r.dataset.empty()) throw InputError("no dataset given", "name the workload's dataset, e.g. --workload cifar100");
  const ZeusJobDefaults* d = find_zeus_job_defaults(r.dataset);
  r.network = !job.network.empty() ? job.network
              : d                  ? d->network
                  : only_value(train.rows, r.dataset, &TrainRow::network, train.file, "network", "--network");
  r.optimizer = !job.optimizer.empty() ? job.optimizer
                : d                    ? d->optimizer
                    : only_value(train.rows, r.dataset, &TrainRow::optimizer, train.file, "optimizer", "--optimizer");
  return d;
}

// The workloads a trace holds, for the hint when it has none of the job's rows.
template <typename Row>
std::string workloads_in(const std::vector<Row>& rows) {
  std::set<std::string> w;
  for (const Row& x : rows) w.insert(workload_name(x.dataset, x.network, x.optimizer));
  std::string s;
  for (const auto& x : w) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// The rows of the job's workload in a trace; an InputError when it has none.
template <typename Trace>
auto workload_rows(const Trace& trace, const ResolvedJob& r) {
  using Row = typename decltype(trace.rows)::value_type;
  std::vector<const Row*> out;
  for (const Row& row : trace.rows)
    if (row.dataset == r.dataset && row.network == r.network && row.optimizer == r.optimizer) out.push_back(&row);
  if (out.empty())
    throw InputError(trace.file + ": no rows for " + workload_name(r.dataset, r.network, r.optimizer),
                     "its workloads: " + workloads_in(trace.rows));
  return out;
}

// The target (given, else Zeus's) and the epochs a recurrence's attempt may train.
void resolve_target(const TrainTrace& train, const ReplayJob& job, const ZeusJobDefaults* d,
                    const std::vector<const TrainRow*>& trows, ResolvedJob& r) {
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
    throw InputError(train.file + ": no row of " + workload_name(r.dataset, r.network, r.optimizer) +
                         " has target_metric " + num_text(r.target),
                     "its targets: " + list_text(targets));
  if (job.max_epochs)
    r.max_epochs = *job.max_epochs;
  else if (d)
    r.max_epochs = d->max_epochs;
  else
    throw InputError(r.dataset + " is not one of Zeus's six workloads: give its epoch limit with --max-epochs",
                     "the most epochs a recurrence may train before it is stopped unreached");
  if (r.max_epochs < 1) throw InputError("--max-epochs must be at least 1");
}

// The workload's batch sizes in each trace (each with its first line) and their runs at the target.
// `check` refuses a batch size replay cannot use, saying which trace lacks what.
class BatchSizeIndex {
 public:
  BatchSizeIndex(const TrainTrace& train, const PowerTrace& power, const std::vector<const TrainRow*>& trows,
                 const std::vector<const PowerRow*>& prows, const ResolvedJob& r)
      : train_file_(train.file),
        power_file_(power.file),
        workload_(workload_name(r.dataset, r.network, r.optimizer)),
        target_(r.target) {
    for (const TrainRow* t : trows) train_line_.emplace(t->batch_size, t->line);
    for (const PowerRow* p : prows) power_line_.emplace(p->batch_size, p->line);
    for (const TrainRow* t : trows)
      if (t->target_metric == target_) at_target_[t->batch_size].push_back({t->run, t->target_epoch, t->line});
  }

  void check(int64_t bs, const char* why) const {
    const std::string of = " (" + std::string(why) + ") of " + workload_;
    if (!train_line_.count(bs) && !power_line_.count(bs))
      throw InputError(train_file_ + ": batch size " + std::to_string(bs) + of + " has no rows in either trace",
                       "the batch sizes both traces hold: " + list_text(in_both()));
    if (!power_line_.count(bs))
      throw InputError(train_file_ + ":" + std::to_string(train_line_.at(bs)) + ": batch size " + std::to_string(bs) +
                           of + " has no power rows in " + power_file_,
                       "replay never invents a measurement: choose batch sizes the power trace measured (" +
                           list_text(keys(power_line_)) + ")");
    if (!train_line_.count(bs))
      throw InputError(power_file_ + ":" + std::to_string(power_line_.at(bs)) + ": batch size " + std::to_string(bs) +
                           of + " has no rows in " + train_file_,
                       "without training runs there is no epoch to target; choose batch sizes the train trace holds");
    if (!at_target_.count(bs))
      throw InputError(train_file_ + ":" + std::to_string(train_line_.at(bs)) + ": batch size " + std::to_string(bs) +
                           of + " has no row at target_metric " + num_text(target_),
                       "each batch size needs its runs' epochs to that target; drop it with --batch-sizes");
  }

  std::vector<int64_t> in_both() const { return in_one_of(train_line_, power_line_, true); }
  std::vector<int64_t> train_only() const { return in_one_of(train_line_, power_line_, false); }
  std::vector<int64_t> power_only() const { return in_one_of(power_line_, train_line_, false); }
  const std::vector<RunPath>& runs_at_target(int64_t bs) const { return at_target_.at(bs); }

 private:
  using Lines = std::map<int64_t, int64_t>;  // batch size -> its first line
  static std::vector<int64_t> keys(const Lines& lines) {
    std::vector<int64_t> v;
    for (const auto& [b, l] : lines) v.push_back(b);
    return v;
  }
  // The batch sizes of `a` that `b` holds too (`in_b`), or that it does not.
  static std::vector<int64_t> in_one_of(const Lines& a, const Lines& b, bool in_b) {
    std::vector<int64_t> v;
    for (const auto& [bs, line] : a)
      if (b.count(bs) == (in_b ? 1u : 0u)) v.push_back(bs);
    return v;
  }
  std::string train_file_, power_file_, workload_;
  double target_;
  Lines train_line_, power_line_;
  std::map<int64_t, std::vector<RunPath>> at_target_;
};

// The batch sizes listed, or those both traces hold (Zeus's simulator joins them), at the target.
std::vector<int64_t> resolve_batch_sizes(const BatchSizeIndex& index, const ReplayJob& job, const TrainTrace& train,
                                         const PowerTrace& power, std::vector<std::string>& notes) {
  std::vector<int64_t> out;
  if (!job.batch_sizes.empty()) {
    for (int64_t bs : job.batch_sizes) index.check(bs, "listed");
    out = job.batch_sizes;
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }
  for (int64_t bs : index.in_both()) {
    index.check(bs, "in both traces");
    out.push_back(bs);
  }
  if (const std::vector<int64_t> train_only = index.train_only(); !train_only.empty())
    notes.push_back("left out, as Zeus's simulator joins the traces: batch sizes " + list_text(train_only) + " (in " +
                    train.file + " only, no power rows on this GPU)");
  if (const std::vector<int64_t> power_only = index.power_only(); !power_only.empty())
    notes.push_back("left out: batch sizes " + list_text(power_only) + " (in " + power.file + " only, no training runs)");
  return out;
}

// The default batch size: given, else Zeus's rule; it must be among the batch sizes.
void resolve_default_batch_size(const PowerTrace& power, const ReplayJob& job, const ZeusJobDefaults* d,
                                const BatchSizeIndex& index, ResolvedJob& r) {
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
    index.check(r.default_bs, "the default");
    throw InputError("the default batch size " + std::to_string(r.default_bs) + " is not among the batch sizes " +
                         list_text(r.batch_sizes),
                     "add it to --batch-sizes: the first recurrence starts there");
  }
}

// A batch size's rows as points, highest limit first.
std::vector<PowerPoint> measured_points(const std::vector<const PowerRow*>& rows) {
  std::vector<PowerPoint> measured;
  for (const PowerRow* r : rows)
    measured.push_back(
        {r->power_limit_w, r->time_per_epoch_s, r->average_power_w, "line " + std::to_string(r->line), false});
  std::sort(measured.begin(), measured.end(),
            [](const PowerPoint& a, const PowerPoint& b) { return a.limit_w > b.limit_w; });
  return measured;
}

// The point at `w`, linear between the measured limits around it (never beyond them). `missing`
// says where and which batch size has no row at `w`.
PowerPoint interpolated_point(const std::vector<PowerPoint>& measured, double w, const std::string& missing) {
  const PowerPoint* hi = nullptr;
  const PowerPoint* lo = nullptr;
  for (const PowerPoint& p : measured) {
    if (p.limit_w > w && (!hi || p.limit_w < hi->limit_w)) hi = &p;
    if (p.limit_w < w && (!lo || p.limit_w > lo->limit_w)) lo = &p;
  }
  if (!hi || !lo) {
    std::vector<double> have;
    for (const PowerPoint& p : measured) have.push_back(p.limit_w);
    throw InputError(missing + ", and no measured limit " + (hi ? "below" : "above") + " it",
                     "replay interpolates between measured limits, never beyond them; its measured limits: " +
                         list_text(have, " W"));
  }
  const double f = (w - lo->limit_w) / (hi->limit_w - lo->limit_w);
  PowerPoint p;
  p.limit_w = w;
  p.time_per_epoch_s = lo->time_per_epoch_s + f * (hi->time_per_epoch_s - lo->time_per_epoch_s);
  p.average_power_w = lo->average_power_w + f * (hi->average_power_w - lo->average_power_w);
  p.interpolated = true;
  p.source = "interpolated between " + num_text(lo->limit_w) + " W (" + lo->source + ") and " +
             num_text(hi->limit_w) + " W (" + hi->source + ")";
  return p;
}

// A batch size's points: its rows, or the limits listed (each a row, or interpolated when allowed).
std::vector<PowerPoint> points_for(const std::vector<const PowerRow*>& rows, const ReplayJob& job, int64_t bs,
                                   const std::string& workload, const std::string& file,
                                   std::vector<std::string>& notes) {
  const std::vector<PowerPoint> measured = measured_points(rows);
  if (job.power_limits_w.empty()) return measured;
  std::vector<double> wanted = job.power_limits_w;
  std::sort(wanted.begin(), wanted.end(), std::greater<double>());
  wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
  const std::string where = file + ":" + std::to_string(rows.front()->line);
  std::vector<PowerPoint> out;
  for (double w : wanted) {
    const auto exact =
        std::find_if(measured.begin(), measured.end(), [w](const PowerPoint& p) { return p.limit_w == w; });
    if (exact != measured.end()) {
      out.push_back(*exact);
      continue;
    }
    const std::string missing =
        where + ": batch size " + std::to_string(bs) + " of " + workload + " has no row at " + num_text(w) + " W";
    if (!job.interpolate) {
      std::vector<double> have;
      for (const PowerPoint& p : measured) have.push_back(p.limit_w);
      throw InputError(missing, "its measured limits: " + list_text(have, " W") + "; drop " + num_text(w) +
                                    " from --power-limits, or add --interpolate to interpolate linearly between the "
                                    "measured limits around it (labelled interpolated)");
    }
    out.push_back(interpolated_point(measured, w, missing));
    notes.push_back("batch size " + std::to_string(bs) + " at " + num_text(w) + " W: " + out.back().source +
                    " (time per epoch and average power each linearly)");
  }
  return out;
}

// MaxPower, as Zeus's simulator: the largest limit among the power rows the train trace joins.
double max_power_of(const TrainTrace& train, const PowerTrace& power) {
  std::set<std::tuple<std::string, std::string, std::string, int64_t>> trained;
  for (const TrainRow& t : train.rows) trained.insert({t.dataset, t.network, t.optimizer, t.batch_size});
  double max_w = 0;
  for (const PowerRow& p : power.rows)
    if (trained.count({p.dataset, p.network, p.optimizer, p.batch_size})) max_w = std::max(max_w, p.power_limit_w);
  return max_w;
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

const PowerPoint& point_at(const std::vector<PowerPoint>& points, double w) {
  for (const PowerPoint& p : points)
    if (p.limit_w == w) return p;
  throw std::logic_error("replay: no point at " + num_text(w) + " W");
}

ResolvedJob resolve_job(const TrainTrace& train, const PowerTrace& power, const ReplayJob& job) {
  ResolvedJob r;
  const ZeusJobDefaults* d = resolve_workload(train, job, r);
  const std::string workload = workload_name(r.dataset, r.network, r.optimizer);
  const std::vector<const TrainRow*> trows = workload_rows(train, r);
  const std::vector<const PowerRow*> prows = workload_rows(power, r);
  resolve_target(train, job, d, trows, r);
  const BatchSizeIndex index(train, power, trows, prows, r);
  r.batch_sizes = resolve_batch_sizes(index, job, train, power, r.notes);
  resolve_default_batch_size(power, job, d, index, r);
  for (int64_t bs : r.batch_sizes) {
    std::vector<const PowerRow*> rows;
    for (const PowerRow* p : prows)
      if (p->batch_size == bs) rows.push_back(p);
    r.power[bs] = points_for(rows, job, bs, workload, power.file, r.notes);
    for (const PowerPoint& p : r.power[bs]) r.limits.insert(p.limit_w);
    r.runs[bs] = index.runs_at_target(bs);
  }
  r.max_power_w = max_power_of(train, power);
  return r;
}

}  // namespace balerbench
