// zfp_columns_codec.cpp: ZFP fixed accuracy, each column at Baler's maximum absolute error in that
// column (a column Baler reconstructs exactly is coded losslessly): equal error column by column,
// where one tolerance for all would let ZFP spend the largest column's error on the small ones.
// Left out when Baler's errors are not finite.
#include <algorithm>
#include <cmath>

#include "harness/codecs/codec_registry.h"

namespace balerbench {
namespace {

class ZfpColumns final : public CodecRun {
 public:
  ZfpColumns(const CodecInput& in, std::vector<double> tolerances) : in_(in), tolerances_(std::move(tolerances)) {}
  void compress() override { bytes_ = zfp_encode_columns(in_.table, tolerances_); }
  void decompress(std::vector<double>& out) override { zfp_decode(bytes_, out); }
  nlohmann::json row(const std::vector<double>& out, const ErrorMetrics& e) const override {
    int64_t lossless = 0;
    for (double t : tolerances_) lossless += t == 0;
    const bool held = e.finite && bound_held(out);
    nlohmann::json j = {
        {"codec", "zfp_columns"},
        {"label", "ZFP fixed accuracy per column"},
        {"lossless", false},
        {"setting", "each column at Baler's max abs error there" +
                        (lossless ? " (" + std::to_string(lossless) + " exact columns lossless)" : std::string())},
        {"column_tolerances", tolerances_},
        {"compressed_bytes", static_cast<int64_t>(bytes_.size())},
        {"ratio", static_cast<double>(in_.table.original_bytes()) / static_cast<double>(bytes_.size())},
        {"bound_held", held}};
    if (!held) j["notes"] = {"ZFP's per-column bound did not hold on some element"};
    return j;
  }

 private:
  bool bound_held(const std::vector<double>& out) const {
    const FloatTable& t = in_.table;
    for (int64_t r = 0; r < t.rows; ++r)
      for (int64_t c = 0; c < t.cols; ++c)
        if (std::fabs(out[static_cast<std::size_t>(r * t.cols + c)] - t.values[r * t.cols + c]) >
            tolerances_[static_cast<std::size_t>(c)])
          return false;
    return true;
  }
  const CodecInput& in_;
  std::vector<double> tolerances_;
  std::vector<uint8_t> bytes_;
};

std::unique_ptr<CodecRun> make_zfp_columns_run(const CodecInput& in, std::string&) {
  const FloatTable& t = in.table;
  std::vector<double> tolerances(static_cast<std::size_t>(t.cols), 0.0);
  bool finite = true;
  for (int64_t r = 0; r < t.rows; ++r)
    for (int64_t c = 0; c < t.cols; ++c) {
      const double d = std::fabs(in.baler[r * t.cols + c] - t.values[r * t.cols + c]);
      finite = finite && std::isfinite(d);
      tolerances[static_cast<std::size_t>(c)] = std::max(tolerances[static_cast<std::size_t>(c)], d);
    }
  if (!finite) return nullptr;
  return std::make_unique<ZfpColumns>(in, std::move(tolerances));
}

}  // namespace

const CodecEntry& zfp_columns_codec_entry() {
  static const CodecEntry entry{"zfp_columns", &make_zfp_columns_run};
  return entry;
}

}  // namespace balerbench
