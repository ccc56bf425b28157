// dense_products_generic.cpp: the dense products at the generic level (harness/CMakeLists.txt gives its flags).
#define BALERBENCH_ISA_LEVEL kGeneric
#define BALERBENCH_ISA_FUNCTION dense_products_generic
#define BALERBENCH_EIGEN_NAMESPACE balerbench_eigen_generic
#include "harness/engine/dense_products_eigen.inc"
