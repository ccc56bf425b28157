// dense_loops_avx512.cpp: the fused engine's loops at the avx512 level (harness/CMakeLists.txt gives its flags).
#define BALERBENCH_LOOPS_LEVEL kAvx512
#define BALERBENCH_LOOPS_FUNCTION dense_loops_avx512
#include "harness/engine/dense_loops.inc"
