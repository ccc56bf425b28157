// run_config.h: the configuration of one Baler cycle (train, compress,
// decompress, info), parsed strictly from JSON.
//
// Keys keep Baler's names where Baler has one; only input_path, model_name and
// compression_ratio are required, everything else defaults as Baler's
// template config does. Unknown keys, wrong types and out-of-range values are
// InputErrors naming the JSON path ("/epochs"). Relative paths in a config
// file resolve against the file's folder; paths given with --set against the
// working directory.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/base/config_key_docs.h"
#include "harness/base/knobs.h"
#include "harness/base/precision_mode.h"
#include "harness/codecs/codec_registry.h"
#include "harness/energy/energy_settings.h"
#include "harness/engine/engine_choice.h"
#include "harness/engine/train_settings.h"
#include "harness/monitor/monitoring_settings.h"

namespace balerbench {

// The training settings (epochs, batch_size, lr, loss, the schedulers, grad_scaler, the engines'
// keys, ...) are the TrainSettings base (engine/train_settings.h), filled in place by the parser and
// handed whole to the trainer (train_options, run/training_session.h); the rest is the run's.
struct RunConfig : TrainSettings {
  // Baler's keys.
  std::string input_path;
  std::string model_name;
  double compression_ratio = 0;
  std::optional<int> data_dimension;  // checked against the data when set
  std::string model_type = "dense";
  double test_size = 0.0;
  bool apply_normalization = true;
  bool custom_norm = false;  // Baler: true means no scaling at all
  bool deterministic_algorithm = true;
  bool extra_compression = false;  // deflate the output .npz files
  bool intermittent_model_saving = false;
  int64_t intermittent_saving_patience = 100;
  std::vector<std::string> type_list;  // per column: float64|float32|int|int64|int32

  // balerbench's own keys.
  std::string latent_dtype;           // "" = the model's dtype | float64 | float32 | float16
  bool truncate = false;              // integer columns truncated toward zero, as Baler
  std::string device = "cpu";         // cpu | cuda | cuda:N
  int64_t threads = 0;                // 0 = every CPU in the affinity mask
  bool flush_denormal = true;         // flush subnormal floats to zero (see runtime.h)
  int64_t codec_chunk_rows = 1024;    // rows per compress/decompress step (fits L2; see README)
  // Sweeps: a trial's compress and decompress each repeat inside their window until it is this long
  // (after a warm-up outside it; measure_filled), so that the meter updates often enough inside; the
  // figures are then per pass. 0: one pass, as `compress` and `decompress` run.
  double codec_min_window_s = 0;
  Precision precision = Precision::kAuto;  // see base/precision_mode.h; what each does: precision.h
  EngineKind engine = EngineKind::kAuto;   // auto | libtorch | fused | ... (engine/engine_choice.h)
  std::string profile_trace;          // profile: write LibTorch's profiler trace (Chrome trace JSON) here
  EnergySettings energy;              // the "energy" section: meters, sampling, carbon
  // The "codecs" section: Baler against classical codecs at matched error (codec_comparison.h), by
  // `balerbench codecs`, and in a sweep's trials when enabled.
  struct CodecsKeys {
    bool enabled = false;                           // sweeps: each trial measures the codecs too
    std::vector<int64_t> uses = {1, 10, 100};       // compressions the training is spread over
    double min_window_s = 0.2;                      // each codec's work repeated to fill a window this long
    // Each codec's own keys (zstd_level, ...), read by the codec's own section (codec_registry.h)
    // and handed whole to the codecs (CodecInput::knobs).
    Knobs knobs = default_codec_knobs();
    bool is_default() const;
    nlohmann::json to_json() const;
  } codecs;
  MonitoringSettings monitoring;      // the "monitoring" section: Prometheus endpoint, InfluxDB

  bool normalizes() const { return apply_normalization && !custom_norm; }
  nlohmann::json to_json() const;  // the settings' keys (TrainSettings::to_json) and the run's
};

// The "codecs" section at `path` of `source` (strict). An experiment's top-level /codecs enables
// them unless it says "enabled": false.
RunConfig::CodecsKeys parse_codecs_keys(const nlohmann::json& section, const std::string& source,
                                        const std::string& path, bool enabled_by_default = false);

// The configuration reference's entries for a run config: base/config_key_docs.cpp's, with every
// registered engine's, codec's and meter's own keys (their registries) in their places.
std::vector<ConfigKeyDoc> run_config_key_docs();

// Parses `j` (the whole config object). `source` names the file in errors,
// `base_dir` resolves relative paths. `path` is the JSON path of `j` in its file
// ("" for a run config, "/training" inside an experiment), for error messages.
RunConfig parse_run_config(const nlohmann::json& j, const std::string& source, const std::string& base_dir,
                           const std::string& path = "");
// The hint for a compression_ratio that is not a positive number (here and in an experiment's /model).
inline constexpr char kCompressionRatioHint[] =
    "a number above 0: the features per latent value, e.g. 1.6; see `balerbench config reference`";

// A config value set by a command-line option: `assignment` as for --set, `origin` the option as
// the user typed it ("--precision"), which errors about the value name instead of the file.
struct ConfigOverride {
  std::string assignment;  // "precision=fp32"
  std::string origin;      // "--precision"
};

// Reads FILE.json (strictly: see strict_json.h), applies `sets` ("key=value"; value parsed as
// JSON, else taken as a string), then `options`, and validates. An error in a value that came
// from a --set or an option names it ("--set epochs=x: ..."), not the file.
RunConfig load_run_config(const std::string& path, const std::vector<std::string>& sets,
                          const std::vector<ConfigOverride>& options = {});

// Applies one "key=value" override to a JSON object (exposed for tests) and returns the JSON
// path it set ("/energy/sample_hz"). A dotted key reaches into a section: energy.sample_hz=100.
// `origin` names the override in errors (default: set_origin(assignment)).
std::string apply_override(nlohmann::json& j, const std::string& assignment, const std::string& origin = "");
// "--set key=value" as errors name it: on one line (a newline in it escaped), a long value cut after
// 120 bytes.
std::string set_origin(const std::string& assignment);

struct Dataset;
// The config against its data: a 2D file with a 1D model, the reverse, a data_dimension that
// disagrees, or a type_list of the wrong length is an InputError.
void check_dimensions(const RunConfig& c, const Dataset& ds);

}  // namespace balerbench
