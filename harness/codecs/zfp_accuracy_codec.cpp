// zfp_accuracy_codec.cpp: ZFP fixed accuracy, its tolerance Baler's maximum absolute error: the
// ratio at equal error. Left out (with a note) when Baler is exact, as there is no tolerance to match.
#include "harness/codecs/codec_registry.h"

namespace balerbench {
namespace {

class ZfpAccuracy final : public CodecRun {
 public:
  explicit ZfpAccuracy(const CodecInput& in) : in_(in) {}
  void compress() override { bytes_ = zfp_encode(in_.table, ZfpMode::kAccuracy, in_.tolerance); }
  void decompress(std::vector<double>& out) override { zfp_decode(bytes_, out); }
  nlohmann::json row(const std::vector<double>&, const ErrorMetrics& e) const override {
    const double tolerance = in_.tolerance;
    nlohmann::json j = {{"codec", "zfp_accuracy"},
                        {"label", "ZFP fixed accuracy"},
                        {"lossless", false},
                        {"setting", "tolerance " + codec_number("%.3g", tolerance) + " (Baler's max abs error)"},
                        {"tolerance", tolerance},
                        {"compressed_bytes", static_cast<int64_t>(bytes_.size())},
                        {"ratio", static_cast<double>(in_.table.original_bytes()) / static_cast<double>(bytes_.size())},
                        {"bound_held", e.finite && e.max_abs <= tolerance}};
    if (!(e.finite && e.max_abs <= tolerance))
      j["notes"] = {"ZFP's bound did not hold: max abs " + codec_number("%.3g", e.max_abs) + " > " +
                    codec_number("%.3g", tolerance)};
    return j;
  }

 private:
  const CodecInput& in_;
  std::vector<uint8_t> bytes_;
};

std::unique_ptr<CodecRun> make_zfp_accuracy_run(const CodecInput& in, std::string& why_not) {
  if (in.tolerance > 0) return std::make_unique<ZfpAccuracy>(in);
  why_not = "Baler's reconstruction is exact here (max abs error 0): ZFP's fixed accuracy has no tolerance "
            "to match and is left out; zstd is the exact reference";
  return nullptr;
}

}  // namespace

const CodecEntry& zfp_accuracy_codec_entry() {
  static const CodecEntry entry{"zfp_accuracy", &make_zfp_accuracy_run};
  return entry;
}

}  // namespace balerbench
