// dense_products.cpp: see dense_products.h.
#include "harness/engine/dense_products.h"

#include <stdexcept>
#include <string>

namespace balerbench {

const DenseProducts& dense_products(IsaLevel level) {
  if (!isa_supported(level))
    throw std::invalid_argument(std::string("this CPU cannot run the ") + isa_name(level) + " products");
  switch (level) {
#if defined(__x86_64__)
    case IsaLevel::kAvx2: return dense_products_avx2();
    case IsaLevel::kAvx512: return dense_products_avx512();
#endif
    default: return dense_products_generic();
  }
}

}  // namespace balerbench
