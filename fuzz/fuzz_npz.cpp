// fuzz_npz.cpp: the .npz (zip) reader on arbitrary bytes, in memory. Bad input must be an InputError.
#include <cstddef>
#include <cstdint>

#include "common/error.h"
#include "datasets/npz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    (void)balerbench::parse_npz(data, size, "fuzz.npz");
  } catch (const balerbench::InputError&) {
  }
  return 0;
}
