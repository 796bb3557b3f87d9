// The tables a baseline JPEG is coded with: zigzag order, the ITU T.81 Annex K
// quantisation tables scaled by quality the way IJG libjpeg does, and the Annex K
// Huffman tables expanded into code/length lookups. EncodeTables is a flat POD so the
// same bytes can be copied to the device.
#pragma once

#include <cstdint>

#include "hd.h"

namespace conveyor {

// kZigzag[k] is the natural (row-major) index of the k-th coefficient in zigzag order.
extern const uint8_t kZigzag[64];

// Quantisation: level = round-half-up(|c| / (8 q)) with the sign of c, where q is the
// table value (the DCT output carries a factor 8). Computed as
//   n = (|c| + 4q) >> 3;  level = (n * multiplier) >> kQuantShift
// which equals floor((|c| + 4q) / 8q) exactly for |c| + 4q < 2^14: floor(floor(x/8)/q)
// is floor(x/8q), and for n < 2^11 and q <= 255 the multiply-shift is exact (Granlund &
// Montgomery 1994). One shift for every entry lets the CPU quantise eight lanes at once.
// The unit test checks every (q, c) pair.
constexpr int kQuantShift = 19;
struct QuantTable {
  int32_t multiplier[64];  // floor(2^19 / q) + 1, natural order
  int32_t half[64];        // 4 q
};

struct HuffTable {
  uint16_t code[256];
  uint8_t size[256];  // 0 means the symbol has no code
};

// A HuffTable with each symbol's code and length in one word, code | length << 16: one
// shared-memory load a symbol in the GPU's coding loop instead of two.
struct PackedHuffTable {
  uint32_t entry[256];
};

struct EncodeTables {
  uint8_t zigzag_position[64];  // natural index -> position in zigzag order
  QuantTable quant[2];      // [luma/chroma]
  HuffTable dc[2];
  HuffTable ac[2];
  PackedHuffTable packed_dc[2], packed_ac[2];  // dc and ac again
};

// Annex K.1/K.2 tables scaled for quality 1..100 (IJG formula), clamped to 1..255 so the
// stream stays baseline. Output in natural order.
void ScaledQuantTable(int component_class, int quality, uint8_t out[64]);

// The Annex K.3 specs as they appear in a DHT segment: 16 counts then the symbols.
struct HuffmanSpec {
  const uint8_t* counts;  // 16 entries
  const uint8_t* symbols;
  int num_symbols;
};
HuffmanSpec StandardDcSpec(int component_class);
HuffmanSpec StandardAcSpec(int component_class);

void BuildEncodeTables(int quality, EncodeTables* out);

CONVEYOR_HD inline int32_t Quantize(int32_t coefficient, int32_t multiplier, int32_t half) {
  // Branch-free: signs of DCT outputs are data-dependent and unpredictable.
  const int32_t sign = coefficient >> 31;  // 0 or -1
  int32_t n = ((coefficient ^ sign) - sign) + half;
  n = n < 16383 ? n : 16383;  // never reached by an 8-bit DCT; keeps the product in 31 bits
  const int32_t level = ((n >> 3) * multiplier) >> kQuantShift;
  return (level ^ sign) - sign;
}

}  // namespace conveyor
