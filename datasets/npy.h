// npy.h: NumPy .npy arrays in memory, parsed and serialised byte-exact with
// numpy.save / numpy.load (format versions 1.0, 2.0 and 3.0).
//
// Arrays are held in C order and little-endian whatever the file had: Fortran
// order is transposed on load, big-endian data are byte-swapped. Headers are
// validated before anything is allocated: a shape whose byte count exceeds the
// bytes that follow the header is an error, never an allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace balerbench {

enum class DType { kFloat64, kFloat32, kFloat16, kInt64, kInt32, kUInt8, kBool, kUnicode };

// NumPy's name for the dtype ("float64", "<U12" is "unicode").
std::string dtype_name(DType dtype);

struct NpyArray {
  DType dtype = DType::kFloat64;
  std::vector<int64_t> shape;
  // Element bytes, C order, little-endian. Unicode: 4 bytes (UTF-32) per char.
  std::vector<uint8_t> bytes;
  int64_t unicode_chars = 0;      // characters per element for kUnicode
  bool was_fortran_order = false;  // how the file stored it (informational)

  int64_t numel() const;
  std::size_t itemsize() const;

  // Numeric arrays as double (float16 decoded exactly). Throws for unicode.
  std::vector<double> to_doubles() const;
  // Unicode arrays as UTF-8 strings (NumPy strips trailing NULs). An empty
  // numeric array (Baler's CFD files store names as float64 (0,)) gives {}.
  std::vector<std::string> to_strings() const;

  static NpyArray from_doubles(std::vector<int64_t> shape, const std::vector<double>& values);
  static NpyArray from_floats(std::vector<int64_t> shape, const std::vector<float>& values);
  static NpyArray from_int64(std::vector<int64_t> shape, const std::vector<int64_t>& values);
  static NpyArray from_strings(const std::vector<std::string>& values);
  // Raw constructor: bytes must already be C order, little-endian.
  static NpyArray from_bytes(DType dtype, std::vector<int64_t> shape, const void* data,
                             std::size_t size_bytes);
};

// Parses a whole .npy image. `where` names the source in error messages
// ("file.npz:data").
NpyArray parse_npy(const uint8_t* bytes, std::size_t size, const std::string& where);

// Parses only the header of an .npy image (the first `size` bytes of it).
struct NpyHeader {
  DType dtype = DType::kFloat64;
  std::vector<int64_t> shape;
  bool fortran_order = false;
  bool big_endian = false;
  std::size_t item_bytes = 0;
  int64_t unicode_chars = 0;
  std::size_t header_bytes = 0;   // magic + length field + dict
  std::size_t payload_bytes = 0;  // numel * item_bytes
};
NpyHeader parse_npy_header(const uint8_t* bytes, std::size_t size, const std::string& where);

std::vector<uint8_t> serialize_npy(const NpyArray& array);

NpyArray read_npy(const std::string& path);
// Written to a temporary name and renamed: a failure leaves no partial file.
void write_npy(const std::string& path, const NpyArray& array);

// IEEE half <-> float conversions (round to nearest even).
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);

}  // namespace balerbench
