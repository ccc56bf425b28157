// zfp_rate_codec.cpp: ZFP fixed rate at Baler's ratio without the decoder: the error at equal ratio.
#include <cmath>

#include "harness/codecs/codec_registry.h"

namespace balerbench {
namespace {

class ZfpRate final : public CodecRun {
 public:
  explicit ZfpRate(const CodecInput& in) : in_(in), bits_(8.0 * in.table.item_bytes / in.baler_ratio) {}
  void compress() override { bytes_ = zfp_encode(in_.table, ZfpMode::kRate, bits_); }
  void decompress(std::vector<double>& out) override { zfp_decode(bytes_, out); }
  nlohmann::json row(const std::vector<double>&, const ErrorMetrics&) const override {
    const double ratio = static_cast<double>(in_.table.original_bytes()) / static_cast<double>(bytes_.size());
    const double actual = zfp_actual_rate(in_.table.item_bytes, bits_);
    return {{"codec", "zfp_rate"},
            {"notes", notes(ratio)},
            {"label", "ZFP fixed rate"},
            {"lossless", false},
            {"setting", codec_number("%.3g", actual) + " bits/value (Baler's ratio " +
                            codec_number("%.3g", in_.baler_ratio) + ")"},
            {"bits_per_value", actual},
            {"compressed_bytes", static_cast<int64_t>(bytes_.size())},
            {"ratio", ratio}};
  }

 private:
  nlohmann::json notes(double reached) const {
    nlohmann::json n = nlohmann::json::array();
    const double baler_ratio = in_.baler_ratio;
    if (bits_ >= 8.0 * in_.table.item_bytes)
      n.push_back("Baler's ratio " + codec_number("%.3g", baler_ratio) + " is not above 1 (its latent code is stored in " +
                  "a wider dtype than the data's " + in_.source_dtype + "): ZFP's fixed rate at it expands the data");
    else if (std::fabs(reached / baler_ratio - 1) > 0.05)
      n.push_back("reaches ratio " + codec_number("%.3g", reached) + ", not Baler's " + codec_number("%.3g", baler_ratio) +
                  ": each column's header and ZFP's word padding weigh on columns of " +
                  std::to_string(in_.table.rows) + " values");
    return n;
  }
  const CodecInput& in_;
  double bits_;
  std::vector<uint8_t> bytes_;
};

std::unique_ptr<CodecRun> make_zfp_rate_run(const CodecInput& in, std::string&) { return std::make_unique<ZfpRate>(in); }

}  // namespace

const CodecEntry& zfp_rate_codec_entry() {
  static const CodecEntry entry{"zfp_rate", &make_zfp_rate_run};
  return entry;
}

}  // namespace balerbench
