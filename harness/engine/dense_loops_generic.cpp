// dense_loops_generic.cpp: the fused engine's loops at the generic level (harness/CMakeLists.txt gives its flags).
#define BALERBENCH_LOOPS_LEVEL kGeneric
#define BALERBENCH_LOOPS_FUNCTION dense_loops_generic
#include "harness/engine/dense_loops.inc"
