// Tables: zigzag order, quality scaling, Huffman expansion and the exactness of the
// multiply-shift quantiser.
#include "jpeg_tables.h"

#include <gtest/gtest.h>

#include <set>

namespace conveyor {
namespace {

TEST(JpegTables, ZigzagIsAPermutationWalkingAntiDiagonals) {
  std::set<int> seen(kZigzag, kZigzag + 64);
  EXPECT_EQ(seen.size(), 64u);
  // T.81 figure 5: the first few and the last coefficients.
  const int head[] = {0, 1, 8, 16, 9, 2, 3, 10, 17, 24};
  for (int k = 0; k < 10; ++k) EXPECT_EQ(kZigzag[k], head[k]) << "k=" << k;
  EXPECT_EQ(kZigzag[61], 55);
  EXPECT_EQ(kZigzag[62], 62);
  EXPECT_EQ(kZigzag[63], 63);
}

TEST(JpegTables, QualityScalingFollowsIjg) {
  uint8_t q[64];
  ScaledQuantTable(0, 50, q);
  EXPECT_EQ(q[0], 16);  // q50 is Annex K unchanged
  EXPECT_EQ(q[63], 99);
  ScaledQuantTable(0, 100, q);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(q[i], 1);
  ScaledQuantTable(1, 1, q);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(q[i], 255);  // clamped to stay baseline
  ScaledQuantTable(0, 85, q);
  EXPECT_EQ(q[0], (16 * 30 + 50) / 100);
}

TEST(JpegTables, HuffmanCodesArePrefixFreeAndComplete) {
  EncodeTables t;
  BuildEncodeTables(85, &t);
  for (const HuffTable* table : {&t.dc[0], &t.dc[1], &t.ac[0], &t.ac[1]}) {
    std::vector<std::pair<uint32_t, int>> codes;
    double kraft = 0;
    for (int s = 0; s < 256; ++s) {
      if (table->size[s] == 0) continue;
      codes.emplace_back(table->code[s], table->size[s]);
      kraft += 1.0 / (1 << table->size[s]);
    }
    EXPECT_LT(kraft, 1.0);  // standard tables reserve the all-ones code
    for (size_t i = 0; i < codes.size(); ++i)
      for (size_t j = 0; j < codes.size(); ++j) {
        if (i == j || codes[i].second > codes[j].second) continue;
        const uint32_t prefix = codes[j].first >> (codes[j].second - codes[i].second);
        EXPECT_NE(prefix, codes[i].first) << "code " << i << " is a prefix of code " << j;
      }
  }
  // Spot checks against T.81 table K.3/K.5.
  EXPECT_EQ(t.dc[0].size[0], 2);
  EXPECT_EQ(t.dc[0].code[0], 0u);
  EXPECT_EQ(t.ac[0].size[0x00], 4);  // EOB 1010
  EXPECT_EQ(t.ac[0].code[0x00], 0xAu);
  EXPECT_EQ(t.ac[0].size[0xF0], 11);  // ZRL 11111111001
  EXPECT_EQ(t.ac[0].code[0xF0], 0x7F9u);
}

TEST(JpegTables, PackedHuffmanTablesRepeatTheTables) {
  EncodeTables t;
  BuildEncodeTables(85, &t);
  for (int c = 0; c < 2; ++c)
    for (int s = 0; s < 256; ++s) {
      EXPECT_EQ(t.packed_dc[c].entry[s] & 0xFFFF, t.dc[c].code[s]);
      EXPECT_EQ(t.packed_dc[c].entry[s] >> 16, t.dc[c].size[s]);
      EXPECT_EQ(t.packed_ac[c].entry[s] & 0xFFFF, t.ac[c].code[s]);
      EXPECT_EQ(t.packed_ac[c].entry[s] >> 16, t.ac[c].size[s]);
    }
}

TEST(JpegTables, QuantizerMatchesRoundedDivisionExhaustively) {
  EncodeTables t;
  BuildEncodeTables(50, &t);
  for (int32_t q = 1; q <= 255; ++q) {
    const int32_t d = 8 * q;
    const int32_t multiplier = (1 << kQuantShift) / q + 1;
    for (int32_t c = -(16383 - d / 2); c <= 16383 - d / 2; ++c) {
      const int32_t a = c < 0 ? -c : c;
      const int32_t want = (a + d / 2) / d;
      const int32_t got = Quantize(c, multiplier, 4 * q);
      if (got != (c < 0 ? -want : want)) {
        FAIL() << "q=" << q << " c=" << c << " got " << got << " want " << want;
      }
    }
  }
  // The tables carry exactly these entries.
  uint8_t table[64];
  ScaledQuantTable(1, 50, table);
  for (int i = 0; i < 64; ++i) {
    EXPECT_EQ(t.quant[1].multiplier[i], (1 << kQuantShift) / table[i] + 1);
    EXPECT_EQ(t.quant[1].half[i], 4 * table[i]);
  }
}

}  // namespace
}  // namespace conveyor
