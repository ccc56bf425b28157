// table_values.h: a table of CMS-like columns (very different scales, a constant column, a column of
// zeros), for the tests of the classical codecs and of the comparison with Baler.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace balerbench {


// rows x cols values: columns of very different scales and offsets (as CMS-like tables have), one
// constant column, one column of zeros; `as_float` rounds every value to float32.
inline std::vector<double> table_values(int64_t rows, int64_t cols, uint64_t seed, bool as_float) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> normal;
  std::vector<double> v(static_cast<std::size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      double x = std::pow(10.0, static_cast<double>(c % 7) - 3) * (normal(gen) + 0.3 * std::sin(0.01 * r)) + 5.0 * c;
      if (c == 1) x = 42.25;
      if (c == 2) x = 0;
      v[static_cast<std::size_t>(r * cols + c)] = as_float ? static_cast<float>(x) : x;
    }
  return v;
}

}  // namespace balerbench
