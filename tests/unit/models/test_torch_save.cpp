// test_torch_save.cpp: torch.save's state-dict file, written and read in C++ (models/torch_save.h).
// PyTorch's side (torch.load with weights_only=True, and files torch.save wrote) is tested against
// Debian's python3-torch in tests/integration/test_baler_interop.cpp.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <caffe2/serialize/inline_container.h>
#include <torch/serialize.h>

#include <fstream>

#include "models/autoencoder.h"
#include "models/torch_save.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

using namespace std::string_literals;

void write_bytes(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A zip as torch.save writes it, around a hand-written data.pkl (and a storage record data/0).
void write_archive(const std::string& path, const std::string& pickle, const std::string& storage0 = "") {
  std::vector<char> out;
  caffe2::serialize::PyTorchStreamWriter w([&out](const void* d, size_t n) {
    out.insert(out.end(), static_cast<const char*>(d), static_cast<const char*>(d) + n);
    return n;
  });
  w.writeRecord("data.pkl", pickle.data(), pickle.size());
  if (!storage0.empty()) w.writeRecord("data/0", storage0.data(), storage0.size());
  w.writeEndOfFile();
  write_bytes(path, out);
}

TEST(TorchSave, RoundTripKeepsOrderDtypesShapesAndValues) {
  TempDir dir;
  at::manual_seed(1);
  const StateDictEntries in = {{"en1.weight", at::randn({3, 4}, at::kDouble)},
                               {"en1.bias", at::randn({3}, at::kFloat)},
                               {"bn.num_batches_tracked", at::tensor(7, at::kLong)},  // 0-d
                               {"half", at::randn({2, 2}).to(at::kHalf)},
                               {"empty", at::empty({0, 5}, at::kDouble)},
                               {"big", at::arange(70000, at::kDouble)},  // sizes past BININT2
                               {"transposed", at::randn({4, 3}, at::kDouble).t()}};  // written contiguous
  write_bytes(dir.path("m.pt"), torch_save_bytes(in));
  const StateDictEntries out = read_torch_state_dict(dir.path("m.pt"));
  ASSERT_EQ(out.size(), in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(out[i].first, in[i].first);
    EXPECT_EQ(out[i].second.scalar_type(), in[i].second.scalar_type()) << in[i].first;
    EXPECT_EQ(out[i].second.sizes(), in[i].second.sizes()) << in[i].first;
    EXPECT_TRUE(at::equal(out[i].second, in[i].second)) << in[i].first;
  }
}

TEST(TorchSave, ReadsLibTorchPickleSaveFilesOfEarlierVersions) {
  TempDir dir;
  c10::Dict<std::string, at::Tensor> dict;
  dict.insert("en1.weight", at::ones({2, 3}, at::kDouble));
  dict.insert("en1.bias", at::zeros({2}, at::kDouble));
  write_bytes(dir.path("old.pt"), torch::pickle_save(dict));
  const StateDictEntries out = read_torch_state_dict(dir.path("old.pt"));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].first, "en1.weight");
  EXPECT_TRUE(at::equal(out[0].second, at::ones({2, 3}, at::kDouble)));
}

TEST(TorchSave, SaveStateDictWritesTheModelsOrderAndTheAskedDtype) {
  TempDir dir;
  auto m = make_model("AE", 24, 15);
  save_state_dict(*m, dir.path("m.pt"), at::kFloat);
  const StateDictEntries out = read_torch_state_dict(dir.path("m.pt"));
  ASSERT_EQ(out.size(), 16u);
  EXPECT_EQ(out.front().first, "en1.weight");
  EXPECT_EQ(out.back().first, "de4.bias");  // Baler's decompress reads n_features from the last entry
  for (const auto& [k, t] : out) EXPECT_EQ(t.scalar_type(), at::kFloat) << k;
}

TEST(TorchSave, AnyOtherGlobalIsRefusedNotRun) {
  TempDir dir;
  // pickle: GLOBAL os.system, ('true',), REDUCE, STOP
  write_archive(dir.path("evil.pt"), "\x80\x02"s + "cos\nsystem\nX\x04\0\0\0true\x85R."s);
  expect_input_error([&] { read_torch_state_dict(dir.path("evil.pt")); }, "names the Python global os.system");
}

TEST(TorchSave, DamagedFilesAreInputErrors) {
  TempDir dir;
  write_text(dir.path("junk.pt"), "not a zip");
  expect_input_error([&] { read_torch_state_dict(dir.path("junk.pt")); }, "not a readable model file");
  write_archive(dir.path("cut.pt"), "\x80\x02"s + "ccollections\nOrderedDict\n)R(X\x10\0\0\0en1"s);
  expect_input_error([&] { read_torch_state_dict(dir.path("cut.pt")); }, "data.pkl ends early");
  write_archive(dir.path("list.pt"), "\x80\x02]."s);  // a list, not a dict
  expect_input_error([&] { read_torch_state_dict(dir.path("list.pt")); }, "does not hold a state dict");
  // A storage whose record is missing.
  write_archive(dir.path("nostorage.pt"),
                "\x80\x02"s + "ccollections\nOrderedDict\n)R(X\x01\0\0\0a"s +
                    "ctorch._utils\n_rebuild_tensor_v2\n((X\x07\0\0\0storagectorch\nFloatStorage\nX\x01\0\0\0"s +
                    "0X\x03\0\0\0cpuK\x02tQK\0K\x02\x85K\x01\x85\x89)tRu."s);
  expect_input_error([&] { read_torch_state_dict(dir.path("nostorage.pt")); }, "no record data/0");
  // One float tensor 'a' over storage 0 (2 floats) with the given size and stride tuples.
  auto one_tensor = [](const std::string& size, const std::string& stride) {
    return "\x80\x02"s + "ccollections\nOrderedDict\n)R(X\x01\0\0\0a"s +
           "ctorch._utils\n_rebuild_tensor_v2\n((X\x07\0\0\0storagectorch\nFloatStorage\nX\x01\0\0\0"s +
           "0X\x03\0\0\0cpuK\x02tQK\0"s + size + stride + "\x89)tRu."s;
  };
  const std::string two_floats(8, '\0');
  write_archive(dir.path("ok.pt"), one_tensor("K\x02\x85"s, "K\x01\x85"s), two_floats);
  EXPECT_EQ(read_torch_state_dict(dir.path("ok.pt")).at(0).second.sizes(), (std::vector<int64_t>{2}));
  write_archive(dir.path("large.pt"), one_tensor("K\x03\x85"s, "K\x01\x85"s), two_floats);
  expect_input_error([&] { read_torch_state_dict(dir.path("large.pt")); }, "a tensor larger than its storage");
  write_archive(dir.path("past.pt"), one_tensor("K\x02\x85"s, "K\x02\x85"s), two_floats);
  expect_input_error([&] { read_torch_state_dict(dir.path("past.pt")); }, "a tensor reaching past its storage");
  // A stride of 2^62 (LONG1): refused before any product could overflow.
  write_archive(dir.path("huge.pt"), one_tensor("K\x02\x85"s, "\x8a\x08\0\0\0\0\0\0\0\x40\x85"s), two_floats);
  expect_input_error([&] { read_torch_state_dict(dir.path("huge.pt")); }, "a tensor reaching past its storage");
  write_archive(dir.path("short.pt"), one_tensor("K\x02\x85"s, "K\x01\x85"s), "abc");
  expect_input_error([&] { read_torch_state_dict(dir.path("short.pt")); }, "storage 0 holds 3 bytes");
}

}  // namespace
}  // namespace balerbench
