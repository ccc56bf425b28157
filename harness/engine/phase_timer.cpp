// phase_timer.cpp: see phase_timer.h.
#include "harness/engine/phase_timer.h"

#include <ATen/record_function.h>

#include <optional>
#include <utility>
#include <vector>

#include "harness/engine/torch_compat.h"

#if BALERBENCH_WITH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace balerbench {

const char* phase_name(Phase p) {
  static const char* const names[kPhaseCount] = {"data",      "encode",     "decode",   "loss",      "backward",
                                                 "optimizer", "evaluation", "compress", "decompress"};
  return names[static_cast<int>(p)];
}

namespace {
const char* scope_name(Phase p) {
  static const char* const names[kPhaseCount] = {
      "balerbench::data",       "balerbench::forward/encode", "balerbench::forward/decode",
      "balerbench::loss",       "balerbench::backward",       "balerbench::optimizer",
      "balerbench::evaluation", "balerbench::compress",       "balerbench::decompress"};
  return names[static_cast<int>(p)];
}
}  // namespace

double PhaseTimes::sum_s() const {
  double s = 0;
  for (const auto& p : by_phase) s += p.duration_s;
  return s;
}

void PhaseTimes::add(const PhaseTimes& o) {
  for (int i = 0; i < kPhaseCount; ++i) {
    by_phase[i].duration_s += o.by_phase[i].duration_s;
    by_phase[i].count += o.by_phase[i].count;
  }
}

nlohmann::json PhaseTimes::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (int i = 0; i < kPhaseCount; ++i)
    if (by_phase[i].count > 0)
      j[phase_name(static_cast<Phase>(i))] = {{"duration_s", by_phase[i].duration_s}, {"count", by_phase[i].count}};
  return j;
}

struct PhaseTimer::Impl {
  std::array<std::optional<at::RecordFunction>, kPhaseCount> scopes;
#if BALERBENCH_WITH_CUDA
  std::array<std::shared_ptr<at::cuda::CUDAEvent>, kPhaseCount> open;
  std::vector<std::pair<int, std::pair<std::shared_ptr<at::cuda::CUDAEvent>, std::shared_ptr<at::cuda::CUDAEvent>>>>
      pending;
#endif
};

PhaseTimer::PhaseTimer(c10::Device device, bool enabled, bool sync)
    : device_(device), enabled_(enabled), sync_(sync), impl_(std::make_unique<Impl>()) {
  if (enabled_ && device_.is_cuda() && !built_with_cuda())
    throw std::runtime_error("PhaseTimer: this build of balerbench has no CUDA support");
}

PhaseTimer::PhaseTimer() = default;
PhaseTimer::~PhaseTimer() = default;
PhaseTimer::PhaseTimer(PhaseTimer&&) noexcept = default;
PhaseTimer& PhaseTimer::operator=(PhaseTimer&&) noexcept = default;

void PhaseTimer::begin(Phase p) {
  if (!enabled_) return;
  const int i = static_cast<int>(p);
  auto& scope = impl_->scopes[i];
  scope.emplace(at::RecordScope::USER_SCOPE);
  if (scope->isActive()) scope->before(scope_name(p));
  if (device_.is_cuda() && !sync_) {
#if BALERBENCH_WITH_CUDA
    impl_->open[i] = std::make_shared<at::cuda::CUDAEvent>(cudaEventDefault);
    impl_->open[i]->record(c10::cuda::getCurrentCUDAStream(device_.index()));
#endif
    return;
  }
  if (sync_) synchronize_device(device_);
  started_[i] = std::chrono::steady_clock::now();
}

void PhaseTimer::end(Phase p) {
  if (!enabled_) return;
  const int i = static_cast<int>(p);
  if (device_.is_cuda() && !sync_) {
#if BALERBENCH_WITH_CUDA
    auto stop = std::make_shared<at::cuda::CUDAEvent>(cudaEventDefault);
    stop->record(c10::cuda::getCurrentCUDAStream(device_.index()));
    impl_->pending.push_back({i, {std::move(impl_->open[i]), std::move(stop)}});
#endif
  } else {
    if (sync_) synchronize_device(device_);
    totals_.by_phase[i].duration_s +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started_[i]).count();
    totals_.by_phase[i].count += 1;
  }
  impl_->scopes[i].reset();  // ends the RecordFunction scope
}

void PhaseTimer::flush() {
#if BALERBENCH_WITH_CUDA
  if (!impl_) return;
  for (auto& [i, ev] : impl_->pending) {
    ev.second->synchronize();
    totals_.by_phase[i].duration_s += static_cast<double>(ev.first->elapsed_time(*ev.second)) / 1000.0;
    totals_.by_phase[i].count += 1;
  }
  impl_->pending.clear();
#endif
}

const PhaseTimes& PhaseTimer::totals() {
  flush();
  return totals_;
}

}  // namespace balerbench
