// store_schema.cpp: the results database's columns, schema and migrations (store_sql.h).
#include "harness/store/store_sql.h"

namespace balerbench {
namespace store_sql {

// The trials table after its `id INTEGER PRIMARY KEY`.
const std::vector<Column<TrialRecord>>& trial_columns() {
  using T = TrialRecord;
  static const std::vector<Column<T>> c = {
      column("trial_key", "TEXT NOT NULL UNIQUE", &T::key),
      name_column("experiment", "TEXT NOT NULL", &T::experiment),
      column("grid_index", "INTEGER", &T::grid_index),
      column("repeat", "INTEGER", &T::repeat),
      column("batch_size", "INTEGER", &T::batch_size, kBatchSizeRange),
      column("precision", "TEXT", &T::precision),
      column("power_limit_w", "REAL", &T::power_limit_w, kWattsRange),
      column("epochs", "INTEGER", &T::epochs, kEpochsRange),
      column("status", "TEXT NOT NULL", &T::status),
      column("error", "TEXT", &T::error),
      column("started_unix_s", "REAL", &T::started_unix_s, kUnixTimeRange),
      column("finished_unix_s", "REAL", &T::finished_unix_s, kUnixTimeRange),
      column("train_s", "REAL", &T::train_s, kDurationRange),
      column("train_energy_j", "REAL", &T::train_energy_j),
      column("compress_s", "REAL", &T::compress_s, kDurationRange),
      column("compress_energy_j", "REAL", &T::compress_energy_j),
      column("decompress_s", "REAL", &T::decompress_s, kDurationRange),
      column("decompress_energy_j", "REAL", &T::decompress_energy_j),
      column("total_energy_j", "REAL", &T::total_energy_j),
      column("co2_g", "REAL", &T::co2_g),
      column("target_reached", "INTEGER", &T::target_reached),
      column("tta_s", "REAL", &T::tta_s, kDurationRange),
      column("eta_j", "REAL", &T::eta_j),
      column("epochs_to_target", "INTEGER", &T::epochs_to_target),
      column("max_power_w", "REAL", &T::max_power_w, kWattsRange),
      column("enforced_power_limit_w", "REAL", &T::enforced_power_limit_w, kWattsRange),
      column("energy_kind", "TEXT", &T::energy_kind),
      column("hardware", "TEXT", &T::hardware),
      column("spec_json", "TEXT", &T::spec),
      column("result_json", "TEXT", &T::result),
      column("provenance_json", "TEXT", &T::provenance),
      column("engine", "TEXT NOT NULL DEFAULT 'libtorch'", &T::engine),  // schema 3
      column("system_fingerprint", "TEXT", &T::system_fingerprint),     // schema 5
  };
  return c;
}

// The child tables after their `trial_id` (a foreign key to trials.id, deleted with its trial).
const std::vector<Column<EpochRow>>& epoch_columns() {
  using E = EpochRow;
  static const std::vector<Column<E>> c = {
      column("epoch", "INTEGER NOT NULL", &E::epoch),
      loss_column("train_loss", "REAL", &E::train_loss),
      loss_column("val_loss", "REAL", &E::val_loss),
      column("relative_error", "REAL", &E::relative_error),
      column("lr", "REAL", &E::lr),
      column("duration_s", "REAL", &E::duration_s, kDurationRange),
      column("elapsed_s", "REAL", &E::elapsed_s, kDurationRange),
      column("energy_j", "REAL", &E::energy_j),
      column("target_met", "INTEGER", &E::target_met),
      column("eval_s", "REAL", &E::eval_s, kDurationRange),
      column("energy_pm_j", "REAL", &E::energy_pm_j),
  };
  return c;
}

const std::vector<Column<PhaseRow>>& phase_columns() {
  using P = PhaseRow;
  static const std::vector<Column<P>> c = {
      column("phase", "TEXT NOT NULL", &P::phase),   column("source", "TEXT NOT NULL", &P::source),
      column("duration_s", "REAL", &P::duration_s, kDurationRange),  column("energy_j", "REAL", &P::energy_j),
      column("co2_g", "REAL", &P::co2_g),            column("energy_kind", "TEXT", &P::energy_kind),
  };
  return c;
}

const std::vector<Column<SampleRow>>& sample_columns() {
  using S = SampleRow;
  static const std::vector<Column<S>> c = {
      column("t_s", "REAL NOT NULL", &S::t_s), column("phase", "TEXT", &S::phase),
      column("power_w", "REAL", &S::power_w)};
  return c;
}

// The schema of the current version, made from the column lists.
std::string schema_sql() {
  const std::string child = "trial_id INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE";
  return "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);\n"
         "CREATE TABLE IF NOT EXISTS experiments(name TEXT PRIMARY KEY, source TEXT, spec_json TEXT NOT NULL, "
         "first_run_unix_s REAL);\n"
         "CREATE TABLE IF NOT EXISTS trials(id INTEGER PRIMARY KEY" + definitions(trial_columns()) + ");\n"
         "CREATE INDEX IF NOT EXISTS trials_experiment ON trials(experiment);\n"
         "CREATE TABLE IF NOT EXISTS epochs(" + child + definitions(epoch_columns()) +
         ", PRIMARY KEY(trial_id, epoch));\n"
         "CREATE TABLE IF NOT EXISTS phases(" + child + definitions(phase_columns()) +
         ", PRIMARY KEY(trial_id, source, phase));\n"
         "CREATE TABLE IF NOT EXISTS power_samples(" + child + definitions(sample_columns()) + ");\n"
         "CREATE INDEX IF NOT EXISTS power_samples_trial ON power_samples(trial_id);\n";
}

const std::vector<Migration>& migrations() {
  static const std::vector<Migration> m = {
      {2, "epochs.eval_s, the evaluation's seconds per epoch", "ALTER TABLE epochs ADD COLUMN eval_s REAL", "epochs", "eval_s"},
      {3, "trials.engine, the training engine (earlier trials ran libtorch)",
       "ALTER TABLE trials ADD COLUMN engine TEXT NOT NULL DEFAULT 'libtorch'", "trials", "engine"},
      {4, "epochs.energy_pm_j, the measurement ± of each epoch's cumulative energy",
       "ALTER TABLE epochs ADD COLUMN energy_pm_j REAL", "epochs", "energy_pm_j"},
      {5, "trials.system_fingerprint, the system a trial ran on (empty for earlier trials: their keys name the "
          "spec alone, so a run on any system runs them again)",
       "ALTER TABLE trials ADD COLUMN system_fingerprint TEXT", "trials", "system_fingerprint"},
  };
  return m;
}

}  // namespace store_sql
}  // namespace balerbench
