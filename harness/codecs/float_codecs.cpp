// float_codecs.cpp: see float_codecs.h.
#include "harness/codecs/float_codecs.h"

#include <zfp.h>
#include <zstd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>

#include "common/error.h"
#include "harness/base/exact_floats.h"

namespace balerbench {
namespace {

constexpr char kZfpMagic[4] = {'B', 'B', 'Z', 'F'};
constexpr char kZstdMagic[4] = {'B', 'B', 'Z', 'S'};
constexpr std::size_t kZfpHeader = 32;   // magic, item bytes, pad, rows, cols, unused (0)
// then per column: its byte count and ZFP's mode word (16 bytes), then the columns' streams
constexpr std::size_t kZstdHeader = 24;  // magic, item bytes, shuffled, pad, rows, cols

void put_u64(std::vector<uint8_t>& b, std::size_t at, uint64_t v) { std::memcpy(b.data() + at, &v, 8); }
uint64_t get_u64(const std::vector<uint8_t>& b, std::size_t at) {
  uint64_t v;
  std::memcpy(&v, b.data() + at, 8);
  return v;
}

void check_table(const FloatTable& t, const char* what) {
  if (!t.values || t.rows < 1 || t.cols < 1)
    throw InputError(std::string(what) + ": an empty table (no rows or no columns)", "give data with rows");
  if (t.item_bytes != 4 && t.item_bytes != 8)
    throw InputError(std::string(what) + ": item size " + std::to_string(t.item_bytes) + " bytes",
                     "float32 (4) or float64 (8) data");
}

struct ZfpStream {
  zfp_stream* zfp = zfp_stream_open(nullptr);
  bitstream* bits = nullptr;
  zfp_field* field = nullptr;
  ~ZfpStream() {
    if (field) zfp_field_free(field);
    if (bits) stream_close(bits);
    if (zfp) zfp_stream_close(zfp);
  }
};

}  // namespace

double zfp_actual_rate(int item_bytes, double bits_per_value) {
  ZfpStream s;
  return zfp_stream_set_rate(s.zfp, bits_per_value, item_bytes == 4 ? zfp_type_float : zfp_type_double, 1, zfp_false);
}

namespace {

// Each column's stream, with its own mode: `set(zfp, column)` sets it.
template <typename SetMode>
std::vector<uint8_t> zfp_encode_with(const FloatTable& t, const SetMode& set) {
  const zfp_type type = t.item_bytes == 4 ? zfp_type_float : zfp_type_double;
  const auto rows = static_cast<std::size_t>(t.rows), cols = static_cast<std::size_t>(t.cols);
  std::vector<uint8_t> out(kZfpHeader + 16 * cols);
  std::memcpy(out.data(), kZfpMagic, 4);
  out[4] = static_cast<uint8_t>(t.item_bytes);
  put_u64(out, 8, rows);
  put_u64(out, 16, cols);
  std::vector<double> column64(rows);
  std::vector<float> column32(t.item_bytes == 4 ? rows : 0);
  std::vector<uint8_t> buffer;
  for (std::size_t c = 0; c < cols; ++c) {
    for (std::size_t r = 0; r < rows; ++r) column64[r] = t.values[r * cols + c];
    void* data = column64.data();
    if (t.item_bytes == 4) {
      for (std::size_t r = 0; r < rows; ++r) column32[r] = static_cast<float>(column64[r]);
      data = column32.data();
    }
    ZfpStream s;
    s.field = zfp_field_1d(data, type, rows);
    set(s.zfp, type, c);
    put_u64(out, kZfpHeader + 16 * c + 8, zfp_stream_mode(s.zfp));
    buffer.resize(zfp_stream_maximum_size(s.zfp, s.field));
    s.bits = stream_open(buffer.data(), buffer.size());
    zfp_stream_set_bit_stream(s.zfp, s.bits);
    zfp_stream_rewind(s.zfp);
    const std::size_t size = zfp_compress(s.zfp, s.field);
    if (size == 0) throw std::runtime_error("zfp: compression of column " + std::to_string(c) + " failed");
    put_u64(out, kZfpHeader + 16 * c, size);
    out.insert(out.end(), buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(size));
  }
  return out;
}

}  // namespace

std::vector<uint8_t> zfp_encode(const FloatTable& t, ZfpMode mode, double param) {
  check_table(t, "zfp");
  if (!(param > 0) || !std::isfinite(param))
    throw InputError(std::string("zfp: a ") + (mode == ZfpMode::kAccuracy ? "tolerance" : "rate") + " of " +
                         std::to_string(param) + " (it must be positive and finite)",
                     mode == ZfpMode::kAccuracy ? "an exact copy is zstd's row (lossless)" : "bits per value, e.g. 8");
  return zfp_encode_with(t, [&](zfp_stream* zfp, zfp_type type, std::size_t) {
    if (mode == ZfpMode::kAccuracy)
      zfp_stream_set_accuracy(zfp, param);
    else
      zfp_stream_set_rate(zfp, param, type, 1, zfp_false);
  });
}

std::vector<uint8_t> zfp_encode_columns(const FloatTable& t, const std::vector<double>& tolerances) {
  check_table(t, "zfp");
  if (static_cast<int64_t>(tolerances.size()) != t.cols)
    throw InputError("zfp: " + std::to_string(tolerances.size()) + " tolerances for " + std::to_string(t.cols) +
                     " columns");
  for (std::size_t c = 0; c < tolerances.size(); ++c)
    if (!(tolerances[c] >= 0) || !std::isfinite(tolerances[c]))
      throw InputError("zfp: column " + std::to_string(c) + "'s tolerance is " + std::to_string(tolerances[c]),
                       "0 (lossless) or a positive, finite bound");
  return zfp_encode_with(t, [&](zfp_stream* zfp, zfp_type, std::size_t c) {
    if (tolerances[c] > 0)
      zfp_stream_set_accuracy(zfp, tolerances[c]);
    else
      zfp_stream_set_reversible(zfp);
  });
}

void zfp_decode(const std::vector<uint8_t>& in, std::vector<double>& out) {
  if (in.size() < kZfpHeader || std::memcmp(in.data(), kZfpMagic, 4) != 0 || (in[4] != 4 && in[4] != 8))
    throw InputError("zfp: not a stream written by balerbench's zfp codec");
  const int item = in[4];
  const uint64_t rows = get_u64(in, 8), cols = get_u64(in, 16);
  if (rows == 0 || cols == 0 || cols > (in.size() - kZfpHeader) / 16)
    throw InputError("zfp: a damaged header (rows " + std::to_string(rows) + ", columns " + std::to_string(cols) + ")");
  out.assign(rows * cols, 0.0);
  std::vector<double> column64(rows);
  std::vector<float> column32(item == 4 ? rows : 0);
  std::size_t at = kZfpHeader + 16 * cols;
  for (uint64_t c = 0; c < cols; ++c) {
    const uint64_t size = get_u64(in, kZfpHeader + 16 * c), mode = get_u64(in, kZfpHeader + 16 * c + 8);
    if (size > in.size() - at) throw InputError("zfp: column " + std::to_string(c) + " is cut short");
    ZfpStream s;
    void* data = item == 4 ? static_cast<void*>(column32.data()) : static_cast<void*>(column64.data());
    s.field = zfp_field_1d(data, item == 4 ? zfp_type_float : zfp_type_double, rows);
    if (zfp_stream_set_mode(s.zfp, mode) == zfp_mode_null) throw InputError("zfp: an unknown mode word");
    // ZFP reads whole words: a copy padded to 8 bytes, so the last word's read stays inside.
    std::vector<uint8_t> chunk(in.begin() + static_cast<std::ptrdiff_t>(at),
                               in.begin() + static_cast<std::ptrdiff_t>(at + size));
    chunk.resize(((size + 7) / 8 + 1) * 8, 0);
    s.bits = stream_open(chunk.data(), chunk.size());
    zfp_stream_set_bit_stream(s.zfp, s.bits);
    zfp_stream_rewind(s.zfp);
    if (zfp_decompress(s.zfp, s.field) == 0)
      throw InputError("zfp: column " + std::to_string(c) + " does not decompress");
    for (uint64_t r = 0; r < rows; ++r) out[r * cols + c] = item == 4 ? column32[r] : column64[r];
    at += size;
  }
}

namespace {

// The table's values in its item size, row-major, as bytes.
std::vector<uint8_t> raw_bytes(const FloatTable& t) {
  const std::size_t n = static_cast<std::size_t>(t.rows * t.cols);
  std::vector<uint8_t> b(n * static_cast<std::size_t>(t.item_bytes));
  if (t.item_bytes == 8) {
    std::memcpy(b.data(), t.values, b.size());
  } else {
    const ExactSubnormals exact;  // lossless even where the run flushes subnormals
    for (std::size_t i = 0; i < n; ++i) {
      const float f = static_cast<float>(t.values[i]);
      std::memcpy(b.data() + 4 * i, &f, 4);
    }
  }
  return b;
}

std::vector<uint8_t> shuffle(const std::vector<uint8_t>& b, std::size_t item) {
  const std::size_t n = b.size() / item;
  std::vector<uint8_t> s(b.size());
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t k = 0; k < item; ++k) s[k * n + i] = b[i * item + k];
  return s;
}

std::vector<uint8_t> unshuffle(const std::vector<uint8_t>& s, std::size_t item) {
  const std::size_t n = s.size() / item;
  std::vector<uint8_t> b(s.size());
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t k = 0; k < item; ++k) b[i * item + k] = s[k * n + i];
  return b;
}

std::vector<uint8_t> zstd_frame(const std::vector<uint8_t>& b, int level) {
  std::vector<uint8_t> out(ZSTD_compressBound(b.size()));
  const std::size_t size = ZSTD_compress(out.data(), out.size(), b.data(), b.size(), level);
  if (ZSTD_isError(size)) throw std::runtime_error(std::string("zstd: ") + ZSTD_getErrorName(size));
  out.resize(size);
  return out;
}

}  // namespace

ZstdResult zstd_encode(const FloatTable& t, int level) {
  check_table(t, "zstd");
  if (level < 1 || level > ZSTD_maxCLevel())
    throw InputError("zstd: level " + std::to_string(level), "1 to " + std::to_string(ZSTD_maxCLevel()));
  const std::vector<uint8_t> raw = raw_bytes(t);
  std::vector<uint8_t> plain = zstd_frame(raw, level);
  std::vector<uint8_t> shuffled = zstd_frame(shuffle(raw, static_cast<std::size_t>(t.item_bytes)), level);
  ZstdResult r;
  r.plain_bytes = static_cast<int64_t>(kZstdHeader + plain.size());
  r.shuffled_bytes = static_cast<int64_t>(kZstdHeader + shuffled.size());
  r.shuffled = shuffled.size() < plain.size();
  const std::vector<uint8_t>& body = r.shuffled ? shuffled : plain;
  r.bytes.resize(kZstdHeader);
  std::memcpy(r.bytes.data(), kZstdMagic, 4);
  r.bytes[4] = static_cast<uint8_t>(t.item_bytes);
  r.bytes[5] = r.shuffled ? 1 : 0;
  put_u64(r.bytes, 8, static_cast<uint64_t>(t.rows));
  put_u64(r.bytes, 16, static_cast<uint64_t>(t.cols));
  r.bytes.insert(r.bytes.end(), body.begin(), body.end());
  return r;
}

void zstd_decode(const std::vector<uint8_t>& in, std::vector<double>& out) {
  if (in.size() < kZstdHeader || std::memcmp(in.data(), kZstdMagic, 4) != 0 || (in[4] != 4 && in[4] != 8))
    throw InputError("zstd: not a stream written by balerbench's zstd codec");
  const std::size_t item = in[4];
  const uint64_t rows = get_u64(in, 8), cols = get_u64(in, 16);
  const std::size_t n = static_cast<std::size_t>(rows * cols);
  std::vector<uint8_t> raw(n * item);
  const std::size_t size = ZSTD_decompress(raw.data(), raw.size(), in.data() + kZstdHeader, in.size() - kZstdHeader);
  if (ZSTD_isError(size) || size != raw.size()) throw InputError("zstd: the frame does not decompress to the table");
  if (in[5]) raw = unshuffle(raw, item);
  out.resize(n);
  if (item == 8) {
    std::memcpy(out.data(), raw.data(), raw.size());
  } else {
    const ExactSubnormals exact;
    for (std::size_t i = 0; i < n; ++i) {
      float f;
      std::memcpy(&f, raw.data() + 4 * i, 4);
      out[i] = f;
    }
  }
}

const char* half_kind_name(HalfKind k) { return k == HalfKind::kFloat16 ? "float16" : "bfloat16"; }

namespace {

// IEEE binary16 from a double, round to nearest even (through float32 for the exponent's range
// checks; the double -> float rounding and then float -> half could round twice, so the half is
// rounded from the double's own bits).
uint16_t to_float16(double x) {
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double a = std::fabs(x);
  if (std::isnan(a)) return sign | 0x7E00;
  if (a >= 65520.0) return sign | 0x7C00;  // rounds to infinity (65504 is the largest finite)
  if (a < std::ldexp(1.0, -25)) {
    // below half the smallest subnormal: zero, except exactly-above-half values round up
    return sign;
  }
  int e;
  std::frexp(a, &e);  // a = m 2^e, m in [0.5, 1)
  int exponent = e - 1;  // a = 1.f 2^exponent
  double q;              // a in units of the last place
  if (exponent < -14) {
    q = std::ldexp(a, 24);  // subnormal: units of 2^-24
  } else {
    q = std::ldexp(a, 10 - exponent);  // 1.f x 2^10, in [1024, 2048)
  }
  double r = std::nearbyint(q);  // round half to even (default rounding mode)
  if (exponent < -14) {
    const auto bits = static_cast<uint16_t>(r);  // up to 1024: 1024 is the smallest normal's pattern
    return sign | bits;
  }
  if (r >= 2048) {
    r /= 2;
    ++exponent;
  }
  if (exponent > 15) return sign | 0x7C00;
  const auto mantissa = static_cast<uint16_t>(static_cast<int>(r) - 1024);
  return sign | static_cast<uint16_t>((exponent + 15) << 10) | mantissa;
}

double from_float16(uint16_t h) {
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  const int exponent = (h >> 10) & 0x1F;
  const int mantissa = h & 0x3FF;
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  if (exponent == 31) return mantissa ? std::numeric_limits<double>::quiet_NaN() : sign * HUGE_VAL;
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

// bfloat16: the top 16 bits of the float32, rounded to nearest even from the double's value.
uint16_t to_bfloat16(double x) {
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double a = std::fabs(x);
  if (std::isnan(a)) return sign | 0x7FC0;
  int e;
  std::frexp(a == 0 ? 1.0 : a, &e);
  if (a == 0) return sign;
  int exponent = e - 1;
  const bool sub = exponent < -126;
  double q = sub ? std::ldexp(a, 133) : std::ldexp(a, 7 - exponent);  // subnormal units of 2^-133
  double r = std::nearbyint(q);
  if (sub) return sign | static_cast<uint16_t>(r);  // 128 is the smallest normal's pattern
  if (r >= 256) {
    r /= 2;
    ++exponent;
  }
  if (exponent > 127) return sign | 0x7F80;
  return sign | static_cast<uint16_t>((exponent + 127) << 7) | static_cast<uint16_t>(static_cast<int>(r) - 128);
}

double from_bfloat16(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

}  // namespace

Downcast downcast(const FloatTable& t, HalfKind kind) {
  check_table(t, half_kind_name(kind));
  const std::size_t n = static_cast<std::size_t>(t.rows * t.cols);
  const double smallest_normal = kind == HalfKind::kFloat16 ? std::ldexp(1.0, -14) : std::ldexp(1.0, -126);
  Downcast d;
  d.values.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double x = t.values[i];
    const uint16_t h = kind == HalfKind::kFloat16 ? to_float16(x) : to_bfloat16(x);
    d.values[i] = h;
    const double back = kind == HalfKind::kFloat16 ? from_float16(h) : from_bfloat16(h);
    if (std::isinf(back) && std::isfinite(x)) ++d.overflow;
    if (x != 0 && std::fabs(x) < smallest_normal) ++d.subnormal;
    if (x != 0 && back == 0) ++d.flushed_to_zero;
  }
  return d;
}

void upcast(const Downcast& d, HalfKind kind, std::vector<double>& out) {
  out.resize(d.values.size());
  for (std::size_t i = 0; i < d.values.size(); ++i)
    out[i] = kind == HalfKind::kFloat16 ? from_float16(d.values[i]) : from_bfloat16(d.values[i]);
}

int64_t downcast_bytes(const FloatTable& t) { return 16 + 2 * t.rows * t.cols; }

ErrorMetrics error_metrics(const FloatTable& t, const double* y) {
  ErrorMetrics m;
  const auto rows = static_cast<std::size_t>(t.rows), cols = static_cast<std::size_t>(t.cols);
  // The sum of squares kept as scale^2 * ssq (LAPACK's dnrm2 update), so that errors near 1e200 and
  // above do not overflow to an infinite RMSE.
  double lo = HUGE_VAL, hi = -HUGE_VAL, scale = 0, ssq = 0;
  std::vector<double> rel_sq(cols, 0.0);
  std::vector<int64_t> rel_n(cols, 0);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) {
      const double x = t.values[r * cols + c], d = y[r * cols + c] - x;
      lo = std::min(lo, x);
      hi = std::max(hi, x);
      if (!std::isfinite(d)) m.finite = false;
      const double ad = std::fabs(d);
      if (ad > scale) {
        ssq = 1.0 + ssq * (scale / ad) * (scale / ad);
        scale = ad;
      } else if (ad > 0) {
        ssq += (ad / scale) * (ad / scale);
      }
      m.max_abs = std::max(m.max_abs, ad);
      if (std::fabs(x) >= 1e-6) {
        const double rel = 100.0 * d / x;
        rel_sq[c] += rel * rel;
        ++rel_n[c];
      } else {
        ++m.relative_left_out;
      }
    }
  if (!m.finite) {
    m.rmse = m.max_abs = HUGE_VAL;
  } else {
    m.rmse = scale * std::sqrt(ssq / static_cast<double>(rows * cols));
  }
  if (m.finite && m.rmse > 0 && hi > lo) m.psnr_db = 20.0 * std::log10((hi - lo) / m.rmse);
  m.column_relative_rms_pct.resize(cols);
  for (std::size_t c = 0; c < cols; ++c) {
    if (rel_n[c] == 0) continue;
    const double v = std::sqrt(rel_sq[c] / static_cast<double>(rel_n[c]));
    m.column_relative_rms_pct[c] = v;
    if (!m.worst_column_relative_rms_pct || v > *m.worst_column_relative_rms_pct || std::isnan(v)) {
      m.worst_column_relative_rms_pct = v;
      m.worst_column = static_cast<int64_t>(c);
    }
  }
  return m;
}

}  // namespace balerbench
