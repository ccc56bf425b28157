// npy.cpp: .npy header parsing and (de)serialisation. See npy.h.
#include "datasets/npy.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <fcntl.h>
#include <unistd.h>

#include "common/error.h"
#include "common/paths.h"
#include "common/atomic_file.h"

namespace balerbench {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicBytes = 6;
constexpr std::size_t kMaxHeaderBytes = 1 << 20;  // NumPy caps headers far lower

std::size_t dtype_item_bytes(DType dtype) {
  switch (dtype) {
    case DType::kFloat64: case DType::kInt64: return 8;
    case DType::kFloat32: case DType::kInt32: return 4;
    case DType::kFloat16: return 2;
    case DType::kUInt8: case DType::kBool: return 1;
    case DType::kUnicode: return 4;  // per character
  }
  return 0;
}

// Extracts the value text that follows `'key':` in a header dict.
std::string dict_value(const std::string& header, const std::string& key, const std::string& where) {
  const std::string quoted[2] = {"'" + key + "'", "\"" + key + "\""};
  std::size_t pos = std::string::npos;
  for (const auto& q : quoted) {
    pos = header.find(q);
    if (pos != std::string::npos) { pos += q.size(); break; }
  }
  if (pos == std::string::npos)
    throw InputError(where + ": .npy header has no '" + key + "' entry", "the file is not a NumPy array");
  pos = header.find(':', pos);
  if (pos == std::string::npos) throw InputError(where + ": malformed .npy header");
  ++pos;
  while (pos < header.size() && header[pos] == ' ') ++pos;
  std::size_t end = pos;
  if (pos < header.size() && header[pos] == '(') {
    end = header.find(')', pos);
    if (end == std::string::npos) throw InputError(where + ": malformed shape in .npy header");
    return header.substr(pos, end - pos + 1);
  }
  if (pos < header.size() && (header[pos] == '\'' || header[pos] == '"')) {
    end = header.find(header[pos], pos + 1);
    if (end == std::string::npos) throw InputError(where + ": malformed descr in .npy header");
    return header.substr(pos + 1, end - pos - 1);
  }
  if (pos < header.size() && header[pos] == '[')
    throw InputError(where + ": structured (record) dtypes are not supported",
                     "store plain numeric columns in 'data'");
  while (end < header.size() && header[end] != ',' && header[end] != '}') ++end;
  std::string value = header.substr(pos, end - pos);
  while (!value.empty() && value.back() == ' ') value.pop_back();
  return value;
}

void parse_descr(const std::string& descr, NpyHeader& h, const std::string& where) {
  const std::string hint = "supported: float64, float32, float16, int64, int32, uint8, bool, unicode (<U)";
  if (descr.size() < 2) throw InputError(where + ": unsupported dtype '" + descr + "'", hint);
  const char order = descr[0];
  if (order != '<' && order != '>' && order != '|' && order != '=')
    throw InputError(where + ": unsupported dtype '" + descr + "'", hint);
  h.big_endian = order == '>';
  const char kind = descr[1];
  const std::string size_text = descr.substr(2);
  long size = 0;
  try {
    size = std::stol(size_text);
  } catch (...) {
    throw InputError(where + ": unsupported dtype '" + descr + "'", hint);
  }
  if (kind == 'f' && size == 8) h.dtype = DType::kFloat64;
  else if (kind == 'f' && size == 4) h.dtype = DType::kFloat32;
  else if (kind == 'f' && size == 2) h.dtype = DType::kFloat16;
  else if (kind == 'i' && size == 8) h.dtype = DType::kInt64;
  else if (kind == 'i' && size == 4) h.dtype = DType::kInt32;
  else if (kind == 'u' && size == 1) h.dtype = DType::kUInt8;
  else if (kind == 'b' && size == 1) h.dtype = DType::kBool;
  else if (kind == 'U' && size >= 0 && size < (1L << 20)) {
    h.dtype = DType::kUnicode;
    h.unicode_chars = size;
  } else {
    throw InputError(where + ": unsupported dtype '" + descr + "'", hint);
  }
  h.item_bytes = h.dtype == DType::kUnicode ? 4 * static_cast<std::size_t>(h.unicode_chars)
                                            : dtype_item_bytes(h.dtype);
}

std::vector<int64_t> parse_shape(const std::string& text, const std::string& where) {
  std::vector<int64_t> shape;
  std::string inner = text.substr(1, text.size() - 2);
  std::stringstream ss(inner);
  std::string item;
  while (std::getline(ss, item, ',')) {
    item.erase(std::remove(item.begin(), item.end(), ' '), item.end());
    if (item.empty()) continue;
    if (item.back() == 'L') item.pop_back();  // Python 2 longs
    if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos || item.size() > 18)
      throw InputError(where + ": invalid shape " + text + " in .npy header");
    shape.push_back(std::stoll(item));
  }
  if (shape.size() > 32) throw InputError(where + ": shape " + text + " has too many dimensions");
  return shape;
}

// Element count with overflow detection (returns false on overflow).
bool checked_numel(const std::vector<int64_t>& shape, std::size_t item_bytes, std::size_t& bytes) {
  unsigned __int128 total = item_bytes;
  for (int64_t d : shape) {
    total *= static_cast<uint64_t>(d);
    if (total > std::numeric_limits<int64_t>::max()) return false;
  }
  bytes = static_cast<std::size_t>(total);
  return true;
}

void byteswap_elements(std::vector<uint8_t>& bytes, std::size_t unit) {
  if (unit <= 1) return;
  for (std::size_t i = 0; i + unit <= bytes.size(); i += unit) std::reverse(&bytes[i], &bytes[i] + unit);
}

// Fortran-order payload -> C order.
std::vector<uint8_t> fortran_to_c(const std::vector<uint8_t>& src, const std::vector<int64_t>& shape,
                                  std::size_t item) {
  std::vector<uint8_t> dst(src.size());
  const std::size_t ndim = shape.size();
  const std::size_t numel = item ? src.size() / item : 0;
  std::vector<int64_t> f_stride(ndim, 1);
  for (std::size_t d = 1; d < ndim; ++d) f_stride[d] = f_stride[d - 1] * shape[d - 1];
  std::vector<int64_t> index(ndim, 0);
  for (std::size_t c = 0; c < numel; ++c) {
    int64_t f = 0;
    for (std::size_t d = 0; d < ndim; ++d) f += index[d] * f_stride[d];
    std::memcpy(&dst[c * item], &src[static_cast<std::size_t>(f) * item], item);
    for (std::size_t d = ndim; d-- > 0;) {  // advance C index (last dim fastest)
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
  return dst;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    s += std::to_string(shape[i]);
    if (shape.size() == 1 || i + 1 < shape.size()) s += ",";
    if (i + 1 < shape.size()) s += " ";
  }
  return s + ")";
}

std::string descr_text(const NpyArray& a) {
  switch (a.dtype) {
    case DType::kFloat64: return "<f8";
    case DType::kFloat32: return "<f4";
    case DType::kFloat16: return "<f2";
    case DType::kInt64: return "<i8";
    case DType::kInt32: return "<i4";
    case DType::kUInt8: return "|u1";
    case DType::kBool: return "|b1";
    case DType::kUnicode: return "<U" + std::to_string(a.unicode_chars);
  }
  return "";
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::vector<uint32_t> utf8_to_codepoints(const std::string& s) {
  std::vector<uint32_t> cps;
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    int extra = c < 0x80 ? 0 : (c >> 5) == 0x6 ? 1 : (c >> 4) == 0xE ? 2 : (c >> 3) == 0x1E ? 3 : -1;
    if (extra < 0 || i + static_cast<std::size_t>(extra) >= s.size() + (extra == 0 ? 1 : 0))
      throw InputError("invalid UTF-8 in string '" + s + "'");
    uint32_t cp = extra == 0 ? c : c & (0x3F >> extra);
    for (int k = 1; k <= extra; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    cps.push_back(cp);
    i += extra + 1;
  }
  return cps;
}

}  // namespace

std::string dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kFloat64: return "float64";
    case DType::kFloat32: return "float32";
    case DType::kFloat16: return "float16";
    case DType::kInt64: return "int64";
    case DType::kInt32: return "int32";
    case DType::kUInt8: return "uint8";
    case DType::kBool: return "bool";
    case DType::kUnicode: return "unicode";
  }
  return "?";
}

float half_to_float(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1F;
  uint32_t mant = h & 0x3FF;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      exp = 127 - 15 + 1;
      while ((mant & 0x400) == 0) { mant <<= 1; --exp; }
      bits = sign | (exp << 23) | ((mant & 0x3FF) << 13);
    }
  } else if (exp == 0x1F) {
    bits = sign | 0x7F800000u | (mant << 13);
  } else {
    bits = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t abs = x & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u) return sign | 0x7C00 | (abs > 0x7F800000u ? 0x200 : 0);  // inf / nan
  if (abs >= 0x477FF000u) return sign | 0x7C00;  // overflow to inf (>= 65520)
  if (abs < 0x38800000u) {                       // subnormal or zero in half
    if (abs < 0x33000000u) return sign;
    const uint32_t mant = (abs & 0x7FFFFF) | 0x800000;
    const int shift = 126 - static_cast<int>(abs >> 23);  // 14..24
    uint32_t half_mant = mant >> (shift);
    const uint32_t rem = mant & ((1u << shift) - 1), halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half_mant & 1))) ++half_mant;
    return sign | static_cast<uint16_t>(half_mant);
  }
  uint32_t h = ((abs >> 23) - 127 + 15) << 10 | ((abs >> 13) & 0x3FF);
  const uint32_t rem = abs & 0x1FFF;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;
  return sign | static_cast<uint16_t>(h);
}

int64_t NpyArray::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::size_t NpyArray::itemsize() const {
  return dtype == DType::kUnicode ? 4 * static_cast<std::size_t>(unicode_chars) : dtype_item_bytes(dtype);
}

std::vector<double> NpyArray::to_doubles() const {
  if (dtype == DType::kUnicode) throw InputError("a unicode array cannot be read as numbers");
  const int64_t n = numel();
  std::vector<double> out(static_cast<std::size_t>(n));
  const uint8_t* p = bytes.data();
  for (int64_t i = 0; i < n; ++i) {
    switch (dtype) {
      case DType::kFloat64: { double v; std::memcpy(&v, p + 8 * i, 8); out[i] = v; break; }
      case DType::kFloat32: { float v; std::memcpy(&v, p + 4 * i, 4); out[i] = v; break; }
      case DType::kFloat16: { uint16_t v; std::memcpy(&v, p + 2 * i, 2); out[i] = half_to_float(v); break; }
      case DType::kInt64: { int64_t v; std::memcpy(&v, p + 8 * i, 8); out[i] = static_cast<double>(v); break; }
      case DType::kInt32: { int32_t v; std::memcpy(&v, p + 4 * i, 4); out[i] = v; break; }
      case DType::kUInt8: out[i] = p[i]; break;
      case DType::kBool: out[i] = p[i] ? 1.0 : 0.0; break;
      case DType::kUnicode: break;
    }
  }
  return out;
}

std::vector<std::string> NpyArray::to_strings() const {
  if (dtype != DType::kUnicode) {
    if (numel() == 0) return {};
    throw InputError("expected a unicode string array, found " + dtype_name(dtype));
  }
  std::vector<std::string> out;
  const int64_t n = numel();
  for (int64_t i = 0; i < n; ++i) {
    std::string s;
    const uint8_t* e = bytes.data() + static_cast<std::size_t>(i) * itemsize();
    int64_t len = unicode_chars;
    auto cp_at = [e](int64_t k) { uint32_t cp; std::memcpy(&cp, e + 4 * k, 4); return cp; };
    while (len > 0 && cp_at(len - 1) == 0) --len;
    for (int64_t k = 0; k < len; ++k) append_utf8(s, cp_at(k));
    out.push_back(std::move(s));
  }
  return out;
}

NpyArray NpyArray::from_bytes(DType dtype, std::vector<int64_t> shape, const void* data, std::size_t size_bytes) {
  NpyArray a;
  a.dtype = dtype;
  a.shape = std::move(shape);
  const auto* p = static_cast<const uint8_t*>(data);
  a.bytes.assign(p, p + size_bytes);
  if (static_cast<std::size_t>(a.numel()) * a.itemsize() != size_bytes)
    throw std::logic_error("NpyArray::from_bytes: size does not match shape");
  return a;
}

NpyArray NpyArray::from_doubles(std::vector<int64_t> shape, const std::vector<double>& values) {
  return from_bytes(DType::kFloat64, std::move(shape), values.data(), values.size() * 8);
}

NpyArray NpyArray::from_floats(std::vector<int64_t> shape, const std::vector<float>& values) {
  return from_bytes(DType::kFloat32, std::move(shape), values.data(), values.size() * 4);
}

NpyArray NpyArray::from_int64(std::vector<int64_t> shape, const std::vector<int64_t>& values) {
  return from_bytes(DType::kInt64, std::move(shape), values.data(), values.size() * 8);
}

NpyArray NpyArray::from_strings(const std::vector<std::string>& values) {
  std::vector<std::vector<uint32_t>> cps;
  std::size_t width = 1;  // NumPy's minimum for an all-empty array is <U1
  for (const auto& v : values) {
    cps.push_back(utf8_to_codepoints(v));
    width = std::max(width, cps.back().size());
  }
  NpyArray a;
  a.dtype = DType::kUnicode;
  a.unicode_chars = static_cast<int64_t>(width);
  a.shape = {static_cast<int64_t>(values.size())};
  a.bytes.assign(values.size() * width * 4, 0);
  for (std::size_t i = 0; i < cps.size(); ++i)
    if (!cps[i].empty())  // memcpy from an empty vector's null data() is undefined, even for 0 bytes
      std::memcpy(&a.bytes[i * width * 4], cps[i].data(), cps[i].size() * 4);
  return a;
}

NpyHeader parse_npy_header(const uint8_t* bytes, std::size_t size, const std::string& where) {
  if (size < kMagicBytes + 4 || std::memcmp(bytes, kMagic, kMagicBytes) != 0)
    throw InputError(where + ": not a NumPy .npy array (bad magic bytes)", "write it with numpy.save");
  const int major = bytes[6];
  std::size_t len_bytes = major == 1 ? 2 : (major == 2 || major == 3) ? 4 : 0;
  if (len_bytes == 0) throw InputError(where + ": unsupported .npy format version " + std::to_string(major));
  std::size_t header_len = bytes[8] | (bytes[9] << 8);
  if (len_bytes == 4) {
    if (size < 12) throw InputError(where + ": truncated .npy header");
    header_len = static_cast<std::size_t>(bytes[8]) | (static_cast<std::size_t>(bytes[9]) << 8) |
                 (static_cast<std::size_t>(bytes[10]) << 16) | (static_cast<std::size_t>(bytes[11]) << 24);
  }
  NpyHeader h;
  h.header_bytes = 8 + len_bytes + header_len;
  if (header_len > kMaxHeaderBytes) throw InputError(where + ": .npy header is implausibly long");
  if (h.header_bytes > size) throw InputError(where + ": truncated .npy header");
  const std::string header(reinterpret_cast<const char*>(bytes + 8 + len_bytes), header_len);
  parse_descr(dict_value(header, "descr", where), h, where);
  const std::string fortran = dict_value(header, "fortran_order", where);
  if (fortran != "True" && fortran != "False") throw InputError(where + ": malformed fortran_order in .npy header");
  h.fortran_order = fortran == "True";
  const std::string shape = dict_value(header, "shape", where);
  if (shape.empty() || shape.front() != '(') throw InputError(where + ": malformed shape in .npy header");
  h.shape = parse_shape(shape, where);
  if (!checked_numel(h.shape, h.item_bytes, h.payload_bytes))
    throw InputError(where + ": shape " + shape + " overflows", "the header is corrupt or malicious");
  return h;
}

NpyArray parse_npy(const uint8_t* bytes, std::size_t size, const std::string& where) {
  const NpyHeader h = parse_npy_header(bytes, size, where);
  const std::size_t available = size - h.header_bytes;
  if (h.payload_bytes > available)
    throw InputError(where + ": header announces " + std::to_string(h.payload_bytes) + " bytes but only " +
                         std::to_string(available) + " follow",
                     "the file is truncated or its header is corrupt");
  NpyArray a;
  a.dtype = h.dtype;
  a.shape = h.shape;
  a.unicode_chars = h.unicode_chars;
  a.was_fortran_order = h.fortran_order;
  a.bytes.assign(bytes + h.header_bytes, bytes + h.header_bytes + h.payload_bytes);
  if (h.big_endian) byteswap_elements(a.bytes, h.dtype == DType::kUnicode ? 4 : h.item_bytes);
  if (h.fortran_order && a.shape.size() > 1) a.bytes = fortran_to_c(a.bytes, a.shape, h.item_bytes);
  return a;
}

std::vector<uint8_t> serialize_npy(const NpyArray& a) {
  std::string dict = "{'descr': '" + descr_text(a) + "', 'fortran_order': False, 'shape': " + shape_text(a.shape) + ", }";
  // Pad with spaces so magic + length + dict + '\n' is a multiple of 64, as NumPy does.
  const bool v2 = dict.size() + 11 > 65535;
  const std::size_t prefix = v2 ? 12 : 10;
  const std::size_t total = ((prefix + dict.size() + 1 + 63) / 64) * 64;
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict += '\n';
  std::vector<uint8_t> out(kMagic, kMagic + kMagicBytes);
  out.push_back(v2 ? 2 : 1);
  out.push_back(0);
  const std::size_t n = dict.size();
  out.push_back(n & 0xFF);
  out.push_back((n >> 8) & 0xFF);
  if (v2) { out.push_back((n >> 16) & 0xFF); out.push_back((n >> 24) & 0xFF); }
  out.insert(out.end(), dict.begin(), dict.end());
  out.insert(out.end(), a.bytes.begin(), a.bytes.end());
  return out;
}

NpyArray read_npy(const std::string& path) {
  if (!std::filesystem::exists(path)) throw InputError(path + ": no such file", "check the path");
  check_input_file(path, ".npy file");  // a folder: a stream would throw reading it
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open for reading", "check the permissions");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse_npy(bytes.data(), bytes.size(), path);
}

void write_npy(const std::string& path, const NpyArray& array) {
  write_file_atomic(path, serialize_npy(array));
}

}  // namespace balerbench
