// The SIMD DCT and quantisation of one block, for cpu_dct_avx2.cpp and cpu_dct_avx512.cpp
// only: each includes this once, compiled for its instruction set. Everything here has
// internal linkage and uses no library templates (see cpu_dct_x86.h).
//
// A block lives in four 256-bit registers of 16-bit lanes, two 8-lane vectors each. Pass
// 1 transforms the rows (lanes are rows, so the samples are transposed first), pass 2
// the columns (transposed again). Every integer is the one stage_dct.h computes in 32
// bits: the 16-bit values stay far inside their range for 8-bit samples (pass 1 outputs
// at most 4096 in magnitude, pass 2's even sums at most 32768, checked with the extreme
// blocks of unit.Dct.*), and each sum of products is formed exactly in 32 bits.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "cpu_dct_x86.h"
#include "stage_dct.h"  // the fixed-point constants only: no function of it is used here

namespace conveyor {
namespace {

// Lane pairs (a0, b0) in the low 128 bits and (a1, b1) in the high, for vpmaddwd.
inline __m256i Pairs(int32_t a0, int32_t b0, int32_t a1, int32_t b1) {
  const short x0 = static_cast<short>(a0), y0 = static_cast<short>(b0);
  const short x1 = static_cast<short>(a1), y1 = static_cast<short>(b1);
  return _mm256_setr_epi16(x0, y0, x0, y0, x0, y0, x0, y0, x1, y1, x1, y1, x1, y1, x1, y1);
}

inline __m256i Swap128(__m256i v) { return _mm256_permute4x64_epi64(v, 0x4E); }

// The 8x8 matrix held as [R0|R4] [R1|R5] [R2|R6] [R3|R7] (a row a 128-bit half) into
// [C0|C1] [C2|C3] [C4|C5] [C6|C7] (a column a half).
inline void Transpose(const __m256i a[4], __m256i c[4]) {
  const __m256i b0 = _mm256_unpacklo_epi16(a[0], a[1]);  // cols 0-3 of R0,R1 | of R4,R5
  const __m256i b1 = _mm256_unpackhi_epi16(a[0], a[1]);  // cols 4-7
  const __m256i b2 = _mm256_unpacklo_epi16(a[2], a[3]);
  const __m256i b3 = _mm256_unpackhi_epi16(a[2], a[3]);
  // unpack*_epi32 gives [col j rows 0-3, col j+1 rows 0-3 | the same of rows 4-7].
  c[0] = _mm256_permute4x64_epi64(_mm256_unpacklo_epi32(b0, b2), 0xD8);
  c[1] = _mm256_permute4x64_epi64(_mm256_unpackhi_epi32(b0, b2), 0xD8);
  c[2] = _mm256_permute4x64_epi64(_mm256_unpacklo_epi32(b1, b3), 0xD8);
  c[3] = _mm256_permute4x64_epi64(_mm256_unpackhi_epi32(b1, b3), 0xD8);
}

template <int kShift>
inline __m256i Descale32(__m256i x) {
  return _mm256_srai_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(1 << (kShift - 1))), kShift);
}

// One 8-point pass, dct::Fdct8's integers, on eight vectors at once. In: [in0|in1]
// [in2|in3] [in4|in5] [in6|in7]. Out: [out0|out4] [out2|out6] [out7|out1] [out5|out3].
// The odd part is LLM's network with z5 folded into the two rotations that use it,
// libjpeg-turbo's grouping: z3 = t4 + t6 and z4 = t5 + t7 rotate first, then each output
// is one pair of products plus its rotated z.
template <bool kFirstPass>
inline void Pass(const __m256i in[4], __m256i out[4]) {
  using namespace dct;
  constexpr int kShift = kFirstPass ? kConstBits - kPass1Bits : kConstBits + kPass1Bits;
  const __m256i p32 = Swap128(in[1]), p76 = Swap128(in[3]);
  const __m256i t01 = _mm256_add_epi16(in[0], p76);  // [tmp0|tmp1]
  const __m256i t76 = _mm256_sub_epi16(in[0], p76);  // [tmp7|tmp6]
  const __m256i t32 = _mm256_add_epi16(p32, in[2]);  // [tmp3|tmp2]
  const __m256i t45 = _mm256_sub_epi16(p32, in[2]);  // [tmp4|tmp5]

  // Even part.
  const __m256i e = _mm256_add_epi16(t01, t32);  // [tmp10|tmp11]
  const __m256i f = _mm256_sub_epi16(t01, t32);  // [tmp13|tmp12]
  const __m256i plus_minus = _mm256_setr_epi16(1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1, -1, -1, -1);
  __m256i o04 = _mm256_add_epi16(_mm256_permute4x64_epi64(e, 0x44),
                                 _mm256_sign_epi16(_mm256_permute4x64_epi64(e, 0xEE), plus_minus));
  if (kFirstPass) {
    o04 = _mm256_slli_epi16(o04, kPass1Bits);
  } else {
    o04 = _mm256_srai_epi16(_mm256_add_epi16(o04, _mm256_set1_epi16(1 << (kPass1Bits - 1))), kPass1Bits);
  }
  // out2 = tmp13 (c0.541 + c0.765) + tmp12 c0.541; out6 = tmp12 (c0.541 - c1.848) + tmp13 c0.541.
  const __m256i k26 = Pairs(k0_541196100 + k0_765366865, k0_541196100, k0_541196100 - k1_847759065, k0_541196100);
  const __m256i fs = Swap128(f);
  const __m256i o26 = _mm256_packs_epi32(Descale32<kShift>(_mm256_madd_epi16(_mm256_unpacklo_epi16(f, fs), k26)),
                                         Descale32<kShift>(_mm256_madd_epi16(_mm256_unpackhi_epi16(f, fs), k26)));

  // Odd part. z3' = z3 (c1.176 - c1.962) + z4 c1.176; z4' = z4 (c1.176 - c0.390) + z3 c1.176.
  const __m256i z = _mm256_add_epi16(t45, Swap128(t76));  // [z3|z4]
  const __m256i zs = Swap128(z);
  const __m256i kz = Pairs(k1_175875602 - k1_961570560, k1_175875602, k1_175875602 - k0_390180644, k1_175875602);
  const __m256i zr_lo = _mm256_madd_epi16(_mm256_unpacklo_epi16(z, zs), kz);  // [z3'|z4'], rows 0-3
  const __m256i zr_hi = _mm256_madd_epi16(_mm256_unpackhi_epi16(z, zs), kz);  // rows 4-7
  // out7 = t4 (c0.299 - c0.900) - t7 c0.900 + z3'; out1 = t7 (c1.501 - c0.900) - t4 c0.900 + z4'.
  const __m256i t47 = _mm256_permute2x128_si256(t45, t76, 0x20);  // [tmp4|tmp7]
  const __m256i t74 = Swap128(t47);
  const __m256i k71 =
      Pairs(k0_298631336 - k0_899976223, -k0_899976223, k1_501321110 - k0_899976223, -k0_899976223);
  const __m256i o71 = _mm256_packs_epi32(
      Descale32<kShift>(_mm256_add_epi32(_mm256_madd_epi16(_mm256_unpacklo_epi16(t47, t74), k71), zr_lo)),
      Descale32<kShift>(_mm256_add_epi32(_mm256_madd_epi16(_mm256_unpackhi_epi16(t47, t74), k71), zr_hi)));
  // out5 = t5 (c2.053 - c2.563) - t6 c2.563 + z4'; out3 = t6 (c3.073 - c2.563) - t5 c2.563 + z3'.
  const __m256i t56 = _mm256_permute2x128_si256(t45, t76, 0x31);  // [tmp5|tmp6]
  const __m256i t65 = Swap128(t56);
  const __m256i k53 =
      Pairs(k2_053119869 - k2_562915447, -k2_562915447, k3_072711026 - k2_562915447, -k2_562915447);
  const __m256i o53 = _mm256_packs_epi32(
      Descale32<kShift>(_mm256_add_epi32(_mm256_madd_epi16(_mm256_unpacklo_epi16(t56, t65), k53), Swap128(zr_lo))),
      Descale32<kShift>(_mm256_add_epi32(_mm256_madd_epi16(_mm256_unpackhi_epi16(t56, t65), k53), Swap128(zr_hi))));
  out[0] = o04;
  out[1] = o26;
  out[2] = o71;
  out[3] = o53;
}

// Rows r and r + 4 of a block of samples, centred, as [Rr|Rr+4].
inline __m256i LoadRows(const uint8_t* src, int stride, int r) {
  const __m128i lo = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + r * stride));
  const __m128i hi = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + (r + 4) * stride));
  return _mm256_sub_epi16(_mm256_cvtepu8_epi16(_mm_unpacklo_epi64(lo, hi)), _mm256_set1_epi16(128));
}

// The DCT of one block: its coefficients in held order ([0|4] [2|6] [7|1] [5|3]).
inline void ForwardDct(const uint8_t* src, int stride, __m256i coef[4]) {
  __m256i rows[4], cols[4], pass1[4];
  for (int r = 0; r < 4; ++r) rows[r] = LoadRows(src, stride, r);
  Transpose(rows, cols);
  Pass<true>(cols, pass1);
  // Pass 1 left [R0|R4] [R2|R6] [R7|R1] [R5|R3] (R: a coefficient's values down the rows).
  const __m256i regrouped[4] = {pass1[0], _mm256_permute2x128_si256(pass1[2], pass1[3], 0x21), pass1[1],
                                _mm256_permute2x128_si256(pass1[2], pass1[3], 0x03)};
  Transpose(regrouped, cols);
  Pass<false>(cols, coef);
}

// Quantize() on a held register's 16 coefficients, before the sign: min(|c| + 4q, 16383) >> 3,
// in 16 bits (at most 8192 + 1020 before the clamp).
inline __m256i QuantInput(__m256i c, const X86QuantTable& q, int i) {
  const __m256i half = _mm256_load_si256(reinterpret_cast<const __m256i*>(q.half + 16 * i));
  const __m256i n = _mm256_min_epi16(_mm256_add_epi16(_mm256_abs_epi16(c), half), _mm256_set1_epi16(16383));
  return _mm256_srli_epi16(n, 3);
}

// The blocks of one MCU row in scan order, each through kBlock (an ISA's quantisation
// and zigzag order, after ForwardDct).
template <void (*kBlock)(const uint8_t* src, int stride, const X86QuantTable& q, int16_t* levels, uint64_t* nonzero)>
inline void DctRowWith(const X86DctRow& r) {
  int16_t* out = r.levels;
  uint64_t* nz = r.nonzero;
  for (int m = 0; m < r.mcus; ++m) {
    for (int j = 0; j < r.blocks_per_mcu; ++j, out += 64, ++nz) {
      kBlock(r.first[j] + static_cast<ptrdiff_t>(m) * r.mcu_step[j], r.stride[j], *r.quant[j], out, nz);
    }
  }
}

}  // namespace
}  // namespace conveyor
