// phase_timer.h: per-phase timing of training and the codec
// (docs/reference_tables.md T5).
//
// Phases: data, encode, decode, loss, backward, optimizer, evaluation,
// compress, decompress. Two ways to time a device:
//   sync = true   each phase edge waits for the device (torch.cuda.synchronize)
//                 and reads the host clock: exact wall time per phase, at the
//                 cost of draining the GPU's queue every phase;
//   sync = false  on CUDA, events are recorded on the stream and read once per
//                 epoch (flush): GPU execution time per phase, nothing waits.
// On the CPU both read the host clock (CPU ops return when done). A disabled
// timer costs one branch per edge. Each phase is also a RecordFunction user
// scope ("balerbench::forward/encode", ...) so it shows in profiler traces.
#pragma once

#include <c10/core/Device.h>
#include <nlohmann/json.hpp>

#include <array>
#include <chrono>
#include <memory>
#include <string>

namespace balerbench {

enum class Phase { kData, kEncode, kDecode, kLoss, kBackward, kOptimizer, kEvaluation, kCompress, kDecompress };
constexpr int kPhaseCount = 9;
const char* phase_name(Phase p);

struct PhaseStat {
  double duration_s = 0;
  int64_t count = 0;
};

struct PhaseTimes {
  std::array<PhaseStat, kPhaseCount> by_phase{};
  PhaseStat& operator[](Phase p) { return by_phase[static_cast<int>(p)]; }
  const PhaseStat& operator[](Phase p) const { return by_phase[static_cast<int>(p)]; }
  double sum_s() const;
  void add(const PhaseTimes& other);
  nlohmann::json to_json() const;  // {phase: {duration_s, count}} for phases with count > 0
};

class PhaseTimer {
 public:
  PhaseTimer();  // disabled
  PhaseTimer(c10::Device device, bool enabled, bool sync);
  ~PhaseTimer();
  PhaseTimer(PhaseTimer&&) noexcept;
  PhaseTimer& operator=(PhaseTimer&&) noexcept;

  bool enabled() const { return enabled_; }
  bool sync() const { return sync_; }
  void begin(Phase p);
  void end(Phase p);
  // Resolves pending device events into the totals (waits for them).
  void flush();
  const PhaseTimes& totals();  // flushes first

  // begin on construction, end on destruction.
  class Scope {
   public:
    Scope(PhaseTimer& t, Phase p) : t_(t), p_(p) { t_.begin(p_); }
    ~Scope() { t_.end(p_); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    PhaseTimer& t_;
    Phase p_;
  };

 private:
  struct Impl;  // CUDA events and RecordFunction guards
  c10::Device device_{c10::kCPU};
  bool enabled_ = false, sync_ = true;
  std::array<std::chrono::steady_clock::time_point, kPhaseCount> started_{};
  PhaseTimes totals_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace balerbench
