// synthetic.h: seeded stand-ins for Baler's data (docs/baler.md, Baler's data and the stand-ins).
//
// CMS-like: one row per particle-flow jet, the 24 columns of Baler's CMS
// example in order, physics priors of the PF-jet definitions, integer
// multiplicity columns, sorted by pT ascending as Baler's preprocessing did.
// CFD-like: (N, H, W) frames of a smooth velocity field around an obstacle
// with slow time evolution. Same seed, same bytes, on every machine (the
// generators use only std::mt19937_64 and hand-written distributions).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace balerbench {

struct SyntheticData {
  std::vector<int64_t> shape;        // (N, 24) or (N, H, W)
  std::vector<double> values;        // row-major
  std::vector<std::string> names;    // empty for frames
};

const std::vector<std::string>& cms_column_names();
// Baler's CMS type_list: "float64" or "int" per column.
const std::vector<std::string>& cms_type_list();

// InputError, before anything is allocated, when `copies` float64 copies of the values of `rows` rows
// or frames of the generator `kind` (generator_registry.h: "cms", 24 columns; "cfd", height x width)
// need more memory than this machine has (counted in long double: no product overflows). `who`
// starts the message.
void check_synthetic_memory(const std::string& who, const std::string& kind, int64_t rows, int64_t height,
                            int64_t width, int copies);

SyntheticData generate_cms_like(int64_t rows, uint64_t seed);
SyntheticData generate_cfd_like(int64_t frames, int64_t height, int64_t width, uint64_t seed);

}  // namespace balerbench
