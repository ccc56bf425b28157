// sweep_plan.cpp: see sweep_plan.h.
#include "harness/sweep/sweep_plan.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <set>

#include "common/error.h"
#include "datasets/split.h"
#include "harness/base/blas_kernel.h"
#include "harness/energy/meter_registry.h"
#include "harness/run/system_description.h"
#include "harness/run/codec_comparison.h"
#include "harness/run/run_runtime.h"
#include "harness/store/side_files.h"
#include "harness/trial/trial.h"
#include "models/architecture.h"

namespace balerbench {
namespace {

// The grid numbers this run covers: all of them, or one shard's.
int64_t planned_count(int64_t grid_size, const std::optional<Shard>& shard) {
  if (!shard) return grid_size;
  return grid_size / shard->count + (shard->index < grid_size % shard->count ? 1 : 0);
}

// Refuses a run that would plan more than kLargeGridTrials trials, unless asked for.
void check_grid_size(const Experiment& ex, const SweepOptions& o, int64_t planned) {
  const int64_t size = ex.grid_size();
  if (size == std::numeric_limits<int64_t>::max())  // saturated: its trials cannot even be numbered
    throw InputError("experiment " + ex.name + ": the grid has more than 9.2e18 trials (" + ex.grid_shape() +
                         "), more than a run can number",
                     "cut an axis or the repeats");
  if (planned <= kLargeGridTrials || o.allow_large_grid) return;
  const std::string size_text = std::to_string(size);
  throw InputError(
      "experiment " + ex.name + ": the grid has " + size_text + " trials (" + ex.grid_shape() + ")" +
          (o.shard ? ", " + std::to_string(planned) + " of them in shard " + o.shard->label() : std::string()) +
          ", more than " + std::to_string(kLargeGridTrials) + " for one run",
      "cut an axis or the repeats, split it with --shard i/N, or pass --allow-large-grid to plan it all the same");
}

// The keys stored already (those failed or skipped left out with --retry-failed).
std::set<std::string> stored_keys(const Store& store, bool retry_failed) {
  std::set<std::string> done = store.trial_keys();
  if (retry_failed) {
    for (const auto& k : store.trial_keys(TrialStatus::kFailed)) done.erase(k);
    for (const auto& k : store.trial_keys(TrialStatus::kSkipped)) done.erase(k);
  }
  return done;
}

void print_note(const std::string& line) { std::fprintf(stderr, "balerbench: note: %s\n", line.c_str()); }

// What the trials of a model or a compression ratio would refuse in these data: a model for another
// shape, a ratio whose latent layer would be wider than the input (Baler's rule: latent_size).
void check_models_fit(const Experiment& ex, const Dataset& ds) {
  const auto shape = [](int dimension) { return dimension == 2 ? "2D frames (N, H, W)" : "a 1D table (N, C)"; };
  std::string fitting;  // the models for this data's shape
  for (const std::string& model : model_names())
    if (model_data_dimension(model) == ds.data_dimension()) fitting += (fitting.empty() ? "" : ", ") + model;
  for (std::size_t i = 0; i < ex.models.size(); ++i) {
    RunConfig c = ex.base;
    c.model_name = ex.models[i];
    if (ex.models_path == "/sweep/model" && model_data_dimension(c.model_name) != ds.data_dimension())
      throw InputError(ex.source + ": /sweep/model: " + c.model_name + " is for " +
                           (model_data_dimension(c.model_name) == 2 ? "2D frames" : "1D tables") + " but " + ds.source_path + " holds " +
                           shape(ds.data_dimension()),
                       "list only models for its shape: " + fitting);
    check_dimensions(c, ds);  // /model's, with the message it always had; type_list and data_dimension
  }
  for (const double ratio : ex.compression_ratios) {
    try {
      (void)latent_size(ds.features(), ratio);
    } catch (const InputError& e) {
      throw InputError(ex.source + ": " + ex.compression_ratios_path + ": " + e.what());
    }
  }
}

// What every trial's training would refuse in these data: a model for another shape, a compression
// ratio too small for its features, a test_size that leaves no training row (rows: 1, test_size: 0.9999).
void check_trainable(const Experiment& ex, const Dataset& ds) {
  check_models_fit(ex, ds);
  try {
    (void)validation_rows(ds.rows(), ex.base.test_size);
  } catch (const InputError& e) {
    throw InputError(ex.source + ": /training/test_size: " + e.what());
  }
}

// "model AE (/model/name); compression ratios 1.6, 4, 8 (/sweep/compression_ratio)": what sets the
// fidelity of the trials, and where the experiment says so.
std::string fidelity_axes_line(const Experiment& ex) {
  std::string models, ratios;
  for (const auto& m : ex.models) models += (models.empty() ? "" : ", ") + m;
  for (const double r : ex.compression_ratios) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", r);
    ratios += (ratios.empty() ? "" : ", ") + std::string(buf);
  }
  return std::string(ex.models.size() == 1 ? "model " : "models ") + models + " (" + ex.models_path + "); " +
         (ex.compression_ratios.size() == 1 ? "compression ratio " : "compression ratios ") + ratios + " (" +
         ex.compression_ratios_path + ")";
}

}  // namespace

// See sweep_plan.h: once, before the database is written, rather than in each trial.
std::shared_ptr<const Dataset> load_checked_dataset(const Experiment& ex) {
  (void)run_device(ex.base);
  // A meter named in /energy/meters that cannot run here (NVML without its driver, RAPL without
  // permission): every trial would fail opening it (was: a database of failed trials, exit code 3).
  if (ex.base.energy.enabled) {
    try {
      (void)open_meters(ex.base.energy);
    } catch (const InputError& e) {
      throw InputError(ex.source + ": /energy/meters: " + e.what(),
                       "fix what it says, or leave the meter out (\"auto\" skips a meter that cannot run here)");
    }
  }
  std::shared_ptr<const Dataset> ds = load_experiment_dataset(ex.dataset);
  check_trainable(ex, *ds);
  if (ex.base.codecs.enabled) check_codecs_data(*ds);  // was: every trial trained, then failed
  return ds;
}

SweepPlan plan_sweep(const Experiment& ex, const SweepOptions& o, SweepSummary& sum) {
  SweepPlan p;
  sum.grid = ex.grid_size();
  check_grid_size(ex, o, planned_count(sum.grid, o.shard));
  // The system first: a trial's key is its spec on this system, so a database keeps the same
  // experiment from several machines apart, and a run resumes only what ran here.
  p.system = current_system();
  p.fingerprint = p.system["fingerprint"].get<std::string>();
  p.grid.emplace(ex, p.fingerprint);
  // What is stored. A database that does not exist yet is created only once the data are known to be
  // good (below); one that exists is opened for writing as it is (migrated, side files folded in), or
  // read only for a dry run.
  const bool exists = std::filesystem::exists(o.db_path);
  if (exists) {
    p.store = std::make_unique<Store>(o.db_path, o.dry_run ? StoreAccess::kReadOnly : StoreAccess::kReadWrite);
    if (!p.store->migration_note().empty()) print_note(p.store->migration_note());
    if (!o.dry_run)  // trials kept aside by an earlier run while the database was locked
      for (const std::string& line : fold_side_files(*p.store)) print_note(line);
  }
  std::set<std::string> done = p.store ? stored_keys(*p.store, o.retry_failed) : std::set<std::string>{};
  if (o.dry_run)  // what the next run folds in from side files counts as stored
    for (const std::string& side : side_files_of(o.db_path)) {
      try {
        for (const std::string& key : stored_keys(Store(side, StoreAccess::kReadOnly), o.retry_failed)) done.insert(key);
        print_note(side + ": its trials count as stored (the next run folds them in)");
      } catch (const std::exception& e) {
        print_note(side + ": not read: " + e.what());
      }
    }
  std::vector<int64_t> todo;
  const int64_t first = o.shard ? o.shard->index : 0, step = o.shard ? o.shard->count : 1;
  for (int64_t i = first; i < p.grid->size(); i += step) {
    ++sum.in_shard;
    if (!done.empty() && done.count(p.grid->at(i).key)) {
      ++sum.already_done;
      continue;
    }
    todo.push_back(i);
  }
  p.todo = run_order(ex, todo);  // README, Comparable results
  if (o.dry_run) return p;
  if (!p.todo.empty()) p.dataset = load_checked_dataset(ex);
  if (!p.store) p.store = std::make_unique<Store>(o.db_path);  // created (two runs at once: SQLite serialises)
  // Each write waits at most this long for a lock at a time; the sweep tries again up to --db-wait.
  p.store->set_busy_timeout_s(std::min(kStoreLockTryS, o.db_wait_s));
  p.store->put_experiment(ex.name, ex.source, ex.raw);
  return p;
}

void print_plan(const Experiment& ex, const SweepOptions& o, const SweepPlan& p, const SweepSummary& sum,
                std::FILE* out) {
  std::fprintf(out, "system %s: %s\n", p.fingerprint.c_str(), p.system["label"].get<std::string>().c_str());
  if (const std::string blas = blas_choice_line(); !blas.empty()) std::fprintf(out, "%s\n", blas.c_str());
  // Warm-ups run before the grid's trials, and only when something is to run.
  const int64_t warmups = p.todo.empty() ? 0 : ex.warmup_trials;
  const std::string warmup_text =
      warmups ? " (and " + std::to_string(warmups) + " warm-up trial" + (warmups == 1 ? "" : "s") + " before them, stored but left out of statistics)"
              : std::string();
  std::fprintf(out, "experiment %s: %lld trials in the grid%s, %lld already in %s, %lld to run%s%s\n", ex.name.c_str(),
               static_cast<long long>(sum.grid),
               o.shard ? (", " + std::to_string(sum.in_shard) + " in shard " + o.shard->label()).c_str() : "",
               static_cast<long long>(sum.already_done), o.db_path.c_str(), static_cast<long long>(p.todo.size()),
               warmup_text.c_str(), o.dry_run ? " (dry run: nothing runs)" : "");
  if (!o.dry_run) return;
  std::fprintf(out, "grid: %s\n", ex.grid_shape().c_str());
  std::fprintf(out, "%s\n", fidelity_axes_line(ex).c_str());
  std::fprintf(out, "order: %s%s\n", ex.order.c_str(),
               ex.order == "shuffled" ? (" (seed " + std::to_string(ex.order_seed) + ")").c_str() : "");
  if (warmups) {
    const TrialSpec w = warmup_trial(ex, 0, "dry-run", p.fingerprint);
    std::fprintf(out, "  warm-up x%lld: %s\n", static_cast<long long>(warmups), w.label().c_str());
  }
  for (const int64_t i : p.todo) {
    const TrialSpec t = p.grid->at(i);
    std::fprintf(out, "  #%lld %s  key %s\n", static_cast<long long>(t.grid_index), t.label().c_str(), t.key.c_str());
  }
}

}  // namespace balerbench
