// seeded_random.cpp: see seeded_random.h.
#include "harness/tuning/seeded_random.h"

#include <cmath>
#include <limits>

namespace balerbench {

uint64_t SeededRandom::next() {
  ++draws_;
  return engine_();
}

double SeededRandom::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

uint64_t SeededRandom::below(uint64_t n) {
  if (n <= 1) return 0;
  // The largest multiple of n that fits: draws at or above it would favour the small values.
  const uint64_t limit = std::numeric_limits<uint64_t>::max() - std::numeric_limits<uint64_t>::max() % n;
  uint64_t x = next();
  while (x >= limit) x = next();
  return x % n;
}

double SeededRandom::normal(double mean, double sd) {
  if (!(sd > 0)) return mean;
  const double u1 = 1.0 - uniform();  // (0, 1]: the logarithm stays finite
  const double u2 = uniform();
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  return mean + sd * std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2);
}

}  // namespace balerbench
