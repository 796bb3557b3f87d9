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

// Division of a non-negative DCT magnitude by the quantiser, rounded half up, done as a
// multiply and shift so that it is cheap on both sides and exact for n < 2^14
// (checked exhaustively by a unit test).
struct QuantEntry {
  uint32_t multiplier;
  uint16_t half;   // divisor / 2, added before the multiply for rounding
  uint16_t shift;
};

struct HuffTable {
  uint16_t code[256];
  uint8_t size[256];  // 0 means the symbol has no code
};

struct EncodeTables {
  uint8_t zigzag[64];       // copy of kZigzag that lives wherever the tables live
  QuantEntry quant[2][64];  // [luma/chroma][natural index], divisor = 8 * table value
  HuffTable dc[2];
  HuffTable ac[2];
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
QuantEntry MakeQuantEntry(uint32_t divisor);

CONVEYOR_HD inline int32_t Quantize(int32_t coefficient, const QuantEntry& q) {
  uint32_t magnitude = static_cast<uint32_t>(coefficient < 0 ? -coefficient : coefficient);
  uint32_t n = magnitude + q.half;
  if (n > 16383u) n = 16383u;  // never reached by an 8-bit DCT; keeps the multiply in 32 bits
  const int32_t level = static_cast<int32_t>((n * q.multiplier) >> q.shift);
  return coefficient < 0 ? -level : level;
}

}  // namespace conveyor
