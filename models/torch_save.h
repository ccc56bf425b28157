// torch_save.h: the file torch.save(model.state_dict()) writes, written and read without Python.
//
// The file is a zip (written by LibTorch's PyTorchStreamWriter, as torch.save's is) holding
//   <archive>/data.pkl   the state dict pickled at protocol 2: an OrderedDict of name -> tensor, each
//                        tensor torch._utils._rebuild_tensor_v2(storage, offset, size, stride, ...)
//                        and each storage a persistent id ("storage", torch.<Type>Storage, key,
//                        location, numel)
//   <archive>/data/<key> each storage's bytes, little-endian
//   <archive>/version    "3"
// What is written loads with torch.load(path, weights_only=True), PyTorch >= 2.6's default, as a
// collections.OrderedDict in the model's order (Baler takes n_features from the last entry).
//
// The reader takes that subset of pickle and, like weights_only, allows only the globals above,
// nn.Parameter's rebuild, and torch.jit._pickle.restore_type_tag (the typed dict of LibTorch's
// torch::pickle_save, which earlier balerbench versions wrote). A file naming another global is an
// InputError naming it; nothing in it is executed. Storages saved on a GPU load to the CPU.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <utility>
#include <vector>

namespace balerbench {

using StateDictEntries = std::vector<std::pair<std::string, at::Tensor>>;

// The file's bytes for `entries` (CPU tensors of any dtype; written contiguous).
std::vector<char> torch_save_bytes(const StateDictEntries& entries);
// Reads a state dict from torch.save's file; InputError naming `path` for anything else.
StateDictEntries read_torch_state_dict(const std::string& path);

}  // namespace balerbench
