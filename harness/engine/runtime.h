// runtime.h: process-wide settings for a run: the device, intra-op threads, deterministic kernels
// and flushing of subnormal floats.
//
// Subnormals (|x| < 2.2e-308 in float64, 1.2e-38 in float32) cost x86 CPUs a
// microcode assist per operation; flushing them guards against that slow path
// (no measurable effect on the README's machine). The flush state (MXCSR) is
// per thread, so it is set on every thread of the intra-op pool, not only the
// caller's.
#pragma once

#include <c10/core/Device.h>

#include <string>

namespace balerbench {

// CPUs this process may run on (its affinity mask; taskset and cgroups count).
int available_cpus();

// Keeps batch-sized temporaries on glibc's heap instead of fresh mmaps (once per process).
void tune_allocator();

// threads 0 = available_cpus(). Also calls tune_allocator(). Returns the thread count in force.
int configure_cpu_runtime(int threads, bool flush_denormal);

// The CPU runtime (configure_cpu_runtime) and LibTorch's deterministic kernels, as Baler's
// deterministic_algorithm asks.
void configure_runtime(int threads, bool flush_denormal, bool deterministic_algorithms);

// "cpu", "cuda", "cuda:N" -> device; InputError when CUDA is asked for but
// absent.
c10::Device resolve_device(const std::string& name);

}  // namespace balerbench
