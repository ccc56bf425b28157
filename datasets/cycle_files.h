// cycle_files.h: where train, compress and decompress put their files. Two layouts:
//
//   balerbench's --out DIR              a Baler project's output/ (workspaces/WS/P/output)
//   DIR/training/model.pt               output/compressed_output/model.pt   (Baler's place)
//   DIR/training/loss_data.npy          output/training/loss_data.npy
//   DIR/training/normalization_features.npy  output/training/normalization_features.npy
//   DIR/compressed_output/compressed.npz     output/compressed_output/compressed.npz
//   DIR/decompressed_output/decompressed.npz output/decompressed_output/decompressed.npz
//
// In a Baler project the files are also Baler's in content: compressed.npz holds Baler's keys only
// (data, names, normalization_features), model.pt holds the model's Baler dtype, and decompressed
// data are de-normalized in float64 as numpy does there (docs/baler_interop.md). balerbench's own
// reports (*_report.json, run_config.json) go beside the files in both layouts.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace balerbench {

struct CycleFiles {
  std::filesystem::path training, compressed, decompressed;  // the three folders
  std::filesystem::path model_path;                          // model.pt
  bool baler_project = false;                                // Baler's file contents (see above)

  std::string model() const { return model_path.string(); }
  std::string norm() const { return (training / "normalization_features.npy").string(); }
  std::string loss() const { return (training / "loss_data.npy").string(); }
  std::string compressed_npz() const { return (compressed / "compressed.npz").string(); }
  std::string decompressed_npz() const { return (decompressed / "decompressed.npz").string(); }
  // intermittent_model_saving's training/model_<epoch>.pt (the same place in both layouts).
  std::string checkpoint(int64_t epoch) const;
};

// balerbench's layout under `out_dir`.
CycleFiles out_dir_files(const std::string& out_dir);
// Baler's layout under a project's output folder (workspaces/WS/P/output).
CycleFiles baler_project_files(const std::string& output_dir);

}  // namespace balerbench
