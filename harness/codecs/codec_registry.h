// codec_registry.h: the classical codecs set beside Baler's autoencoder, by name, as engines are in
// engine_registry.h. Each codec's file defines its entry (what it is called, and how to make one
// run of it on a table); the registry lists them in the order the comparison shows them
// (run/codec_comparison.h measures each in its windows codecs:<name>:compress and ...:decompress).
// A new codec is one file with its entry, settings included (a KnobSection: its keys in the
// config's `codecs` section), and one line in codec_registry.cpp. No LibTorch headers: the run
// config reads the codecs' keys through this.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "harness/base/config_key_docs.h"
#include "harness/base/knobs.h"
#include "harness/codecs/float_codecs.h"

namespace balerbench {

// What a codec is measured against: the original table and Baler's reconstruction of it.
struct CodecInput {
  const FloatTable& table;     // the original data, rows x cols float64 in the file's item size
  const double* baler;         // Baler's reconstruction, rows x cols float64
  double baler_ratio = 0;      // Baler's ratio without the decoder
  double tolerance = 0;        // Baler's max abs error; 0 when it is exact or not finite
  // The config's codecs section's knobs: every registered codec's own keys (codecs.zstd_level),
  // each codec reading its own by name.
  const Knobs& knobs;
  std::string source_dtype;    // the data file's dtype ("float32"), for the notes
};

// One run of a codec on one table: compress and decompress are what the windows measure; the row
// is said after both, from what they left behind.
class CodecRun {
 public:
  virtual ~CodecRun() = default;
  virtual void compress() = 0;
  // Into `out` (rows x cols, row-major float64).
  virtual void decompress(std::vector<double>& out) = 0;
  // The row's own keys ("codec", "label", "lossless", "setting", "compressed_bytes", "ratio", and
  // the codec's), with "notes" when it has some. `out`: decompress's output; `error`: its errors.
  virtual nlohmann::json row(const std::vector<double>& out, const ErrorMetrics& error) const = 0;
};

struct CodecEntry {
  const char* name;  // the comparison's "codec" and the windows' middle part
  // A run of the codec on `in`, or null when it has nothing to compare here (then `why_not`, when
  // not empty, goes to the comparison's notes).
  std::unique_ptr<CodecRun> (*make)(const CodecInput& in, std::string& why_not);
  // Its own keys in the config's `codecs` section (base/knobs.h; zstd_codec.cpp's is the example):
  // their defaults, strict reader and entries in the configuration reference; null when it has none.
  const KnobSection* knobs = nullptr;
};

// Every classical codec, in the comparison's order, then any registered with CodecRegistration.
std::vector<const CodecEntry*> codec_registry();
// "zfp_accuracy, zfp_columns, ...": the names, in order.
std::vector<std::string> codec_names();
// The entry named `name`; InputError naming the known codecs otherwise.
const CodecEntry& codec_entry(const std::string& name);

// Every registered codec's own keys (RunConfig::CodecsKeys::knobs): at their defaults; read from the
// `codecs` section's reader; their entries in the configuration reference, in registry order.
Knobs default_codec_knobs();
void read_codec_knobs(StrictReader& r, Knobs& knobs);
std::vector<ConfigKeyDoc> codec_knob_docs();

// printf's `format` (one double) as a string: the codecs' settings and notes ("%.3g").
std::string codec_number(const char* format, double v);

// Adds `entry` after the built-in codecs for as long as it lives (a codec outside this folder, or
// a test's): the comparison then runs it too, and a config read meanwhile reads its keys. InputError
// when its name is taken.
class CodecRegistration {
 public:
  explicit CodecRegistration(const CodecEntry& entry);
  ~CodecRegistration();
  CodecRegistration(const CodecRegistration&) = delete;
  CodecRegistration& operator=(const CodecRegistration&) = delete;

 private:
  const CodecEntry* entry_;
};

}  // namespace balerbench
