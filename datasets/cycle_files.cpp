// cycle_files.cpp: see cycle_files.h.
#include "datasets/cycle_files.h"

namespace balerbench {

namespace fs = std::filesystem;

std::string CycleFiles::checkpoint(int64_t epoch) const {
  return (training / ("model_" + std::to_string(epoch) + ".pt")).string();
}

CycleFiles out_dir_files(const std::string& out_dir) {
  CycleFiles f;
  f.training = fs::path(out_dir) / "training";
  f.compressed = fs::path(out_dir) / "compressed_output";
  f.decompressed = fs::path(out_dir) / "decompressed_output";
  f.model_path = f.training / "model.pt";
  return f;
}

CycleFiles baler_project_files(const std::string& output_dir) {
  CycleFiles f = out_dir_files(output_dir);
  f.model_path = f.compressed / "model.pt";  // Baler's perform_training saves it there
  f.baler_project = true;
  return f;
}

}  // namespace balerbench
