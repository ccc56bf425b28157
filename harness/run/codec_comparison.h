// codec_comparison.h: is Baler worth its joules? Baler's autoencoder against classical codecs on the
// same data, at matched error, each measured in its own energy windows (codecs/codec_registry.h lists
// the codecs, codecs/float_codecs.h has their loops and the error measures).
//
// Rows, in order:
//   baler          the trained model's compress and decompress (the engine the run chose); its ratio
//                  without and with the decoder (model.pt and the normalization file: a reader must
//                  have them), its training time and energy, and the cost per MB with the training
//                  spread over N compressions (config codecs.uses) with the break-even N per codec;
//   zfp_accuracy   ZFP fixed accuracy, its tolerance Baler's maximum absolute error (ratio at equal
//                  error);
//   zfp_columns    ZFP fixed accuracy, each column at Baler's maximum absolute error in that column (a
//                  column Baler reconstructs exactly is coded losslessly): equal error column by column,
//                  where one tolerance for all would let ZFP spend the largest column's error on the
//                  small ones;
//   zfp_rate       ZFP fixed rate at Baler's ratio without the decoder (error at equal ratio);
//   zstd           lossless, with or without a byte shuffle, whichever is smaller (the exact reference);
//   float16, bfloat16  downcasts, with their overflows and lost range noted;
//   then any codec registered with CodecRegistration.
// Every codec's compress and decompress run in windows named codecs:<codec>:compress and
// ...:decompress, repeated to fill codecs.min_window_s (measure_repeated); figures are per run.
// `original_bytes` is the data array's (rows x features x the file's item size), the same for all.
#pragma once

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "datasets/dataset.h"
#include "datasets/normalizer.h"
#include "harness/engine/engine.h"
#include "harness/energy/energy_session.h"
#include "harness/run/run_config.h"
#include "harness/run/training_session.h"

namespace balerbench {

// InputError when the codecs cannot compare `ds` (they compare float32 or float64 data): checked
// before any training, so that a sweep with "codecs" refuses such data before its first trial.
void check_codecs_data(const Dataset& ds);

struct BalerCodecSide {
  at::Tensor reconstruction;          // (rows, features) float64, as decompress gives it
  int64_t latent_bytes = 0;           // the latent code's array (rows x latent x its item size)
  int64_t model_bytes = 0;            // model.pt as written
  int64_t normalization_bytes = 0;    // normalization_features.npy as written (0 without normalization)
  Measured compress, decompress;      // per run
  std::optional<double> train_s, train_energy_j, train_uncertainty_j;
  std::string engine;                 // what ran compress and decompress ("fused", "libtorch")
};

// Baler's compress and decompress of `ds` on `engine`, measured as the codecs are (measure_repeated,
// in the windows codecs:baler:compress and codecs:baler:decompress): sets `baler`'s compress and
// decompress, and its reconstruction and latent_bytes unless `baler` holds a reconstruction already
// (a trial's own decompress output, the same bits, is kept). `param_dtype`: the precision policy's,
// for the latent code's dtype.
void measure_baler(EnergySession* energy, AutoEncoder& model, Engine& engine, const Dataset& ds,
                   const Normalization* norm, const RunConfig& c, at::ScalarType param_dtype, BalerCodecSide& baler);

// Baler and the classical codecs, as `balerbench codecs` and a sweep's trials measure them: `baler`
// holds the decoder's bytes and the training's figures; this sets its engine, measures Baler
// (measure_baler) and returns compare_codecs's comparison.
nlohmann::json measure_baler_and_codecs(EnergySession* energy, AutoEncoder& model, Engine& engine, const Dataset& ds,
                                        const Normalization* norm, const RunConfig& c, at::ScalarType param_dtype,
                                        BalerCodecSide& baler);

// Runs the classical codecs on `ds` inside `energy`'s windows (timed alone without it) and returns the
// comparison: {"original_bytes", "rows", "features", "dtype", "tolerance", "rows": [...], "basis",
// "notes"}. InputError for data a codec cannot take (see float_codecs.h).
nlohmann::json compare_codecs(const Dataset& ds, const BalerCodecSide& baler, EnergySession* energy,
                              const RunConfig::CodecsKeys& keys);

}  // namespace balerbench
