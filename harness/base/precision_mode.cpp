// precision_mode.cpp: see precision_mode.h.
#include "harness/base/precision_mode.h"

#include "common/error.h"
#include "common/text.h"
#include "harness/base/name_table.h"

namespace balerbench {

const std::vector<PrecisionInfo>& precision_table() {
  static const std::vector<PrecisionInfo> kTable = {
      {Precision::kAuto, "auto", "auto (Baler's dtype)", 6},
      {Precision::kFp64, "fp64", "FP64 (Baler's AE dtype)", 3},
      {Precision::kFp32, "fp32", "normal training (FP32)", 0},
      {Precision::kTf32, "tf32", "TF32 matmuls", 4},
      {Precision::kAmpFp16, "amp_fp16", "AMP with loss scaling (FP16 + GradScaler)", 2},
      {Precision::kAmpFp16NoScale, "amp_fp16_noscale", "AMP without loss scaling (FP16)", 1},
      {Precision::kAmpBf16, "amp_bf16", "AMP bfloat16 (no loss scaling)", 5}};
  return kTable;
}

const PrecisionInfo& precision_info(Precision p) {
  for (const auto& info : precision_table())
    if (info.value == p) return info;
  return precision_table().front();  // unreachable: the table lists every enumerator
}

const char* precision_name(Precision p) { return name_in(precision_table(), p); }

std::optional<Precision> find_precision(const std::string& name) { return find_in<Precision>(precision_table(), name); }

const std::vector<std::string>& precision_names() {
  static const std::vector<std::string> kNames = names_in(precision_table());
  return kNames;
}

std::string precision_name_list() { return joined(precision_names()); }

Precision parse_precision(const std::string& name, const std::string& where) {
  if (auto p = find_precision(name)) return *p;
  throw InputError((where.empty() ? "" : where + ": ") + "unknown precision '" + name + "'",
                   "one of: " + precision_name_list());
}

}  // namespace balerbench
