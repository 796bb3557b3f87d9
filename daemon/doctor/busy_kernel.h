// A kernel that keeps one wavefront busy for a chosen number of dependent integer steps,
// for the overlap measurement, and the host's copy of its arithmetic for checking it.
#pragma once

#include <cstdint>

// A relative path: conveyor_add_gpu_sources gives hipcc only this directory on AMD.
#include "../../kernels/hip_compat.h"

namespace conveyor::doctor {

inline constexpr uint32_t kBusyThreads = 64;

// out[t] = the LCG x -> x * 1664525 + 1013904223 applied `iterations` times to t + 1.
hipError_t LaunchBusyKernel(hipStream_t stream, uint32_t* out, uint32_t iterations);

inline uint32_t BusyKernelReference(uint32_t thread, uint32_t iterations) {
  uint32_t x = thread + 1;
  for (uint32_t i = 0; i < iterations; ++i) x = x * 1664525u + 1013904223u;
  return x;
}

}  // namespace conveyor::doctor
