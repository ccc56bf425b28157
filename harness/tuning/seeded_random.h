// seeded_random.h: the random draws of the batch-size optimiser and of trace replay, from one seed.
// The engine is std::mt19937_64, whose output the C++ standard fixes; the draws made from it
// (uniform in [0, 1), an index below n, a normal value) are written out here rather than taken from
// <random>'s distributions, whose algorithms each standard library chooses. The same seed gives the
// same draws with any compiler and standard library (the normal value goes through the C library's
// log, sqrt and cos, correctly rounded on glibc).
#pragma once

#include <cstdint>
#include <random>

namespace balerbench {

class SeededRandom {
 public:
  explicit SeededRandom(uint64_t seed) : seed_(seed), engine_(seed) {}

  uint64_t seed() const { return seed_; }
  int64_t draws() const { return draws_; }  // raw 64-bit draws so far (recorded with the seed)

  // Uniform in [0, 1), 53 random bits.
  double uniform();
  // Uniform in [0, n) (n >= 1), without modulo bias (rejection).
  uint64_t below(uint64_t n);
  // Normal with this mean and standard deviation (Box-Muller, one value per call). sd == 0 gives the
  // mean without a draw.
  double normal(double mean, double sd);

 private:
  uint64_t next();
  uint64_t seed_;
  std::mt19937_64 engine_;
  int64_t draws_ = 0;
};

}  // namespace balerbench
