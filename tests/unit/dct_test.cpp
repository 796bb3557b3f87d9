// The integer DCT against a double-precision reference, and block placement.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "stage_dct.h"

namespace conveyor {
namespace {

// Identity "zigzag" so the tests read levels in natural order.
const uint8_t kNatural[64] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15,
                              16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31,
                              32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47,
                              48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63};

// Orthonormal 2-D DCT-II of centred samples, times 8 (the integer DCT's output scale).
void ReferenceDct(const uint8_t* s, double out[64]) {
  for (int u = 0; u < 8; ++u)
    for (int v = 0; v < 8; ++v) {
      double sum = 0;
      for (int y = 0; y < 8; ++y)
        for (int x = 0; x < 8; ++x)
          sum += (s[y * 8 + x] - 128.0) * std::cos((2 * x + 1) * v * M_PI / 16) *
                 std::cos((2 * y + 1) * u * M_PI / 16);
      const double cu = u == 0 ? std::sqrt(0.125) : 0.5;
      const double cv = v == 0 ? std::sqrt(0.125) : 0.5;
      out[u * 8 + v] = 8 * cu * cv * sum;
    }
}

TEST(Dct, IntegerDctTracksDoubleReference) {
  std::mt19937 rng(7);
  // Bypass quantisation to see raw coefficients: with multiplier 2^19 and no rounding
  // term, ((n >> 3) * 2^19) >> 19 drops the low three bits, so compare in units of 8.
  QuantTable unit;
  for (int i = 0; i < 64; ++i) {
    unit.multiplier[i] = 1 << kQuantShift;
    unit.half[i] = 4;
  }
  double worst = 0, total_err = 0;
  const int trials = 2000;
  for (int t = 0; t < trials; ++t) {
    uint8_t s[64];
    const int mode = t % 4;  // noise, extremes, smooth ramp, constant
    for (int i = 0; i < 64; ++i) {
      if (mode == 0) s[i] = rng() & 0xFF;
      else if (mode == 1) s[i] = (rng() & 1) ? 255 : 0;
      else if (mode == 2) s[i] = static_cast<uint8_t>((i % 8) * 30 + (i / 8) * 3);
      else s[i] = static_cast<uint8_t>(t & 0xFF);
    }
    int32_t work[64];
    int16_t got[64];
    for (int r = 0; r < 8; ++r) FdctRow(s + r * 8, work + r * 8);
    for (int c = 0; c < 8; ++c) FdctColumnQuantize(work, c, unit, kNatural, got);
    double ref[64];
    ReferenceDct(s, ref);
    for (int i = 0; i < 64; ++i) {
      const double err = std::abs(got[i] - ref[i] / 8);
      worst = std::max(worst, err);
      total_err += err;
    }
  }
  // Levels are the true coefficients rounded: at most half a unit of rounding plus the
  // fixed-point error of the transform.
  EXPECT_LT(worst, 1.0) << "max abs error";
  EXPECT_LT(total_err / (trials * 64.0), 0.3) << "mean abs error";
}

TEST(Dct, ConstantBlockHasOnlyDc) {
  uint8_t s[64];
  for (auto& v : s) v = 200;
  QuantTable unit;
  for (int i = 0; i < 64; ++i) {
    unit.multiplier[i] = 1 << kQuantShift;
    unit.half[i] = 4;
  }
  int32_t work[64];
  int16_t got[64];
  for (int r = 0; r < 8; ++r) FdctRow(s + r * 8, work + r * 8);
  for (int c = 0; c < 8; ++c) FdctColumnQuantize(work, c, unit, kNatural, got);
  EXPECT_EQ(got[0], (200 - 128) * 8);  // DC of the orthonormal DCT is 8 x mean
  for (int i = 1; i < 64; ++i) EXPECT_EQ(got[i], 0) << i;
}

}  // namespace
}  // namespace conveyor

// The CPU's DCT stage, in each SIMD variant this CPU runs, against FdctRow and
// FdctColumnQuantize, the per-row and per-column functions the GPU's ColorDctKernel runs:
// every level of every block, exactly, and the SIMD variants' nonzero masks.
#include "cpu_encoder.h"

namespace conveyor {
namespace {

// Blocks that drive the 16-bit SIMD arithmetic to its range: each DCT basis pattern of
// extreme samples (0 where the basis is negative, 255 where positive) and its negation,
// plus flat 0 and 255. A basis pattern maximises its own coefficient and the sums that
// lead to it.
void FillExtremeBlocks(std::vector<uint8_t>& plane, int plane_w, int blocks_x, int blocks_y, std::mt19937& rng) {
  int n = 0;
  for (int by = 0; by < blocks_y; ++by) {
    for (int bx = 0; bx < blocks_x; ++bx, ++n) {
      const int pattern = n % 130;  // 64 bases x 2 signs, then flat 0 and 255
      const int u = (pattern / 2) % 8, v = (pattern / 2) / 8 % 8;
      for (int y = 0; y < 8; ++y) {
        for (int x = 0; x < 8; ++x) {
          uint8_t s;
          if (pattern >= 128) {
            s = pattern == 128 ? 0 : 255;
          } else {
            const double b = std::cos((2 * x + 1) * u * M_PI / 16) * std::cos((2 * y + 1) * v * M_PI / 16);
            const bool high = (b >= 0) != (pattern % 2 == 1);
            // Zero basis values (u or v = 4 at some x) take a random side.
            s = std::abs(b) < 1e-9 ? static_cast<uint8_t>(rng() & 1 ? 255 : 0) : (high ? 255 : 0);
          }
          plane[static_cast<size_t>(by * 8 + y) * plane_w + bx * 8 + x] = s;
        }
      }
    }
  }
}

TEST(Dct, HostStageEqualsPerRowAndColumnDefinition) {
  std::mt19937 rng(99);
  EncodeTables tables;
  for (HostSimd simd : {HostSimd::kPortable, HostSimd::kAvx2, HostSimd::kAvx512}) {
    if (!HostSimdAvailable(simd)) {
      std::printf("%s: not on this CPU or build, not checked\n", HostSimdName(simd));
      continue;
    }
    int blocks_checked = 0;
    for (int content = 0; content < 2; ++content) {  // mixed noise and ramps, then extreme blocks
      for (int quality : {1, 50, 85, 100}) {
        BuildEncodeTables(quality, &tables);
        for (Subsampling ss : {Subsampling::k420, Subsampling::k422, Subsampling::k444}) {
          std::vector<uint8_t> shape(1, 0);
          FrameView f;
          f.width = content == 0 ? 77 : 160;
          f.height = content == 0 ? 41 : 112;
          f.format = PixelFormat::kRgb24;
          f.plane[0] = shape.data();
          f.stride[0] = 3 * f.width;
          EncodeParams params;
          params.subsampling = ss;
          params.quality = quality;
          const EncodePlan p = MakeEncodePlan(f, params, 8).value();
          for (int band = 0; band < p.num_bands; ++band) {
            std::vector<uint8_t> planes[3];
            for (int c = 0; c < 3; ++c) {
              planes[c].resize(p.BandPlaneSize(c));
              if (content == 1) {
                const int rows = p.comp[c].rows_per_mcu_row * p.band_mcu_rows;
                FillExtremeBlocks(planes[c], p.comp[c].plane_w, p.comp[c].plane_w / 8, rows / 8, rng);
                continue;
              }
              // Half noise, half flat and ramps, so both large and zero levels occur.
              for (size_t i = 0; i < planes[c].size(); ++i)
                planes[c][i] = (i / 64) % 2 ? static_cast<uint8_t>(rng()) : static_cast<uint8_t>(i % 251);
            }
            const uint8_t* const ptrs[3] = {planes[0].data(), planes[1].data(), planes[2].data()};
            const int blocks = p.BandMcus(band) * p.blocks_per_mcu;
            std::vector<int16_t> got(static_cast<size_t>(blocks) * 64, 0x7777), want(got.size(), 0x5555);
            std::vector<uint64_t> masks(p.BandBlocks(), 0x5A5A);
            const bool has_masks = DctBandOnHost(p, tables, band, ptrs, got.data(), simd, masks.data());
            ASSERT_EQ(has_masks, simd != HostSimd::kPortable) << HostSimdName(simd);
            for (int i = 0; i < blocks; ++i) {
              const BlockOrigin o = BandBlockOrigin(p, i);
              const int w = p.comp[o.comp].plane_w;
              int32_t work[64];
              for (int r = 0; r < 8; ++r) FdctRow(ptrs[o.comp] + static_cast<size_t>(o.y + r) * w + o.x, work + r * 8);
              for (int col = 0; col < 8; ++col)
                FdctColumnQuantize(work, col, tables.quant[p.comp[o.comp].quant], tables.zigzag_position,
                                   want.data() + static_cast<size_t>(i) * 64);
            }
            for (size_t k = 0; k < got.size(); ++k) {
              ASSERT_EQ(got[k], want[k]) << HostSimdName(simd) << " content " << content << " q" << quality << " ss"
                                         << SubsamplingName(ss) << " band " << band << " block " << k / 64
                                         << " level " << k % 64;
            }
            for (int i = 0; has_masks && i < blocks; ++i) {
              uint64_t mask = 0;
              for (int k = 1; k < 64; ++k) mask |= uint64_t{want[static_cast<size_t>(i) * 64 + k] != 0} << k;
              ASSERT_EQ(masks[i], mask) << HostSimdName(simd) << " block " << i;
            }
            blocks_checked += blocks;
          }
        }
      }
    }
    std::printf("%s: blocks checked: %d\n", HostSimdName(simd), blocks_checked);
  }
}

}  // namespace
}  // namespace conveyor
