// float_codecs.h: the classical codecs set beside Baler's autoencoder (issue "Is Baler worth its
// joules?"), and the error measures all of them are judged by. Plain loops and two libraries from
// Debian (libzfp-dev, libzstd-dev); no LibTorch.
//
// A table is `rows` x `cols` values, row-major, given as float64; `item_bytes` (4 or 8) is the dtype
// the data file holds them in, and each codec compresses that dtype (float32 data as float32), so
// that `original_bytes` = rows x cols x item_bytes is what the file's array takes.
//
//   ZFP (LLNL's error-bounded compressor), one 1D stream per column (a column's values are one
//   quantity; a 2D block would mix columns of unrelated scales):
//     - fixed accuracy: every |x' - x| <= tolerance (ZFP's guarantee; `zfp_encode` checks it);
//     - fixed rate: `bits_per_value` bits per value, so ratio = 8 x item_bytes / bits;
//     - fixed accuracy per column: each column its own tolerance (0: lossless, ZFP's reversible mode).
//   Zstandard, lossless, on the raw bytes, with and without a byte shuffle (byte k of every value,
//   then byte k + 1: the exponents' bytes lie together), keeping the smaller.
//   Downcasts to float16 and bfloat16 (round to nearest even), counting the values that overflow to
//   infinity or fall below the normal range.
//
// Each encoder's bytes carry a small header (dimensions, mode, per-column sizes): they decode alone,
// and the header's bytes count in the ratio.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace balerbench {

struct FloatTable {
  const double* values = nullptr;  // rows x cols, row-major
  int64_t rows = 0, cols = 0;
  int item_bytes = 8;               // 4: float32 data (the values are exactly float32), 8: float64
  int64_t original_bytes() const { return rows * cols * item_bytes; }
};

enum class ZfpMode { kAccuracy, kRate };

// ZFP: `param` is the absolute tolerance (kAccuracy, > 0) or the bits per value (kRate, > 0).
// InputError for a tolerance or rate that is not positive and finite.
std::vector<uint8_t> zfp_encode(const FloatTable& t, ZfpMode mode, double param);
// Fixed accuracy with each column's own tolerance (`tolerances`, one per column, >= 0); a column
// whose tolerance is 0 is coded losslessly (ZFP's reversible mode).
std::vector<uint8_t> zfp_encode_columns(const FloatTable& t, const std::vector<double>& tolerances);
// Into `out` (rows x cols, row-major float64). InputError when the bytes are not zfp_encode's.
void zfp_decode(const std::vector<uint8_t>& bytes, std::vector<double>& out);
// The rate ZFP really uses for `bits_per_value` on 1D float data of this item size (it rounds).
double zfp_actual_rate(int item_bytes, double bits_per_value);

struct ZstdResult {
  std::vector<uint8_t> bytes;
  bool shuffled = false;                   // the byte shuffle was smaller and is used
  int64_t plain_bytes = 0, shuffled_bytes = 0;  // both sizes, measured
};
// Zstandard at `level` (1 to 19) on the table's values in its item size.
ZstdResult zstd_encode(const FloatTable& t, int level);
void zstd_decode(const std::vector<uint8_t>& bytes, std::vector<double>& out);

enum class HalfKind { kFloat16, kBFloat16 };
const char* half_kind_name(HalfKind k);  // "float16", "bfloat16"
struct Downcast {
  std::vector<uint16_t> values;  // rows x cols, the 16-bit patterns
  int64_t overflow = 0;          // finite values that became +-inf (|x| above the largest finite)
  int64_t subnormal = 0;         // nonzero values below the smallest normal (precision lost, or 0)
  int64_t flushed_to_zero = 0;   // nonzero values that became 0
};
Downcast downcast(const FloatTable& t, HalfKind kind);
void upcast(const Downcast& d, HalfKind kind, std::vector<double>& out);
// The bytes of a downcast as stored: a 16-byte header and the 16-bit values.
int64_t downcast_bytes(const FloatTable& t);

// The reconstruction's errors against the original, as Baler's own diagnostics and SDRBench read
// them. Infinite reconstructed values (a float16 overflow) make the errors infinite (`finite` false).
struct ErrorMetrics {
  double rmse = 0, max_abs = 0;
  // 20 log10(value range / rmse), the range being max - min over the whole table. Empty when rmse is
  // 0 (exact) or the range is 0 (a constant table).
  std::optional<double> psnr_db;
  // Baler's per-column relative error (plotting.py: 100 (after - before) / before), as each column's
  // RMS in percent over the elements with |before| >= 1e-6 (the others are left out and counted).
  // Empty for a column with no such element.
  std::vector<std::optional<double>> column_relative_rms_pct;
  int64_t relative_left_out = 0;
  std::optional<double> worst_column_relative_rms_pct;  // the largest of the columns'
  int64_t worst_column = -1;
  bool finite = true;
};
ErrorMetrics error_metrics(const FloatTable& original, const double* reconstructed);

}  // namespace balerbench
