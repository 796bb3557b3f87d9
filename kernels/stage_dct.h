// Stage 2: forward DCT and quantisation of one 8x8 block. The transform is the
// Loeffler-Ligtenberg-Moschytz factorisation (ICASSP 1989) in 13-bit fixed point with two
// extra bits kept between the passes, the arrangement IJG libjpeg's "islow" DCT made
// standard. Output is 8x the orthonormal DCT, so quantisers are scaled by 8.
//
// The two 1-D passes are separate functions so that the GPU can run one row (then one
// column) per thread and the CPU can loop over them; the integers are the same.
#pragma once

#include "encode_plan.h"
#include "hd.h"
#include "jpeg_tables.h"

namespace conveyor {
namespace dct {

constexpr int kConstBits = 13;
constexpr int kPass1Bits = 2;

constexpr int32_t Fix(double x) { return static_cast<int32_t>(x * (1 << kConstBits) + 0.5); }
constexpr int32_t k0_298631336 = Fix(0.298631336);
constexpr int32_t k0_390180644 = Fix(0.390180644);
constexpr int32_t k0_541196100 = Fix(0.541196100);
constexpr int32_t k0_765366865 = Fix(0.765366865);
constexpr int32_t k0_899976223 = Fix(0.899976223);
constexpr int32_t k1_175875602 = Fix(1.175875602);
constexpr int32_t k1_501321110 = Fix(1.501321110);
constexpr int32_t k1_847759065 = Fix(1.847759065);
constexpr int32_t k1_961570560 = Fix(1.961570560);
constexpr int32_t k2_053119869 = Fix(2.053119869);
constexpr int32_t k2_562915447 = Fix(2.562915447);
constexpr int32_t k3_072711026 = Fix(3.072711026);

template <typename T>
CONVEYOR_HD inline T Descale(T x, int n) {
  return (x + (1 << (n - 1))) >> n;
}

// One 8-point pass. In pass 1 the inputs are centred samples and the outputs keep
// kPass1Bits of extra precision; pass 2 removes them. T is int32_t, or on the CPU a
// vector of int32_t that runs eight independent 1-D transforms lane by lane with the
// same integers.
template <bool kFirstPass, typename T>
CONVEYOR_HD inline void Fdct8(const T in[8], T* out, int out_stride) {
  const T tmp0 = in[0] + in[7], tmp7 = in[0] - in[7];
  const T tmp1 = in[1] + in[6], tmp6 = in[1] - in[6];
  const T tmp2 = in[2] + in[5], tmp5 = in[2] - in[5];
  const T tmp3 = in[3] + in[4], tmp4 = in[3] - in[4];

  const T tmp10 = tmp0 + tmp3, tmp13 = tmp0 - tmp3;
  const T tmp11 = tmp1 + tmp2, tmp12 = tmp1 - tmp2;
  const int mul_shift = kFirstPass ? kConstBits - kPass1Bits : kConstBits + kPass1Bits;

  if (kFirstPass) {
    out[0 * out_stride] = (tmp10 + tmp11) * (1 << kPass1Bits);
    out[4 * out_stride] = (tmp10 - tmp11) * (1 << kPass1Bits);
  } else {
    out[0 * out_stride] = Descale(tmp10 + tmp11, kPass1Bits);
    out[4 * out_stride] = Descale(tmp10 - tmp11, kPass1Bits);
  }
  const T z1 = (tmp12 + tmp13) * k0_541196100;
  out[2 * out_stride] = Descale(z1 + tmp13 * k0_765366865, mul_shift);
  out[6 * out_stride] = Descale(z1 - tmp12 * k1_847759065, mul_shift);

  // Odd part: the rotation network of the LLM paper.
  const T z5 = (tmp4 + tmp6 + tmp5 + tmp7) * k1_175875602;
  const T o4 = tmp4 * k0_298631336;
  const T o5 = tmp5 * k2_053119869;
  const T o6 = tmp6 * k3_072711026;
  const T o7 = tmp7 * k1_501321110;
  const T a1 = (tmp4 + tmp7) * -k0_899976223;
  const T a2 = (tmp5 + tmp6) * -k2_562915447;
  const T a3 = (tmp4 + tmp6) * -k1_961570560 + z5;
  const T a4 = (tmp5 + tmp7) * -k0_390180644 + z5;
  out[7 * out_stride] = Descale(o4 + a1 + a3, mul_shift);
  out[5 * out_stride] = Descale(o5 + a2 + a4, mul_shift);
  out[3 * out_stride] = Descale(o6 + a2 + a3, mul_shift);
  out[1 * out_stride] = Descale(o7 + a1 + a4, mul_shift);
}

}  // namespace dct

// Pass 1 over one row of 8 samples (centred here) into row `r` of a 64-entry work block.
CONVEYOR_HD inline void FdctRow(const uint8_t* samples, int32_t* work_row) {
  int32_t in[8];
  for (int i = 0; i < 8; ++i) in[i] = static_cast<int32_t>(samples[i]) - 128;
  dct::Fdct8<true, int32_t>(in, work_row, 1);
}

// Pass 2 over column `col` of the work block, then quantisation; writes the column's
// eight levels into `levels` in zigzag order, the order the Huffman stage reads. The work
// block's rows are `row_stride` entries apart (the GPU pads them against bank conflicts).
CONVEYOR_HD inline void FdctColumnQuantize(const int32_t* work, int col, const QuantTable& quant,
                                           const uint8_t* zigzag_position, int16_t* levels,
                                           int row_stride = 8) {
  int32_t in[8], out[8];
  for (int i = 0; i < 8; ++i) in[i] = work[i * row_stride + col];
  dct::Fdct8<false, int32_t>(in, out, 1);
  for (int i = 0; i < 8; ++i) {
    const int idx = i * 8 + col;
    levels[zigzag_position[idx]] =
        static_cast<int16_t>(Quantize(out[i], quant.multiplier[idx], quant.half[idx]));
  }
}

// Where block `i` of a band (in scan order) sits: its component and the top-left sample
// in that component's band-local plane.
struct BlockOrigin {
  int comp, x, y;
};
CONVEYOR_HD inline BlockOrigin BandBlockOrigin(const EncodePlan& p, int i) {
  const int mcu = i / p.blocks_per_mcu;
  const int j = i - mcu * p.blocks_per_mcu;
  const int mcu_x = mcu % p.mcus_x;
  const int mcu_row = mcu / p.mcus_x;
  const int c = p.block_comp[j];
  BlockOrigin o;
  o.comp = c;
  o.x = (mcu_x * p.comp[c].h + p.block_dx[j]) * 8;
  o.y = (mcu_row * p.comp[c].v + p.block_dy[j]) * 8;
  return o;
}

}  // namespace conveyor
