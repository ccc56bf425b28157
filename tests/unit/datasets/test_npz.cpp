// test_npz.cpp: .npz archives through libzip: stored and deflated members,
// corrupt and hostile archives.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "datasets/npz.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

namespace fs = std::filesystem;

std::vector<std::pair<std::string, NpyArray>> sample_members() {
  std::vector<double> v(1000);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i % 17) * 0.5;
  return {{"data", NpyArray::from_doubles({100, 10}, v)}, {"names", NpyArray::from_strings({"a", "bb"})}};
}

TEST(Npz, StoredAndDeflatedRoundTrip) {
  TempDir dir;
  for (bool deflate : {false, true}) {
    const std::string p = dir.path("x.npz");
    write_npz(p, sample_members(), deflate);
    NpzMembers m = read_npz(p);
    ASSERT_EQ(m.size(), 2u);
    EXPECT_EQ(m.at("data").shape, (std::vector<int64_t>{100, 10}));
    EXPECT_EQ(m.at("data").to_doubles(), sample_members()[0].second.to_doubles());
    EXPECT_EQ(m.at("names").to_strings(), (std::vector<std::string>{"a", "bb"}));
  }
  // Deflated is smaller for this repetitive payload.
  write_npz(dir.path("s.npz"), sample_members(), false);
  write_npz(dir.path("d.npz"), sample_members(), true);
  EXPECT_LT(fs::file_size(dir.path("d.npz")), fs::file_size(dir.path("s.npz")) / 2);
}

// The in-memory reader (what the fuzzer drives) reads what the file reader reads, and a truncated
// archive is an InputError naming it.
TEST(Npz, ParseFromMemoryEqualsReadFromFile) {
  TempDir dir;
  for (bool deflate : {false, true}) {
    const std::string p = dir.path("m.npz");
    write_npz(p, sample_members(), deflate);
    std::ifstream in(p, std::ios::binary);
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const NpzMembers m = parse_npz(bytes.data(), bytes.size(), "memory.npz");
    ASSERT_EQ(m.size(), 2u);
    EXPECT_EQ(m.at("data").bytes, read_npz(p).at("data").bytes);
    EXPECT_EQ(m.at("names").to_strings(), (std::vector<std::string>{"a", "bb"}));
    try {
      parse_npz(bytes.data(), bytes.size() / 2, "half.npz");
      ADD_FAILURE() << "a truncated archive was read";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("half.npz: the .npz archive is truncated or damaged"), std::string::npos)
          << e.what();
    }
  }
}

TEST(Npz, WriteLeavesNoTemporaryFiles) {
  TempDir dir;
  write_npz(dir.path("x.npz"), sample_members());
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir.root())) { (void)e; ++files; }
  EXPECT_EQ(files, 1);
}

TEST(Npz, Errors) {
  TempDir dir;
  expect_input_error([&] { read_npz(dir.path("missing.npz")); }, "no such file");
  write_text(dir.path("text.npz"), "this is not a zip archive at all, just text\n");
  expect_input_error([&] { read_npz(dir.path("text.npz")); }, "not a zip");
  write_npz(dir.path("x.npz"), sample_members());
  const auto size = fs::file_size(dir.path("x.npz"));
  fs::copy_file(dir.path("x.npz"), dir.path("t.npz"));
  fs::resize_file(dir.path("t.npz"), size / 2);
  // A zip cut short has lost its end record: truncated, not "not a zip archive".
  expect_input_error([&] { read_npz(dir.path("t.npz")); }, "t.npz: the .npz archive is truncated or damaged");
  expect_input_error([&] { read_npz(dir.path("t.npz")); }, "hint: write or copy the file again");
  fs::resize_file(dir.path("t.npz"), size - 1);
  expect_input_error([&] { read_npz(dir.path("t.npz")); }, "t.npz: the .npz archive is truncated or damaged");
}

TEST(Npz, MemberWhoseHeaderOverstatesItsSizeIsRejected) {
  TempDir dir;
  // An .npy member claiming (10^9, 10^3) doubles but holding 8 bytes.
  std::vector<uint8_t> img = serialize_npy(NpyArray::from_doubles({1}, {1.0}));
  std::string h(img.begin(), img.end());
  const auto pos = h.find("(1,)");
  ASSERT_NE(pos, std::string::npos);
  h.replace(pos, 4, "(1000000000, 1000)");  // same padding length does not matter for parsing
  std::vector<uint8_t> bad(h.begin(), h.end());
  bad[8] = static_cast<uint8_t>((bad[8] + 14) & 0xFF);  // header length grew by 14 characters
  // Store the hostile image verbatim as a member.
  const std::string p = dir.path("evil.npz");
  write_raw_member_npz(p, "data.npy", bad);
  expect_input_error([&] { read_npz(p); }, "announces");
}

}  // namespace
}  // namespace balerbench
