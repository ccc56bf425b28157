// runtime.h: process-wide CPU settings for a run: intra-op threads and
// flushing of subnormal floats.
//
// Subnormals (|x| < 2.2e-308 in float64, 1.2e-38 in float32) cost x86 CPUs a
// microcode assist per operation; flushing them guards against that slow path
// (no measurable effect on the README's machine). The flush state (MXCSR) is
// per thread, so it is set on every thread of the intra-op pool, not only the
// caller's.
#pragma once

namespace balerbench {

// CPUs this process may run on (its affinity mask; taskset and cgroups count).
int available_cpus();

// Keeps batch-sized temporaries on glibc's heap instead of fresh mmaps (once per process).
void tune_allocator();

// threads 0 = available_cpus(). Also calls tune_allocator(). Returns the thread count in force.
int configure_cpu_runtime(int threads, bool flush_denormal);

}  // namespace balerbench
