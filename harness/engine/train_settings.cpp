// train_settings.cpp: see train_settings.h.
#include "harness/engine/train_settings.h"

#include <cmath>

namespace balerbench {

double TrainSettings::effective_lr() const {
  if (lr_scaling == "none" || !lr_reference_batch_size) return lr;
  const double ratio = static_cast<double>(batch_size) / static_cast<double>(*lr_reference_batch_size);
  return lr_scaling == "linear" ? lr * ratio : lr * std::sqrt(ratio);
}

nlohmann::json TrainSettings::to_json() const {
  using nlohmann::json;
  json j = {{"epochs", epochs}, {"batch_size", batch_size}, {"lr", lr}, {"early_stopping", early_stopping},
            {"early_stopping_patience", early_stopping_patience}, {"min_delta", min_delta},
            {"lr_scheduler", lr_scheduler}, {"lr_scheduler_patience", lr_scheduler_patience},
            {"loss", loss_kind_name(loss)}, {"shuffle", shuffle}, {"seed", seed}, {"progress", progress},
            {"progress_interval_s", progress_interval_s},
            {"grad_scaler", {{"init_scale", grad_scaler.init_scale}, {"growth_factor", grad_scaler.growth_factor},
                             {"backoff_factor", grad_scaler.backoff_factor},
                             {"growth_interval", grad_scaler.growth_interval}}},
            {"cuda_graphs", cuda_graphs}, {"profile", profile}, {"profile_sync", profile_sync}};
  j.update(engine_knobs.to_json());
  if (lr_scaling != "none") {  // absent without scaling: older trials' keys stay
    j["lr_scaling"] = lr_scaling;
    j["lr_reference_batch_size"] = lr_reference_batch_size ? json(*lr_reference_batch_size) : json(nullptr);
    j["effective_lr"] = effective_lr();
  }
  return j;
}

}  // namespace balerbench
