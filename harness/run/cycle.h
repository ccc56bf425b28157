// cycle.h: Baler's train / compress / decompress / info over an output folder
// laid out as Baler's (`files`: balerbench's --out DIR, or a Baler project's output/, whose
// model.pt is in compressed_output/ and whose compressed.npz holds Baler's keys only):
//   OUT/training/            model.pt, loss_data.npy (2, epochs), normalization_features.npy,
//                            run_config.json, training_report.json
//   OUT/compressed_output/   compressed.npz {data, names, normalization_features, original_shape, model_name},
//                            compress_report.json
//   OUT/decompressed_output/ decompressed.npz {data, names}, decompress_report.json
// Each function returns its report (also written as JSON beside the outputs).
#pragma once

#include <nlohmann/json.hpp>

#include <functional>

#include <string>

#include "datasets/cycle_files.h"
#include "harness/engine/training_observer.h"
#include "harness/run/run_config.h"

namespace balerbench {

// `observer` (optional) observes the training (training_observer.h); its before_training() runs
// once the data and model are set up and valid, just before the training's time starts (the CLI
// prints its hazards block there, so bad input fails first and alone).
nlohmann::json run_train(const RunConfig& config, const CycleFiles& files, TrainingObserver* observer = nullptr);
nlohmann::json run_compress(const RunConfig& config, const CycleFiles& files);
nlohmann::json run_decompress(const RunConfig& config, const CycleFiles& files);
// Baler (the trained model, in process) against the classical codecs on config.input_path, at matched
// error (codec_comparison.h), into OUT/codecs/codecs_report.json with its energy report.
nlohmann::json run_codecs(const RunConfig& config, const CycleFiles& files);
// Sizes, compression ratios and, when the decompressed file exists, the
// reconstruction error against the input.
nlohmann::json run_info(const RunConfig& config, const CycleFiles& files);

}  // namespace balerbench
