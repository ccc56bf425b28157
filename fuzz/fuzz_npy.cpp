// fuzz_npy.cpp: the .npy header and array reader on arbitrary bytes. Bad input must be an
// InputError (what, where, a hint); anything else (a crash, a sanitizer report, another exception)
// is a finding.
#include <cstddef>
#include <cstdint>

#include "common/error.h"
#include "datasets/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const balerbench::NpyArray a = balerbench::parse_npy(data, size, "fuzz.npy");
    // A parsed array must serialize and parse back to the same bytes.
    const std::vector<uint8_t> again = balerbench::serialize_npy(a);
    const balerbench::NpyArray b = balerbench::parse_npy(again.data(), again.size(), "again.npy");
    if (b.shape != a.shape || b.bytes != a.bytes || b.dtype != a.dtype) __builtin_trap();
  } catch (const balerbench::InputError&) {
  }
  return 0;
}
