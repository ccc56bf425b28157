// exact_floats.h: a scope in which this thread's float conversions keep subnormal numbers.
// A run flushes subnormals to zero on its threads (runtime.h, `flush_denormal`: the x86 MXCSR's
// FTZ and DAZ bits, which LibTorch sets per thread). A double -> float conversion in that state
// turns a subnormal float32 value into 0, so a lossless codec run in the same process would lose
// it. ExactSubnormals clears both bits for its lifetime and puts back what it found.
#pragma once

#if defined(__SSE2__)
#include <pmmintrin.h>
#include <xmmintrin.h>
#endif

namespace balerbench {

class ExactSubnormals {
 public:
#if defined(__SSE2__)
  ExactSubnormals() : flush_zero_(_MM_GET_FLUSH_ZERO_MODE()), denormals_zero_(_MM_GET_DENORMALS_ZERO_MODE()) {
    _MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_OFF);
    _MM_SET_DENORMALS_ZERO_MODE(_MM_DENORMALS_ZERO_OFF);
  }
  ~ExactSubnormals() {
    _MM_SET_FLUSH_ZERO_MODE(flush_zero_);
    _MM_SET_DENORMALS_ZERO_MODE(denormals_zero_);
  }
#else
  ExactSubnormals() = default;  // elsewhere the conversions are left to the platform's defaults
#endif
  ExactSubnormals(const ExactSubnormals&) = delete;
  ExactSubnormals& operator=(const ExactSubnormals&) = delete;

 private:
#if defined(__SSE2__)
  unsigned flush_zero_;
  unsigned denormals_zero_;
#endif
};

}  // namespace balerbench
