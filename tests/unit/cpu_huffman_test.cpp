// The host Huffman coder against EncodeSegment, the definition the GPU path runs: random
// levels of every density and magnitude, every subsampling and several restart intervals.
#include "cpu_huffman.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
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

// The plan of a 200x70 frame (a shape: its pixels are never read).
EncodePlan PlanFor(Subsampling ss, int restart) {
  uint8_t shape = 0;
  FrameView f;
  f.width = 200;
  f.height = 70;
  f.format = PixelFormat::kRgb24;
  f.plane[0] = &shape;
  f.stride[0] = 3 * f.width;
  EncodeParams params;
  params.subsampling = ss;
  params.restart_interval = restart;
  return MakeEncodePlan(f, params).value();
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
      const EncodePlan p = PlanFor(ss, restart);
      std::vector<uint8_t> want(p.segment_capacity), got(p.segment_capacity);
      for (int band = 0; band < p.num_bands; ++band) {
        std::vector<int16_t> levels(p.BandBlocks() * 64);
        for (size_t b = 0; b < p.BandBlocks(); ++b) FillLevels(rng, static_cast<int>(b % 5), &levels[b * 64]);
        std::vector<uint64_t> masks(p.BandBlocks(), 0);
        for (size_t i = 0; i < levels.size(); ++i) {
          if (i % 64 != 0 && levels[i] != 0) masks[i / 64] |= uint64_t{1} << (i % 64);
        }
        for (int s = p.BandFirstSegment(band); s < p.BandFirstSegment(band) + p.BandSegments(band); ++s) {
          const uint32_t n_want = EncodeSegment(p, tables, levels.data(), band, s, want.data(), p.segment_capacity);
          // As the portable DCT stage leaves a band (levels only), and as the SIMD stages do
          // (with each block's nonzero mask).
          const uint64_t* const inputs[2] = {nullptr, masks.data()};
          for (const uint64_t* given : inputs) {
            const uint32_t n_got = EncodeSegmentHost(p, host, levels.data(), band, s, got.data(), given);
            ASSERT_EQ(n_got, n_want) << "ss " << SubsamplingName(ss) << " restart " << restart << " segment " << s
                                     << (given ? " with masks" : "");
            ASSERT_TRUE(std::equal(want.begin(), want.begin() + n_want, got.begin()))
                << "ss " << SubsamplingName(ss) << " restart " << restart << " segment " << s
                << (given ? " with masks" : "");
          }
          for (uint32_t i = 0; i + 1 < n_want; ++i) stuffed += want[i] == 0xFF && want[i + 1] == 0x00;
          ++segments;
        }
      }
    }
  }
  EXPECT_GT(stuffed, 100) << "the 0xFF stuffing path was hardly exercised";
  std::printf("segments compared: %d, stuffed bytes: %d\n", segments, stuffed);
}

// The GPU coding kernel's scheme, run on the host with the same functions: each block
// in two halves (EncodeHalfBlock with the packed tables and HalfNonzeroMask's masks) into
// raw word buffers, which are concatenated, padded and stuffed. The bytes must be
// EncodeSegment's.
TEST(CpuHuffman, HalfBlocksGiveEncodeSegmentsBytes) {
  std::mt19937 rng(777);
  EncodeTables tables;
  BuildEncodeTables(85, &tables);
  int segments = 0;
  for (Subsampling ss : {Subsampling::k420, Subsampling::k422, Subsampling::k444}) {
    for (int restart : {1, 7, 16, 0}) {
      const EncodePlan p = PlanFor(ss, restart);
      std::vector<uint8_t> want(p.segment_capacity);
      for (int band = 0; band < p.num_bands; ++band) {
        std::vector<int16_t> levels(p.BandBlocks() * 64);
        for (size_t b = 0; b < p.BandBlocks(); ++b) FillLevels(rng, static_cast<int>(rng() % 5), &levels[b * 64]);
        const int band_first = p.BandFirstMcu(band);
        for (int s = p.BandFirstSegment(band); s < p.BandFirstSegment(band) + p.BandSegments(band); ++s) {
          const uint32_t n_want = EncodeSegment(p, tables, levels.data(), band, s, want.data(), p.segment_capacity);
          const int mcu0 = std::max(s * p.segment_mcus, band_first);
          const int mcu1 = std::min((s + 1) * p.segment_mcus, band_first + p.BandMcus(band));
          std::vector<bool> bits;
          for (int i = (mcu0 - band_first) * p.blocks_per_mcu; i < (mcu1 - band_first) * p.blocks_per_mcu; ++i) {
            const int16_t* block = &levels[static_cast<size_t>(i) * 64];
            uint32_t pairs[32];
            std::memcpy(pairs, block, sizeof(pairs));
            const uint32_t low = HalfNonzeroMask(pairs, 0), high = HalfNonzeroMask(pairs + 16, 1);
            const int prev = PreviousBlockSameComponent(p, band, i);
            const int32_t dc_diff = block[0] - (prev < 0 ? 0 : levels[static_cast<size_t>(prev) * 64]);
            const int cls = p.comp[p.block_comp[i % p.blocks_per_mcu]].quant;
            for (int half = 0; half < 2; ++half) {
              uint32_t words[kMaxWordsPerBlock / 2];
              WordWriter w{words, 0, 0, 0, 0};
              EncodeHalfBlock(w, block, low, high, half, dc_diff, tables.packed_dc[cls], tables.packed_ac[cls]);
              FlushWords(w);
              ASSERT_LE(w.count, kMaxWordsPerBlock / 2);
              for (uint32_t b = 0; b < w.total_bits; ++b) bits.push_back((words[b / 32] >> (31 - b % 32)) & 1);
            }
          }
          while (bits.size() % 8 != 0) bits.push_back(true);  // 1-bit padding
          std::vector<uint8_t> got;
          for (size_t j = 0; j < bits.size(); j += 8) {
            uint8_t byte = 0;
            for (int b = 0; b < 8; ++b) byte = static_cast<uint8_t>(byte << 1 | bits[j + b]);
            got.push_back(byte);
            if (byte == 0xFF) got.push_back(0x00);
          }
          ASSERT_EQ(got.size(), n_want) << "ss " << SubsamplingName(ss) << " restart " << restart << " segment " << s;
          ASSERT_TRUE(std::equal(got.begin(), got.end(), want.begin()))
              << "ss " << SubsamplingName(ss) << " restart " << restart << " segment " << s;
          ++segments;
        }
      }
    }
  }
  EXPECT_GT(segments, 100);
}

}  // namespace
}  // namespace conveyor
