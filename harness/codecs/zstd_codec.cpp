// zstd_codec.cpp: Zstandard, lossless, with or without a byte shuffle, whichever is smaller: the
// exact reference. Its round trip is checked bit for bit. Its level is its own key in the config's
// codecs section (codecs.zstd_level), read and documented by its section below.
#include <cstring>
#include <stdexcept>

#include "harness/codecs/codec_registry.h"

namespace balerbench {
namespace {

constexpr const char* kLevel = "zstd_level";

class Zstd final : public CodecRun {
 public:
  explicit Zstd(const CodecInput& in) : in_(in), level_(static_cast<int>(in.knobs.get<int64_t>(kLevel))) {}
  void compress() override { z_ = zstd_encode(in_.table, level_); }
  void decompress(std::vector<double>& out) override { zstd_decode(z_.bytes, out); }
  nlohmann::json row(const std::vector<double>& out, const ErrorMetrics&) const override {
    for (std::size_t i = 0; i < out.size(); ++i)
      if (std::memcmp(&out[i], in_.table.values + i, sizeof(double)) != 0)
        throw std::runtime_error("zstd: value " + std::to_string(i) + " did not round-trip bit for bit");
    return {{"codec", "zstd"},
            {"label", "Zstandard (lossless)"},
            {"lossless", true},
            {"setting", "level " + std::to_string(level_) + (z_.shuffled ? ", byte shuffle" : ", no shuffle")},
            {"shuffled", z_.shuffled},
            {"plain_bytes", z_.plain_bytes},
            {"shuffled_bytes", z_.shuffled_bytes},
            {"compressed_bytes", static_cast<int64_t>(z_.bytes.size())},
            {"ratio", static_cast<double>(in_.table.original_bytes()) / static_cast<double>(z_.bytes.size())}};
  }

 private:
  const CodecInput& in_;
  int level_;
  ZstdResult z_;
};

std::unique_ptr<CodecRun> make_zstd_run(const CodecInput& in, std::string&) { return std::make_unique<Zstd>(in); }

void set_defaults(Knobs& k) { k.set(kLevel, 3); }

void read(StrictReader& r, Knobs& k) {
  // Zstandard's own words for a level out of its range, before the reader's generic minimum.
  if (const nlohmann::json* z = r.get(kLevel);
      z && z->is_number_integer() && (z->get<int64_t>() < 1 || z->get<int64_t>() > 22))
    r.fail(kLevel, "Zstandard has levels 1 to 22, got " + z->dump(), "3 (the default) is fast; 19 is strong");
  int64_t level = k.get<int64_t>(kLevel);
  r.integer(kLevel, level, 1);
  k.set(kLevel, level);
}

std::vector<ConfigKeyDoc> docs() { return {{"/codecs/zstd_level", "Zstandard's level (1 to 22)", ""}}; }

}  // namespace

const CodecEntry& zstd_codec_entry() {
  static const KnobSection section{set_defaults, read, docs};
  static const CodecEntry entry{"zstd", &make_zstd_run, &section};
  return entry;
}

}  // namespace balerbench
