// Stage 2 for CPUs with AVX2 (compiled with -mavx2): the DCT of cpu_dct_x86_blocks.h, the
// multiply of the quantisation in 32-bit lanes, and the zigzag order by a table.
#include "cpu_dct_x86_blocks.h"

namespace conveyor {
namespace {

inline void Block(const uint8_t* src, int stride, const X86QuantTable& q, int16_t* levels, uint64_t* nonzero) {
  __m256i c[4];
  ForwardDct(src, stride, c);
  alignas(32) int16_t held[64];
  for (int i = 0; i < 4; ++i) {
    const __m256i n = QuantInput(c[i], q, i);
    const __m256i* mul = reinterpret_cast<const __m256i*>(q.multiplier + 16 * i);
    const __m256i lo = _mm256_srli_epi32(
        _mm256_mullo_epi32(_mm256_cvtepu16_epi32(_mm256_castsi256_si128(n)), _mm256_load_si256(mul)), kQuantShift);
    const __m256i hi = _mm256_srli_epi32(
        _mm256_mullo_epi32(_mm256_cvtepu16_epi32(_mm256_extracti128_si256(n, 1)), _mm256_load_si256(mul + 1)),
        kQuantShift);
    // packus interleaves the halves: [lo 0-3, hi 0-3 | lo 4-7, hi 4-7] -> in order.
    const __m256i level = _mm256_permute4x64_epi64(_mm256_packus_epi32(lo, hi), 0xD8);
    _mm256_store_si256(reinterpret_cast<__m256i*>(held + 16 * i), _mm256_sign_epi16(level, c[i]));
  }
  for (int k = 0; k < 64; ++k) levels[k] = held[q.zigzag_source[k]];
  __m256i zero[4];
  for (int i = 0; i < 4; ++i) {
    zero[i] = _mm256_cmpeq_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(levels + 16 * i)),
                                 _mm256_setzero_si256());
  }
  const __m256i b01 = _mm256_permute4x64_epi64(_mm256_packs_epi16(zero[0], zero[1]), 0xD8);
  const __m256i b23 = _mm256_permute4x64_epi64(_mm256_packs_epi16(zero[2], zero[3]), 0xD8);
  const uint64_t zeros = static_cast<uint32_t>(_mm256_movemask_epi8(b01)) |
                         uint64_t{static_cast<uint32_t>(_mm256_movemask_epi8(b23))} << 32;
  *nonzero = ~zeros & ~uint64_t{1};
}

}  // namespace

void DctRowAvx2(const X86DctRow& r) { DctRowWith<Block>(r); }

}  // namespace conveyor
