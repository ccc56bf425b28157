// dense_loops_avx2.cpp: the fused engine's loops at the avx2 level (harness/CMakeLists.txt gives its flags).
#define BALERBENCH_LOOPS_LEVEL kAvx2
#define BALERBENCH_LOOPS_FUNCTION dense_loops_avx2
#include "harness/engine/dense_loops.inc"
