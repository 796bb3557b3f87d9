// The doctor's busy kernel: a serial chain of integer multiply-adds in one block, so it
// occupies the device for a predictable time without touching memory that a concurrent
// copy needs.
#include "busy_kernel.h"

namespace conveyor::doctor {

__global__ void BusyKernel(uint32_t* out, uint32_t iterations) {
  uint32_t x = threadIdx.x + 1;
  for (uint32_t i = 0; i < iterations; ++i) x = x * 1664525u + 1013904223u;
  out[threadIdx.x] = x;
}

hipError_t LaunchBusyKernel(hipStream_t stream, uint32_t* out, uint32_t iterations) {
  hipLaunchKernelGGL(BusyKernel, dim3(1), dim3(kBusyThreads), 0, stream, out, iterations);
  return hipGetLastError();
}

}  // namespace conveyor::doctor
