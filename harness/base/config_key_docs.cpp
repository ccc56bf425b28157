// config_key_docs.cpp: the words of the configuration reference. See config_key_docs.h. Keep one
// entry per key the parsers read; the order here is the order of the reference. The keys that
// engines, codecs and meters own are documented by each of them (base/knobs.h) and go where the
// rows standing for them are; the keys whose values name a registry's entries (/engine,
// /energy/meters, /dataset/generator/kind) get their words from that registry.
#include "harness/base/config_key_docs.h"

#include <algorithm>
#include <iterator>
#include <stdexcept>

#include "datasets/generator_registry.h"

namespace balerbench {
namespace {

// The words of a key whose values name the entries of a registry: the engines' and the meters'
// (above this floor: run_config_key_docs_with's `registry_words`), the dataset generators' (below).
constexpr const char* kFromRegistry = "(written by its registry)";
// A row that stands for the keys a registry's entries own (RegistryKeyDocs): its path names the
// registry, and run_config_key_docs_with puts those keys in its place.
constexpr const char* kRegistryKeys = "(the keys of a registry's entries)";

// The run config's keys (Baler's, then balerbench's), with the places of the entries' own keys.
const ConfigKeyDoc kRunKeys[] = {
    {"/input_path", "`.npz` with `data` (N, C) or (N, H, W) and optionally `names`; relative to the config file's folder", "required"},
    {"/model_name", "`AE`, `AE_Dropout_BN`, `FPGA_prototype_model` (tables), `CFD_dense_AE` (frames)", "required"},
    {"/compression_ratio", "latent size = ceil(features / ratio)", "required"},
    {"/data_dimension", "1 (tables) or 2 (frames); accepted for Baler configs and checked against the data", "from the data"},
    {"/model_type", "only `dense`; accepted for Baler configs", ""},
    {"/epochs", "training epochs", ""},
    {"/batch_size", "rows per training step", ""},
    {"/lr", "Adam's learning rate (betas 0.9/0.999, eps 1e-8)", ""},
    {"/lr_scaling", "scale `lr` by the batch size: `none`, `linear` (lr x batch_size / reference) or `sqrt` (lr x sqrt(batch_size / reference)), as Zeus's lr_scaler; a trial's spec records the rule and the learning rate it trained at (`effective_lr`)", "`none`"},
    {"/lr_reference_batch_size", "the batch size `lr` is tuned for; required with `lr_scaling` linear or sqrt", "none"},
    {"/effective_lr", "written by balerbench beside `lr_scaling` (the learning rate the run trained at); ignored when read", "derived"},
    {"/test_size", "validation fraction in [0, 1): a seeded shuffle split of ceil(test_size x N) rows", ""},
    {"/apply_normalization", "min-max normalization per feature", ""},
    {"/custom_norm", "`true` means no scaling, as in Baler", ""},
    {"/early_stopping", "Baler's EarlyStopping rule on the validation loss", ""},
    {"/early_stopping_patience", "epochs without improvement before stopping", ""},
    {"/min_delta", "the improvement that resets early stopping's patience", ""},
    {"/lr_scheduler", "ReduceLROnPlateau (factor 0.5, min_lr 1e-6, relative threshold 1e-4)", ""},
    {"/lr_scheduler_patience", "the scheduler's patience in epochs", ""},
    {"/deterministic_algorithm", "LibTorch's deterministic algorithms", ""},
    {"/extra_compression", "deflate the output `.npz` files (`numpy.savez_compressed`)", ""},
    {"/intermittent_model_saving", "write `model_<epoch>.pt` every `intermittent_saving_patience` epochs (epoch 0 included)", ""},
    {"/intermittent_saving_patience", "epochs between intermediate models", ""},
    {"/type_list", "per column `float64`, `float32`, `int`, `int64` or `int32`; integer columns are rounded on decompress", "none"},
    {"/activation_extraction", "a Baler key, accepted only as `false`", "false"},
    {"/compress_to_latent_space", "a Baler key, accepted only as `false`", "false"},
    {"/convert_to_blocks", "a Baler key, accepted only as `false`", "false"},
    {"/save_error_bounded_deltas", "a Baler key, accepted only as `false`", "false"},
    {"/separate_model_saving", "a Baler key, accepted only as `false`", "false"},
    {"/loss", "`baler_sum` (Baler's: batch sum of squared errors / features) or `mse_mean` (the paper's mean MSE)", ""},
    {"/shuffle", "one seeded permutation of the training rows per epoch", ""},
    {"/seed", "fixes initial weights, the validation split and shuffling", ""},
    {"/latent_dtype", "`float64`, `float32` or `float16` for `compressed.npz`", "the model's"},
    {"/truncate", "truncate integer columns toward zero as Baler does, instead of rounding", ""},
    {"/device", "`cpu`, `cuda` or `cuda:N`", ""},
    {"/threads", "intra-op threads; 0 = measured: a short calibration of real steps picks 1 or every CPU (cached for an hour)", ""},
    {"/flush_denormal", "flush subnormal floats to zero on every worker thread (below 2.2e-308 in float64)", ""},
    {"/progress", "`auto` (`bar` on a terminal, `lines` otherwise), `bar`, `lines` or `none`", ""},
    {"engines", kRegistryKeys, ""},  // at the root, named for their engine: fused_products, ...
    {"/codec_chunk_rows", "rows per compress/decompress step (1,024 keeps the widest layer in L2)", ""},
    {"/codec_min_window_s", "sweeps: a trial's compress and decompress each repeat inside their energy window until it is this long (after a warm-up outside it), so that the meter updates often enough inside; the figures are then per pass, 0 to 600 s", "`0` (one pass)"},
    {"/progress_interval_s", "`lines`: at most one epoch line per interval (first, last and learning-rate drops always); 0 = every epoch", ""},
    {"/precision", "`fp64`, `fp32`, `tf32`, `amp_fp16`, `amp_fp16_noscale`, `amp_bf16`; `auto` = the model's Baler dtype (see [Precision and engines](precision.md))", ""},
    {"/engine", kFromRegistry, ""},
    {"/grad_scaler", "section: loss scaling for `amp_fp16` (PyTorch's GradScaler)", "PyTorch's"},
    {"/grad_scaler/init_scale", "the first loss scale", ""},
    {"/grad_scaler/growth_factor", "scale multiplier after `growth_interval` clean steps", ""},
    {"/grad_scaler/backoff_factor", "scale multiplier after a step with inf/NaN gradients (the step is skipped)", ""},
    {"/grad_scaler/growth_interval", "clean steps before the scale grows", ""},
    {"/cuda_graphs", "CUDA: capture the training step once and replay it for every full batch", ""},
    {"/profile", "per-phase timers (data, forward, loss, backward, optimizer, evaluation)", ""},
    {"/profile_sync", "`false`: time CUDA phases with events instead of synchronising the device", ""},
    {"/profile_trace", "with `profile`: write LibTorch's profiler trace (Chrome trace JSON) to this file", "none"},
    {"/codecs", "section: Baler against classical codecs at matched error (`balerbench codecs`; see [Is Baler worth its joules?](codecs.md))", ""},
    {"/codecs/enabled", "sweeps: each trial also measures the codecs on its data (`report --table codecs`); an experiment's top-level `codecs` section turns it on unless it says `false`", ""},
    {"/codecs/uses", "the numbers of compressions Baler's training energy is spread over: whole numbers of at least 1, each once", ""},
    {"codecs", kRegistryKeys, ""},  // zstd_level, ...
    {"/codecs/min_window_s", "each codec's compress and decompress repeat until their window is this long, 0 to 60 s (meters resolve ~1 ms to 100 ms)", ""},
    {"/energy", "section: the energy meters, carbon and the simulated GPU (below)", ""},
    {"/energy/enabled", "`false`: no meters, no energy outputs", ""},
    {"/energy/meters", kFromRegistry, ""},
    {"/energy/sample_hz", "sampler rate; 0 = reads at window edges only (raised automatically against RAPL wraparound)", ""},
    {"/energy/idle_baseline_s", "seconds of idle power measured first; phases then also report net energy", ""},
    {"/energy/min_meter_updates", "a phase whose windows hold fewer updates of their slowest measuring meter (NVML's counter ~0.1 s, RAPL ~1 ms) is flagged `short window`, and so is a sweep's figure in the report tables (MLPerf Power asks for 60 samples); 0 = no check", "`60`"},
    {"/energy/carbon_intensity_g_per_kwh", "explicit carbon intensity; else `country_iso_code`, else the world default of 475 g/kWh", "none"},
    {"/energy/country_iso_code", "ISO 3166 alpha-3 code looked up in the built-in carbon-intensity table", "none"},
    {"/energy/pue", "power usage effectiveness, multiplies the energy for CO2", ""},
    {"/energy/cpu_estimate_mode", "`cpu_estimate`: utilisation of the `machine` or of this `process` tree", ""},
    {"/energy/wattmeter_log", "`wattmeter`: the log an external meter's reader is writing", "none"},
    {"/energy/wattmeter_format", "`auto`, `omegawatt` (OmegaWatt's CSV) or `csv` (`timestamp_s,power_w`)", ""},
    {"/energy/wattmeter_socket", "the socket to read (from 1); -1 sums every socket", ""},
    {"/energy/wattmeter_clock_offset_s", "seconds added to the log's timestamps to match this host's clock", ""},
    {"/energy/wattmeter_accuracy_pct", "the instrument's stated accuracy, added to the measurement's ±", "none"},
    {"/energy/simulated_gpu", "section: the simulated GPU's model (for demonstrations and tests; always labelled SIMULATED)", ""},
    {"/energy/simulated_gpu/name", "the name it reports", ""},
    {"/energy/simulated_gpu/idle_power_w", "power at no load", ""},
    {"/energy/simulated_gpu/max_power_w", "power at full load", ""},
    {"/energy/simulated_gpu/min_limit_w", "the lowest power limit it accepts", ""},
    {"/energy/simulated_gpu/max_limit_w", "the highest power limit it accepts", ""},
    {"/energy/simulated_gpu/power_limit_w", "its limit at start", "max_limit_w"},
    {"/energy/simulated_gpu/load", "a fixed load in [0, 1]; absent = follow this process tree's CPU use", "none"},
    {"meters", kRegistryKeys, ""},  // at the end of /energy
    {"/monitoring", "section: live metrics (Prometheus, InfluxDB); flags `--prometheus-port`, `--influx`, ... set the same keys", ""},
    {"/monitoring/prometheus_port", "serve `/metrics` on this port while the command runs; 0 = any free port (printed), -1 = off", ""},
    {"/monitoring/prometheus_address", "the address to listen on; another than loopback only when you ask for it", ""},
    {"/monitoring/prometheus_linger_s", "keep serving the final values this long after the command ends", ""},
    {"/monitoring/influx_url", "InfluxDB 1.x HTTP API (`http://` or `https://`, optional path prefix); empty = off", "none"},
    {"/monitoring/influx_database", "the database written to", ""},
    {"/monitoring/influx_retention_policy", "the retention policy; empty = the database's default", "the default"},
    {"/monitoring/influx_username", "basic-auth user", "none"},
    {"/monitoring/influx_password_env", "the environment variable that holds the password (never the file)", ""},
    {"/monitoring/influx_create_database", "`CREATE DATABASE` (idempotent) before the first write", ""},
    {"/monitoring/influx_file", "write the same line protocol to a file (`FILE.partial` until the command ends)", "none"},
    {"/monitoring/influx_flush_interval_s", "seconds between batches", ""},
    {"/monitoring/influx_batch_points", "points per request", ""},
    {"/monitoring/influx_buffer_points", "the buffer's bound; new points past it are dropped, and counted", ""},
    {"/monitoring/influx_timeout_s", "request timeout", ""},
    {"/monitoring/experiment", "the `experiment` label of the live metrics", "the config file's name"},
};

// An experiment's own keys.
const ConfigKeyDoc kExperimentKeys[] = {
    {"/schema_version", "the experiment schema this file is written for", "required"},
    {"/name", "the experiment's name, part of report file names: not empty, no `/`, `\\` or control character, not starting with `.`, at most 120 bytes", "the file's name"},
    {"/description", "free text", ""},
    {"/dataset", "section: exactly one of `path` and `generator`", "required"},
    {"/dataset/path", "an `.npz` file, relative to the experiment file", "none"},
    {"/dataset/generator", "section: seeded synthetic data", "none"},
    {"/dataset/generator/kind", kFromRegistry, "required"},
    {"/dataset/generator/rows", "`cms`: rows", "required"},
    {"/dataset/generator/frames", "`cfd`: frames", "required"},
    {"/dataset/generator/height", "`cfd`: frame height", ""},
    {"/dataset/generator/width", "`cfd`: frame width", ""},
    {"/dataset/generator/seed", "the generator's seed", ""},
    {"/model", "section: the model", "required, unless `/sweep` lists both `model` and `compression_ratio`"},
    {"/model/name", "`AE`, `AE_Dropout_BN`, `FPGA_prototype_model`, `CFD_dense_AE`", "required, unless `/sweep/model` lists the models"},
    {"/model/compression_ratio", "latent size = ceil(features / ratio)", "required, unless `/sweep/compression_ratio` lists the ratios"},
    {"/training", "any run-config key except those set elsewhere (`input_path`, `model_name`, `compression_ratio`, `epochs`, `batch_size`, `precision`, `engine`, `energy`, `intermittent_model_saving`)", "{}"},
    {"/sweep", "section: the axes; the grid is their product, repeats innermost", "required"},
    {"/sweep/model", "models, in place of `/model/name` (never both): the grid's outermost axis", "`/model/name`"},
    {"/sweep/compression_ratio", "compression ratios, in place of `/model/compression_ratio` (never both): the axis inside `model`", "`/model/compression_ratio`"},
    {"/sweep/batch_size", "batch sizes", ""},
    {"/sweep/precision", "precision modes", ""},
    {"/sweep/engine", "engines", "`training.engine`"},
    {"/sweep/power_limit_w", "GPU power limits in W; `null` = leave the limit in force", ""},
    {"/sweep/epochs", "epoch counts", "`training.epochs`"},
    {"/sweep/repeats", "repeats per configuration; repeat r uses seed `training.seed + r`", ""},
    {"/sweep/order", "`interleaved` (every configuration once per round), `shuffled` (each round in a random order from `order_seed`) or `grid` (repeats back to back)", ""},
    {"/sweep/order_seed", "the seed of `shuffled`", ""},
    {"/sweep/warmup_trials", "warm-up trials of the first configuration, stored and left out of every statistic", ""},
    {"/target", "section: the target that gives time and energy to target (TTA, ETA)", "none"},
    {"/target/val_loss", "validation loss at or below this; exactly one of `val_loss` and `relative_error`", "none"},
    {"/target/relative_error", "‖x̂ − x‖ / ‖x‖ on the validation rows (normalized units) at or below this", "none"},
    {"/target/stop_when_reached", "stop training at the target (default: train every epoch anyway)", ""},
    {"/energy", "section: the run config's energy keys, plus `cooldown_s`", "the run config's"},
    {"/energy/cooldown_s", "seconds to wait before each trial", "", true},
    {"/energy/thermal", "section: the thermal protocol: before each trial, wait for the visible NVIDIA GPUs to cool (NVML, read only); the wait, the GPUs at each trial's start and end and the throttle reasons in its windows are recorded, and a trial that started hot or throttled for power or temperature is flagged disturbed", "off"},
    {"/energy/thermal/target_c", "wait until the hottest GPU is at or below this temperature (C)", ""},
    {"/energy/thermal/max_wait_s", "never wait longer; a GPU still above `target_c` then starts its trial hot (flagged)", ""},
    {"/energy/thermal/settle_s", "... or stop once the hottest GPU has not cooled by a whole degree for this long (as cool as it gets)", ""},
    {"/energy/thermal/poll_s", "seconds between temperature reads", ""},
    {"/cost", "section: the Zeus cost", ""},
    {"/cost/eta", "eta values: cost = eta x ETA + (1 - eta) x MaxPower x TTA", ""},
    {"/cost/max_power_w", "MaxPower of the cost", "the GPUs' maximum limit x their count (or the simulated GPU's)"},
    {"/codecs", "section: measure the classical codecs beside every trial's Baler (the run config's codecs keys; present means enabled)", ""},
    {"/allow_power_limit_changes", "must be `true` for any `power_limit_w` other than null, or for the optimiser", ""},
    {"/power_limit_optimizer", "section: a Zeus-style power-limit optimiser inside each training run", "off"},
    {"/power_limit_optimizer/enabled", "turn it on", ""},
    {"/power_limit_optimizer/eta", "the eta of the cost it minimises", ""},
    {"/power_limit_optimizer/wait_steps", "steps skipped before profiling", ""},
    {"/power_limit_optimizer/warmup_steps", "steps at each limit before measuring", ""},
    {"/power_limit_optimizer/profile_steps", "steps measured at each limit", ""},
    {"/power_limit_optimizer/pl_step_w", "watts between the limits tried, from the maximum down", ""},
    {"/batch_size_optimizer", "section: Zeus's batch-size optimiser over the job's recurrences instead of a grid", "off"},
    {"/batch_size_optimizer/enabled", "turn it on: the job recurs, each recurrence's batch size chosen from `/sweep/batch_size`", ""},
    {"/batch_size_optimizer/default_batch_size", "the job's batch size without the optimiser, one of `/sweep/batch_size`: the first recurrence runs it", "required"},
    {"/batch_size_optimizer/recurrences", "how many times the job recurs", "2 x batch sizes x power limits (the paper)"},
    {"/batch_size_optimizer/eta", "the eta of the Zeus cost the optimiser minimises", ""},
    {"/batch_size_optimizer/beta", "stop an attempt once its cost passes beta x the cheapest recurrence so far (a number above 1, or `\"inf\"`: never)", ""},
    {"/batch_size_optimizer/seed", "the seed of the Thompson sampling draws (recorded with each attempt)", ""},
    {"/batch_size_optimizer/max_attempts", "attempts per recurrence before the recurrences stop (Zeus: 20)", ""},
    {"/batch_size_optimizer/pruning_rounds", "pruning rounds before Thompson sampling (Zeus: 2)", ""},
    {"/batch_size_optimizer/window", "observations per batch size the posterior uses; 0 = all", ""},
};

// The rows of `table`, each row standing for a registry's keys replaced by `keys`' of that registry.
std::vector<ConfigKeyDoc> with_registry_keys(const std::vector<ConfigKeyDoc>& table, const RegistryKeyDocs& keys) {
  std::vector<ConfigKeyDoc> docs;
  for (const ConfigKeyDoc& row : table) {
    if (row.meaning != kRegistryKeys) {
      docs.push_back(row);
      continue;
    }
    const std::vector<ConfigKeyDoc>* own = row.path == "engines" ? &keys.engines
                                           : row.path == "codecs" ? &keys.codecs
                                           : row.path == "meters" ? &keys.meters
                                                                  : nullptr;
    if (!own) throw std::logic_error("config_key_docs: no registry called " + row.path);
    docs.insert(docs.end(), own->begin(), own->end());
  }
  return docs;
}

// Puts `registry_words` in place of the entries of the same path that wait for them.
void write_registry_words(std::vector<ConfigKeyDoc>& docs, const std::vector<ConfigKeyDoc>& registry_words) {
  for (const ConfigKeyDoc& words : registry_words) {
    auto it = std::find_if(docs.begin(), docs.end(), [&](const ConfigKeyDoc& d) { return d.path == words.path; });
    if (it == docs.end() || it->meaning != kFromRegistry)
      throw std::logic_error("config_key_docs: " + words.path + " is no key whose words a registry writes");
    *it = words;
  }
  for (const ConfigKeyDoc& d : docs)
    if (d.meaning == kFromRegistry) throw std::logic_error("config_key_docs: no registry wrote " + d.path + "'s words");
}

// /dataset/generator/kind: "`cms` (CMS-like jets) or `cfd` (CFD-like frames)", from the generators'
// registry (datasets/generator_registry.h).
ConfigKeyDoc generator_kind_doc() {
  std::string words;
  for (const DatasetGenerator* g : dataset_generators())
    words += (words.empty() ? "`" : " or `") + std::string(g->name) + "` (" + g->what + ")";
  return {"/dataset/generator/kind", words, "required"};
}

}  // namespace

std::vector<ConfigKeyDoc> run_config_key_docs_with(const RegistryKeyDocs& registry_keys,
                                                   const std::vector<ConfigKeyDoc>& registry_words) {
  std::vector<ConfigKeyDoc> docs =
      with_registry_keys(std::vector<ConfigKeyDoc>(std::begin(kRunKeys), std::end(kRunKeys)), registry_keys);
  write_registry_words(docs, registry_words);
  return docs;
}

const std::vector<ConfigSectionDoc>& run_config_section_docs() {
  static const std::vector<ConfigSectionDoc> kSections = {
      {"", "Run config",
       "The file given to `train`, `compress`, `decompress` and `info` with `--config`, and an experiment's "
       "`training` section. Keys keep Baler's names. `--set key=value` overrides a key "
       "(`--set energy.sample_hz=100` reaches into a section). Baler's dead keys (`reg_param`, `RHO`, `l1`, "
       "`mse_avg`, `mse_sum`, `emd`) are refused with a hint."},
      {"/grad_scaler", "The grad_scaler section", "Loss scaling, used by `amp_fp16` only."},
      {"/energy", "The energy section",
       "Every key optional. See [Energy and meters](energy.md) for the meters and how to read their figures."},
      {"/energy/simulated_gpu", "The energy section's simulated_gpu",
       "power = min(idle + (max - idle) x load, limit); under a cap, throughput = cbrt(allowed / demanded dynamic "
       "power)."},
      {"/monitoring", "The monitoring section", "Every key optional. See [Live monitoring](monitoring.md)."},
      {"/codecs", "The codecs section",
       "Every key optional. `balerbench codecs` reads it; in a sweep, see the experiment's codecs section. See "
       "[Is Baler worth its joules?](codecs.md)."},
  };
  return kSections;
}

const std::vector<ConfigKeyDoc>& experiment_key_docs() {
  static const std::vector<ConfigKeyDoc> kDocs = [] {
    std::vector<ConfigKeyDoc> docs(std::begin(kExperimentKeys), std::end(kExperimentKeys));
    write_registry_words(docs, {generator_kind_doc()});
    return docs;
  }();
  return kDocs;
}

const std::vector<ConfigSectionDoc>& experiment_section_docs() {
  static const std::vector<ConfigSectionDoc> kSections = {
      {"", "Experiment file",
       "The file given to `balerbench run`. Strict JSON, schema-versioned; an unknown key or a bad value is an "
       "error naming its JSON path, before anything is written. See [Sweeps and the results database](sweeps.md)."},
      {"/dataset", "The dataset section", ""},
      {"/dataset/generator", "The dataset section's generator", ""},
      {"/model", "The model section", ""},
      {"/sweep", "The sweep section", ""},
      {"/target", "The target section", ""},
      {"/energy", "The energy section of an experiment",
       "The run config's energy keys (see above), and these more: `cooldown_s` and the thermal protocol."},
      {"/energy/thermal", "The energy section's thermal protocol",
       "Zeus lets a GPU cool below a threshold before each measurement: its power at a given load rises with its "
       "temperature. See [Energy and meters](energy.md)."},
      {"/cost", "The cost section", ""},
      {"/codecs", "The codecs section of an experiment",
       "The run config's codecs keys (see above). Present, it makes every trial measure the codecs after its "
       "compress and decompress (`\"codecs\": {}` is enough; `\"enabled\": false` turns it off again)."},
      {"/power_limit_optimizer", "The power_limit_optimizer section", "Zeus' GlobalPowerLimitOptimizer defaults."},
      {"/batch_size_optimizer", "The batch_size_optimizer section",
       "Zeus's batch-size optimiser (pruning, then Gaussian Thompson sampling) over the job's recurrences: no grid; one "
       "precision, engine and epochs value (the most an attempt trains), `repeats` 1, `power_limit_w` `[null]`, a "
       "`/target` (each attempt stops there). With `/power_limit_optimizer` on, the first attempt at each batch size "
       "chooses its limit; without it, the limit in force (no GPU: none). See [Choosing batch size and power "
       "limit](batch_size_and_power_limit.md)."},
  };
  return kSections;
}

}  // namespace balerbench
