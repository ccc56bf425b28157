// registered_entries.h: a meter and a codec that live only in the tests, each with a setting of its
// own, to show that a new one is its own code and one registration (MeterRegistration,
// CodecRegistration) and nothing else: the constant meter, energy.test_constant_power_w, and the
// copy codec, codecs.test_copy_count. Each key's default, strict reader and reference entry are
// here. No LibTorch headers. (The test engine, which needs LibTorch's, is in
// unit/engine/test_engine_registry.cpp.)
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "harness/codecs/codec_registry.h"
#include "harness/energy/meter_registry.h"

namespace balerbench {

// A meter drawing a constant power, its key's value: power_w joules per second since it opened, by
// the clock it is opened with.
inline constexpr char kConstantMeter[] = "test_constant";
inline constexpr char kConstantPower[] = "test_constant_power_w";

class ConstantMeter final : public EnergyMeter {
 public:
  ConstantMeter(double power_w, TimeSource& clock) : power_w_(power_w), clock_(clock), opened_(clock.now()) {}
  std::string name() const override { return kConstantMeter; }
  MeterKind kind() const override { return MeterKind::kSimulated; }
  const std::vector<Domain>& domains() const override { return domains_; }
  MeterReading read() override {
    MeterReading r;
    r.time = clock_.now();
    r.energy_j = {power_w_ * std::chrono::duration<double>(r.time - opened_).count()};
    return r;
  }
  double update_period_s() const override { return 0.001; }
  nlohmann::json describe() const override { return {{"power_w", power_w_}}; }

 private:
  double power_w_;
  TimeSource& clock_;
  SteadyClock::time_point opened_;
  std::vector<Domain> domains_ = {{"test", DomainCategory::kCpu, true, ""}};
};

inline const KnobSection kConstantMeterKnobs{
    [](Knobs& k) { k.set(kConstantPower, 5.0); },
    [](StrictReader& r, Knobs& k) {
      double power_w = k.get<double>(kConstantPower);
      r.number_in(kConstantPower, power_w, 0, 1000);
      k.set(kConstantPower, power_w);
    },
    [] {
      return std::vector<ConfigKeyDoc>{{"/energy/test_constant_power_w", "the test meter's power (0 to 1000 W)", ""}};
    }};

inline const MeterEntry kConstantMeterEntry{kConstantMeter, MeterKind::kSimulated, "a constant power (a test's)",
                                            [](const EnergySettings& s, TimeSource& clock) {
                                              MeterProbe p;
                                              p.meter = std::make_unique<ConstantMeter>(
                                                  s.meter_knobs.get<double>(kConstantPower), clock);
                                              return p;
                                            },
                                            &kConstantMeterKnobs};

// A codec that stores the values as they are, as many times as its key says: ratio 1 / count, no
// error.
inline constexpr char kCopyCodec[] = "test_copy";
inline constexpr char kCopyCount[] = "test_copy_count";

class CopyRun final : public CodecRun {
 public:
  explicit CopyRun(const CodecInput& in) : in_(in), count_(in.knobs.get<int64_t>(kCopyCount)) {}
  void compress() override {
    const FloatTable& t = in_.table;
    copy_.clear();
    for (int64_t i = 0; i < count_; ++i) copy_.insert(copy_.end(), t.values, t.values + t.rows * t.cols);
  }
  void decompress(std::vector<double>& out) override {
    out.assign(copy_.begin(), copy_.begin() + static_cast<std::ptrdiff_t>(copy_.size() / count_));
  }
  nlohmann::json row(const std::vector<double>&, const ErrorMetrics&) const override {
    const auto bytes = static_cast<int64_t>(copy_.size() * sizeof(double));
    return {{"codec", kCopyCodec},
            {"label", "copies (test only)"},
            {"lossless", true},
            {"setting", std::to_string(count_) + " copies"},
            {"compressed_bytes", bytes},
            {"ratio", static_cast<double>(in_.table.original_bytes()) / static_cast<double>(bytes)}};
  }

 private:
  const CodecInput& in_;
  int64_t count_;
  std::vector<double> copy_;
};

inline const KnobSection kCopyCodecKnobs{
    [](Knobs& k) { k.set(kCopyCount, 1); },
    [](StrictReader& r, Knobs& k) {
      int64_t count = k.get<int64_t>(kCopyCount);
      r.integer(kCopyCount, count, 1, 8);
      k.set(kCopyCount, count);
    },
    [] { return std::vector<ConfigKeyDoc>{{"/codecs/test_copy_count", "the test codec's copies (1 to 8)", ""}}; }};

inline const CodecEntry kCopyCodecEntry{
    kCopyCodec,
    [](const CodecInput& in, std::string&) -> std::unique_ptr<CodecRun> { return std::make_unique<CopyRun>(in); },
    &kCopyCodecKnobs};

}  // namespace balerbench
