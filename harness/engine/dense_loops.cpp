// dense_loops.cpp: dense_loops(level), the loops of the level asked for (dense_loops.h).
#include "harness/engine/dense_loops.h"

#include <stdexcept>
#include <string>

namespace balerbench {

const DenseLoops& dense_loops(IsaLevel level) {
  if (!isa_supported(level))
    throw std::invalid_argument(std::string("this CPU cannot run the ") + isa_name(level) + " loops");
  switch (level) {
#if defined(__x86_64__)
    case IsaLevel::kAvx2: return dense_loops_avx2();
    case IsaLevel::kAvx512: return dense_loops_avx512();
#endif
    default: return dense_loops_generic();
  }
}

}  // namespace balerbench
