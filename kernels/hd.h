// Marks functions that run on both the host (CPU worker) and the device (GPU kernels).
// The per-block encoder math is written once with CONVEYOR_HD so both sides compute the
// same integers, which is what makes GPU output byte-identical to CPU output.
#pragma once

#include <cstdint>

#if defined(__CUDACC__) || defined(__HIPCC__)
#include "hip_compat.h"  // device intrinsics (__ffsll, __clz) for the stage functions
#define CONVEYOR_HD __host__ __device__
#define CONVEYOR_DEVICE_COMPILE 1
#else
#define CONVEYOR_HD
#endif

// Unrolls the next loop in device code (fixed, small trip counts that index register
// arrays). Clang takes the pragma on either side; GCC, nvcc's host compiler, unrolls
// such loops on its own and warns at it.
#if defined(__CUDA_ARCH__) || defined(__clang__)
#define CONVEYOR_UNROLL _Pragma("unroll")
#else
#define CONVEYOR_UNROLL
#endif

namespace conveyor {

// Index of the lowest set bit; x must be non-zero.
CONVEYOR_HD inline int LowestSetBit64(uint64_t x) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __ffsll(static_cast<long long>(x)) - 1;
#else
  return __builtin_ctzll(x);
#endif
}

// Index of the lowest and of the highest set bit of a word; x must be non-zero.
CONVEYOR_HD inline int LowestSetBit32(uint32_t x) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __ffs(static_cast<int>(x)) - 1;
#else
  return __builtin_ctz(x);
#endif
}
CONVEYOR_HD inline int HighestSetBit32(uint32_t x) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return 31 - __clz(static_cast<int>(x));
#else
  return 31 - __builtin_clz(x);
#endif
}

// Number of bits needed to represent v (v >= 0): 0 -> 0, 1 -> 1, 2..3 -> 2, ...
CONVEYOR_HD inline int BitLength(uint32_t v) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return 32 - __clz(static_cast<int>(v));
#else
  return v == 0 ? 0 : 32 - __builtin_clz(v);
#endif
}

}  // namespace conveyor
