// Which x86 SIMD code the CPU encoder's hot stages run. The portable code (GCC vector
// extensions, cloned for AVX2 by the compiler) runs anywhere; the AVX2 and AVX-512 stages
// are hand-arranged and chosen at run time. All give the same integers.
#pragma once

namespace conveyor {

enum class HostSimd { kPortable, kAvx2, kAvx512 };

// The widest this build and this CPU both support.
HostSimd BestHostSimd();
bool HostSimdAvailable(HostSimd simd);
const char* HostSimdName(HostSimd simd);

}  // namespace conveyor
