// test_npy.cpp: .npy parsing and writing, byte-level.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "common/error.h"
#include "datasets/npy.h"

namespace balerbench {
namespace {

std::vector<uint8_t> npy_image(const std::string& dict, const std::vector<uint8_t>& payload, int version = 1) {
  std::string h = dict;
  const std::size_t prefix = version == 1 ? 10 : 12;
  while ((prefix + h.size() + 1) % 64) h += ' ';
  h += '\n';
  std::vector<uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<uint8_t>(version), 0};
  out.push_back(h.size() & 0xFF);
  out.push_back((h.size() >> 8) & 0xFF);
  if (version != 1) { out.push_back(0); out.push_back(0); }
  out.insert(out.end(), h.begin(), h.end());
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

template <typename T>
std::vector<uint8_t> bytes_of(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

TEST(Npy, RoundTripsEveryDtype) {
  const std::vector<double> d = {1.5, -2.25, 3.0, 1e300, -0.0, 7.0};
  NpyArray a = NpyArray::from_doubles({2, 3}, d);
  NpyArray b = parse_npy(serialize_npy(a).data(), serialize_npy(a).size(), "mem");
  EXPECT_EQ(b.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(b.to_doubles(), d);
  NpyArray f = NpyArray::from_floats({3}, {1.f, 2.5f, -3.f});
  auto img = serialize_npy(f);
  EXPECT_EQ(parse_npy(img.data(), img.size(), "mem").to_doubles(), (std::vector<double>{1, 2.5, -3}));
  NpyArray i = NpyArray::from_int64({2}, {-5, 1LL << 40});
  img = serialize_npy(i);
  EXPECT_EQ(parse_npy(img.data(), img.size(), "mem").to_doubles(), (std::vector<double>{-5, 1099511627776.0}));
}

TEST(Npy, HeaderIsPaddedTo64BytesLikeNumpy) {
  auto img = serialize_npy(NpyArray::from_doubles({1}, {1.0}));
  const std::size_t header = 10 + (img[8] | (img[9] << 8));
  EXPECT_EQ(header % 64, 0u);
  EXPECT_EQ(img[header - 1], '\n');
  const std::string dict(img.begin() + 10, img.begin() + header);
  EXPECT_NE(dict.find("'descr': '<f8', 'fortran_order': False, 'shape': (1,), }"), std::string::npos);
}

TEST(Npy, ReadsInt32BoolFloat16AndUint8) {
  auto i32 = npy_image("{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }", bytes_of<int32_t>({-1, 0, 7}));
  EXPECT_EQ(parse_npy(i32.data(), i32.size(), "m").to_doubles(), (std::vector<double>{-1, 0, 7}));
  auto b = npy_image("{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }", {1, 0});
  EXPECT_EQ(parse_npy(b.data(), b.size(), "m").to_doubles(), (std::vector<double>{1, 0}));
  // float16: 1.0 = 0x3C00, -2.0 = 0xC000, 65504 = 0x7BFF, smallest subnormal 0x0001
  auto h = npy_image("{'descr': '<f2', 'fortran_order': False, 'shape': (4,), }",
                     bytes_of<uint16_t>({0x3C00, 0xC000, 0x7BFF, 0x0001}));
  EXPECT_EQ(parse_npy(h.data(), h.size(), "m").to_doubles(),
            (std::vector<double>{1.0, -2.0, 65504.0, 5.960464477539063e-08}));
}

TEST(Npy, HalfConversionRoundsToNearestEven) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const auto h = static_cast<uint16_t>(bits);
    const float f = half_to_float(h);
    if (std::isnan(f)) continue;
    EXPECT_EQ(float_to_half(f), h) << bits;
  }
  EXPECT_EQ(float_to_half(1.0f + 1.0f / 2048), 0x3C00);  // halfway, rounds to even
  EXPECT_EQ(float_to_half(1e6f), 0x7C00);                 // overflow -> inf
}

TEST(Npy, FortranOrderIsTransposedToC) {
  // numpy.asfortranarray([[1,2,3],[4,5,6]]) stores 1,4,2,5,3,6
  auto img = npy_image("{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }",
                       bytes_of<double>({1, 4, 2, 5, 3, 6}));
  NpyArray a = parse_npy(img.data(), img.size(), "m");
  EXPECT_TRUE(a.was_fortran_order);
  EXPECT_EQ(a.to_doubles(), (std::vector<double>{1, 2, 3, 4, 5, 6}));
}

TEST(Npy, FortranOrder3D) {
  // shape (2,2,2): C value at (i,j,k) = 4i+2j+k; Fortran offset = i + 2j + 4k
  std::vector<double> f(8);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 2; ++k) f[i + 2 * j + 4 * k] = 4 * i + 2 * j + k;
  auto img = npy_image("{'descr': '<f8', 'fortran_order': True, 'shape': (2, 2, 2), }", bytes_of(f));
  EXPECT_EQ(parse_npy(img.data(), img.size(), "m").to_doubles(), (std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(Npy, BigEndianIsConverted) {
  std::vector<uint8_t> be = {0x3F, 0xF0, 0, 0, 0, 0, 0, 0, 0xC0, 0, 0, 0, 0, 0, 0, 0};  // 1.0, -2.0
  auto img = npy_image("{'descr': '>f8', 'fortran_order': False, 'shape': (2,), }", be);
  EXPECT_EQ(parse_npy(img.data(), img.size(), "m").to_doubles(), (std::vector<double>{1.0, -2.0}));
  std::vector<uint8_t> bei = {0, 0, 0, 5, 0xFF, 0xFF, 0xFF, 0xFE};  // 5, -2
  img = npy_image("{'descr': '>i4', 'fortran_order': False, 'shape': (2,), }", bei);
  EXPECT_EQ(parse_npy(img.data(), img.size(), "m").to_doubles(), (std::vector<double>{5, -2}));
}

TEST(Npy, UnicodeStringsRoundTripWithUtf8) {
  const std::vector<std::string> names = {"pt_", "eta_", "", "\xce\xbc\xce\xbd"};  // "μν"
  NpyArray a = NpyArray::from_strings(names);
  EXPECT_EQ(a.unicode_chars, 4);
  auto img = serialize_npy(a);
  EXPECT_NE(std::string(img.begin(), img.begin() + 64).find("'<U4'"), std::string::npos);
  EXPECT_EQ(parse_npy(img.data(), img.size(), "m").to_strings(), names);
}

TEST(Npy, EmptyFloatNamesReadAsNoNames) {
  auto img = serialize_npy(NpyArray::from_doubles({0}, {}));
  EXPECT_TRUE(parse_npy(img.data(), img.size(), "m").to_strings().empty());
}

TEST(Npy, Version2And3HeadersAreRead) {
  for (int v : {2, 3}) {
    auto img = npy_image("{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", bytes_of<double>({4.5}), v);
    EXPECT_EQ(parse_npy(img.data(), img.size(), "m").to_doubles(), (std::vector<double>{4.5}));
  }
}

void expect_error(const std::vector<uint8_t>& img, const std::string& fragment) {
  try {
    parse_npy(img.data(), img.size(), "file.npz:data");
    FAIL() << "expected an error containing '" << fragment << "'";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("file.npz:data"), std::string::npos) << e.what();
  }
}

TEST(Npy, MaliciousShapeIsAnErrorNotAnAllocation) {
  // Announces 10^12 doubles with 16 bytes of payload.
  expect_error(npy_image("{'descr': '<f8', 'fortran_order': False, 'shape': (1000000, 1000000), }",
                         bytes_of<double>({1, 2})),
               "announces");
  // Overflowing product.
  expect_error(npy_image("{'descr': '<f8', 'fortran_order': False, 'shape': (999999999999999999, 999999999999), }", {}),
               "overflows");
  expect_error(npy_image("{'descr': '<f8', 'fortran_order': False, 'shape': (-3,), }", {}), "invalid shape");
}

TEST(Npy, RejectsUnsupportedAndMalformed) {
  expect_error(npy_image("{'descr': '<c16', 'fortran_order': False, 'shape': (1,), }", std::vector<uint8_t>(16)),
               "unsupported dtype");
  expect_error(npy_image("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", std::vector<uint8_t>(8)),
               "unsupported dtype");
  expect_error(npy_image("{'descr': [('a', '<f8')], 'fortran_order': False, 'shape': (1,), }", {}), "structured");
  expect_error({'P', 'K', 3, 4, 0, 0, 0, 0, 0, 0, 0}, "bad magic");
  auto truncated = npy_image("{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", {});
  truncated.resize(30);
  expect_error(truncated, "truncated");
}

}  // namespace
}  // namespace balerbench
