// dense_products_avx512.cpp: the dense products at the avx512 level (harness/CMakeLists.txt gives its flags).
#define BALERBENCH_ISA_LEVEL kAvx512
#define BALERBENCH_ISA_FUNCTION dense_products_avx512
#define BALERBENCH_EIGEN_NAMESPACE balerbench_eigen_avx512
#include "harness/engine/dense_products_eigen.inc"
