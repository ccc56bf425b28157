// downcast_codecs.cpp: float16 and bfloat16 downcasts (round to nearest even), with the values
// that overflow their range and those below their smallest normal noted.
#include "harness/codecs/codec_registry.h"

namespace balerbench {
namespace {

class DowncastRun final : public CodecRun {
 public:
  DowncastRun(const CodecInput& in, HalfKind kind) : in_(in), kind_(kind) {}
  void compress() override { h_ = downcast(in_.table, kind_); }
  void decompress(std::vector<double>& out) override { upcast(h_, kind_, out); }
  nlohmann::json row(const std::vector<double>&, const ErrorMetrics&) const override {
    const std::string name = half_kind_name(kind_);
    const int64_t bytes = downcast_bytes(in_.table);
    return {{"codec", name},
            {"label", "downcast to " + name},
            {"lossless", false},
            {"setting", "round to nearest even"},
            {"overflow", h_.overflow},
            {"subnormal", h_.subnormal},
            {"flushed_to_zero", h_.flushed_to_zero},
            {"compressed_bytes", bytes},
            {"ratio", static_cast<double>(in_.table.original_bytes()) / static_cast<double>(bytes)},
            {"notes", notes(name)}};
  }

 private:
  nlohmann::json notes(const std::string& name) const {
    nlohmann::json n = nlohmann::json::array();
    const char* largest = kind_ == HalfKind::kFloat16 ? "65504" : "3.4e38";
    const char* smallest = kind_ == HalfKind::kFloat16 ? "6.1e-05" : "1.2e-38";
    if (h_.overflow > 0)
      n.push_back(std::to_string(h_.overflow) + " values overflow " + name + "'s range (|x| > " + largest +
                  ") and decode as inf: its errors are infinite");
    if (h_.subnormal > 0)
      n.push_back(std::to_string(h_.subnormal) + " nonzero values lie below " + name + "'s smallest normal (" +
                  smallest + ") and keep fewer bits" +
                  (h_.flushed_to_zero ? "; " + std::to_string(h_.flushed_to_zero) + " became 0" : ""));
    if (in_.table.item_bytes == 4 && kind_ == HalfKind::kBFloat16)
      n.push_back("bfloat16 keeps float32's range with 8 bits of mantissa instead of 24");
    return n;
  }
  const CodecInput& in_;
  HalfKind kind_;
  Downcast h_;
};

std::unique_ptr<CodecRun> make_float16(const CodecInput& in, std::string&) {
  return std::make_unique<DowncastRun>(in, HalfKind::kFloat16);
}
std::unique_ptr<CodecRun> make_bfloat16(const CodecInput& in, std::string&) {
  return std::make_unique<DowncastRun>(in, HalfKind::kBFloat16);
}

}  // namespace

const CodecEntry& float16_codec_entry() {
  static const CodecEntry entry{"float16", &make_float16};
  return entry;
}

const CodecEntry& bfloat16_codec_entry() {
  static const CodecEntry entry{"bfloat16", &make_bfloat16};
  return entry;
}

}  // namespace balerbench
