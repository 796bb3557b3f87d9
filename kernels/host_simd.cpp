// Run-time choice of the CPU encoder's SIMD code.
#include "host_simd.h"

namespace conveyor {

bool HostSimdAvailable(HostSimd simd) {
  switch (simd) {
    case HostSimd::kPortable:
      return true;
#if defined(CONVEYOR_X86_SIMD)
    case HostSimd::kAvx2:
      return __builtin_cpu_supports("avx2");
    case HostSimd::kAvx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx2");
#else
    default:
      return false;
#endif
  }
  return false;
}

HostSimd BestHostSimd() {
  static const HostSimd best = HostSimdAvailable(HostSimd::kAvx512) ? HostSimd::kAvx512
                               : HostSimdAvailable(HostSimd::kAvx2) ? HostSimd::kAvx2
                                                                    : HostSimd::kPortable;
  return best;
}

const char* HostSimdName(HostSimd simd) {
  switch (simd) {
    case HostSimd::kPortable:
      return "portable";
    case HostSimd::kAvx2:
      return "avx2";
    case HostSimd::kAvx512:
      return "avx512";
  }
  return "?";
}

}  // namespace conveyor
