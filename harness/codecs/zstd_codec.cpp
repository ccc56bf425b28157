// zstd_codec.cpp: Zstandard, lossless, with or without a byte shuffle, whichever is smaller: the
// exact reference. Its round trip is checked bit for bit.
#include <cstring>
#include <stdexcept>

#include "harness/codecs/codec_registry.h"

namespace balerbench {
namespace {

class Zstd final : public CodecRun {
 public:
  explicit Zstd(const CodecInput& in) : in_(in) {}
  void compress() override { z_ = zstd_encode(in_.table, in_.zstd_level); }
  void decompress(std::vector<double>& out) override { zstd_decode(z_.bytes, out); }
  nlohmann::json row(const std::vector<double>& out, const ErrorMetrics&) const override {
    for (std::size_t i = 0; i < out.size(); ++i)
      if (std::memcmp(&out[i], in_.table.values + i, sizeof(double)) != 0)
        throw std::runtime_error("zstd: value " + std::to_string(i) + " did not round-trip bit for bit");
    return {{"codec", "zstd"},
            {"label", "Zstandard (lossless)"},
            {"lossless", true},
            {"setting", "level " + std::to_string(in_.zstd_level) + (z_.shuffled ? ", byte shuffle" : ", no shuffle")},
            {"shuffled", z_.shuffled},
            {"plain_bytes", z_.plain_bytes},
            {"shuffled_bytes", z_.shuffled_bytes},
            {"compressed_bytes", static_cast<int64_t>(z_.bytes.size())},
            {"ratio", static_cast<double>(in_.table.original_bytes()) / static_cast<double>(z_.bytes.size())}};
  }

 private:
  const CodecInput& in_;
  ZstdResult z_;
};

std::unique_ptr<CodecRun> make(const CodecInput& in, std::string&) { return std::make_unique<Zstd>(in); }

}  // namespace

const CodecEntry& zstd_codec_entry() {
  static const CodecEntry entry{"zstd", &make};
  return entry;
}

}  // namespace balerbench
