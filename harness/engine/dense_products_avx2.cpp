// dense_products_avx2.cpp: the dense products at the avx2 level (harness/CMakeLists.txt gives its flags).
#define BALERBENCH_ISA_LEVEL kAvx2
#define BALERBENCH_ISA_FUNCTION dense_products_avx2
#define BALERBENCH_EIGEN_NAMESPACE balerbench_eigen_avx2
#include "harness/engine/dense_products_eigen.inc"
