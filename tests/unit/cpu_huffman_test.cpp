// The host Huffman coder against EncodeSegment, the definition the GPU path runs: random
// levels of every density and magnitude, every subsampling and several restart intervals.
#include "cpu_huffman.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "stage_huffman.h"

namespace conveyor {
namespace {

// Levels as the DCT stage leaves them: DC within +-1024, AC within +-1023, zigzag order.
void FillLevels(std::mt19937& rng, int mode, int16_t* block) {
  std::uniform_int_distribution<int> dc(-1024, 1016), big(-1023, 1023), small(-3, 3), pick(0, 99);
  block[0] = static_cast<int16_t>(dc(rng));
  for (int k = 1; k < 64; ++k) {
    int v = 0;
    switch (mode) {
      case 0: v = pick(rng) < 10 ? small(rng) : 0; break;         // typical: sparse, small
      case 1: v = big(rng); break;                                // dense, large (q100 noise)
      case 2: v = (k == 63 || k == 17) ? big(rng) : 0; break;     // long zero runs, ZRL
      case 3: v = 0; break;                                       // DC only, EOB
      default: v = pick(rng) < 50 ? -1 - (pick(rng) % 2) * 2 : 0;  // many 1-bits: 0xFF bytes
    }
    block[k] = static_cast<int16_t>(v);
  }
}

TEST(CpuHuffman, SameBytesAsEncodeSegment) {
  std::mt19937 rng(12345);
  EncodeTables tables;
  BuildEncodeTables(85, &tables);
  HostHuffTables host;
  BuildHostHuffTables(tables, &host);
  int segments = 0, stuffed = 0;
  for (Subsampling ss : {Subsampling::k420, Subsampling::k422, Subsampling::k444}) {
    for (int restart : {1, 7, 16, 0}) {
      std::vector<uint8_t> shape(1, 0);
      FrameView f;
      f.width = 200;
      f.height = 70;
      f.format = PixelFormat::kRgb24;
      f.plane[0] = shape.data();
      f.stride[0] = 3 * f.width;
      EncodeParams params;
      params.subsampling = ss;
      params.restart_interval = restart;
      const EncodePlan p = MakeEncodePlan(f, params).value();
      std::vector<uint8_t> want(p.segment_capacity), got(p.segment_capacity);
      for (int band = 0; band < p.num_bands; ++band) {
        std::vector<int16_t> levels(p.BandBlocks() * 64);
        for (size_t b = 0; b < p.BandBlocks(); ++b) FillLevels(rng, static_cast<int>(b % 5), &levels[b * 64]);
        for (int s = p.BandFirstSegment(band); s < p.BandFirstSegment(band) + p.BandSegments(band); ++s) {
          const uint32_t n_want = EncodeSegment(p, tables, levels.data(), band, s, want.data(), p.segment_capacity);
          const uint32_t n_got = EncodeSegmentHost(p, host, levels.data(), band, s, got.data());
          ASSERT_EQ(n_got, n_want) << "ss " << SubsamplingName(ss) << " restart " << restart << " segment " << s;
          ASSERT_TRUE(std::equal(want.begin(), want.begin() + n_want, got.begin()))
              << "ss " << SubsamplingName(ss) << " restart " << restart << " segment " << s;
          for (uint32_t i = 0; i + 1 < n_want; ++i) stuffed += want[i] == 0xFF && want[i + 1] == 0x00;
          ++segments;
        }
      }
    }
  }
  EXPECT_GT(stuffed, 100) << "the 0xFF stuffing path was hardly exercised";
  std::printf("segments compared: %d, stuffed bytes: %d\n", segments, stuffed);
}

}  // namespace
}  // namespace conveyor
