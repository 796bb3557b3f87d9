// Stage 2 for CPUs with AVX-512 BW (compiled for it): the DCT of cpu_dct_x86_blocks.h, the
// quantisation's multiply sixteen 32-bit lanes at a time, and the zigzag order as two
// two-register word permutes (vpermt2w), from which the nonzero mask is one test each.
#include "cpu_dct_x86_blocks.h"

namespace conveyor {
namespace {

inline void Block(const uint8_t* src, int stride, const X86QuantTable& q, int16_t* levels, uint64_t* nonzero) {
  __m256i c[4];
  ForwardDct(src, stride, c);
  __m256i level[4];
  for (int i = 0; i < 4; ++i) {
    const __m512i mul = _mm512_load_si512(q.multiplier + 16 * i);
    const __m512i n = _mm512_mullo_epi32(_mm512_cvtepu16_epi32(QuantInput(c[i], q, i)), mul);
    level[i] = _mm256_sign_epi16(_mm512_cvtepi32_epi16(_mm512_srli_epi32(n, kQuantShift)), c[i]);
  }
  const __m512i a = _mm512_inserti64x4(_mm512_castsi256_si512(level[0]), level[1], 1);  // held 0-31
  const __m512i b = _mm512_inserti64x4(_mm512_castsi256_si512(level[2]), level[3], 1);  // held 32-63
  const __m512i lo = _mm512_permutex2var_epi16(a, _mm512_load_si512(q.zigzag_source), b);
  const __m512i hi = _mm512_permutex2var_epi16(a, _mm512_load_si512(q.zigzag_source + 32), b);
  _mm512_storeu_si512(levels, lo);
  _mm512_storeu_si512(levels + 32, hi);
  const uint64_t nz = uint64_t{_mm512_test_epi16_mask(hi, hi)} << 32 | _mm512_test_epi16_mask(lo, lo);
  *nonzero = nz & ~uint64_t{1};
}

}  // namespace

void DctRowAvx512(const X86DctRow& r) { DctRowWith<Block>(r); }

}  // namespace conveyor
