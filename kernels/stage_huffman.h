// Stage 3: Huffman coding with the standard tables. EncodeSegment is the definition: a
// restart segment coded block after block, bytes stuffed (0xFF -> 0xFF 0x00) and the
// last byte padded with 1-bits, so a segment is final on its own. The CPU runs it as
// it is. The GPU codes each block on its own thread into a WordWriter (raw bits, no
// stuffing) and then assembles each segment in parallel (gpu_stages.hip); the bits are
// the same because EncodeBlock is the same.
#pragma once

#include "encode_plan.h"
#include "hd.h"
#include "jpeg_tables.h"

namespace conveyor {

struct BitWriter {
  uint8_t* out;
  uint32_t pos;
  uint32_t capacity;
  uint64_t acc;   // pending bits, right-aligned
  int nbits;      // number of pending bits
  bool overflow;
};

CONVEYOR_HD inline void EmitByte(BitWriter& w, uint8_t byte) {
  if (w.pos + 2 > w.capacity) {
    w.overflow = true;
    return;
  }
  w.out[w.pos++] = byte;
  if (byte == 0xFF) w.out[w.pos++] = 0x00;
}

// Appends `size` (<= 26) bits. Flushes whole bytes once 32 bits are pending so that the
// accumulator never holds more than 58.
CONVEYOR_HD inline void PutBits(BitWriter& w, uint32_t bits, int size) {
  w.acc = (w.acc << size) | bits;
  w.nbits += size;
  if (w.nbits >= 32) {
    while (w.nbits >= 8) {
      w.nbits -= 8;
      EmitByte(w, static_cast<uint8_t>(w.acc >> w.nbits));
    }
  }
}

// Flushes every pending bit, padding the last byte with 1-bits (T.81 F.1.2.3).
CONVEYOR_HD inline void FlushWithPadding(BitWriter& w) {
  if (w.nbits % 8 != 0) {
    const int pad = 8 - w.nbits % 8;
    w.acc = (w.acc << pad) | ((1u << pad) - 1);
    w.nbits += pad;
  }
  while (w.nbits >= 8) {
    w.nbits -= 8;
    EmitByte(w, static_cast<uint8_t>(w.acc >> w.nbits));
  }
}

// Raw bits packed into 32-bit words, most significant bit first: one block's code on
// the GPU, before segments are assembled and stuffed.
struct WordWriter {
  uint32_t* words;
  uint32_t count;       // words written
  uint64_t acc;
  int nbits;
  uint32_t total_bits;
};

CONVEYOR_HD inline void PutBits(WordWriter& w, uint32_t bits, int size) {
  w.acc = (w.acc << size) | bits;
  w.nbits += size;
  w.total_bits += size;
  if (w.nbits >= 32) {
    w.nbits -= 32;
    w.words[w.count++] = static_cast<uint32_t>(w.acc >> w.nbits);
  }
}

// Writes the last partial word, left-aligned with zeros after the valid bits.
CONVEYOR_HD inline void FlushWords(WordWriter& w) {
  if (w.nbits > 0) w.words[w.count++] = static_cast<uint32_t>(w.acc << (32 - w.nbits));
  w.nbits = 0;
}

// A symbol's code followed by `n` extra bits, from either form of a Huffman table.
template <class Writer>
CONVEYOR_HD inline void PutSymbol(Writer& w, const HuffTable& t, int symbol, uint32_t extra, int n) {
  PutBits(w, (static_cast<uint32_t>(t.code[symbol]) << n) | extra, t.size[symbol] + n);
}
template <class Writer>
CONVEYOR_HD inline void PutSymbol(Writer& w, const PackedHuffTable& t, int symbol, uint32_t extra, int n) {
  const uint32_t e = t.entry[symbol];
  PutBits(w, ((e & 0xFFFFu) << n) | extra, static_cast<int>(e >> 16) + n);
}

// Magnitude category and the bits that follow it (T.81 F.1.2.1/F.1.2.2).
template <class Writer, class Table>
CONVEYOR_HD inline void PutValue(Writer& w, const Table& t, int symbol_high, int32_t v) {
  uint32_t magnitude = static_cast<uint32_t>(v < 0 ? -v : v);
  const int n = BitLength(magnitude);
  const uint32_t extra = static_cast<uint32_t>(v < 0 ? v - 1 : v) & ((1u << n) - 1);
  PutSymbol(w, t, symbol_high | n, extra, n);
}

// Codes one block of quantised levels (zigzag order) given the previous DC level of
// its component.
template <class Writer>
CONVEYOR_HD inline void EncodeBlock(Writer& w, const int16_t* levels, int32_t* last_dc,
                                    const HuffTable& dc, const HuffTable& ac) {
  const int32_t diff = levels[0] - *last_dc;
  *last_dc = levels[0];
  PutValue(w, dc, 0, diff);

  uint64_t nonzero = 0;
  for (int k = 1; k < 64; ++k) {
    nonzero |= static_cast<uint64_t>(levels[k] != 0) << k;  // branch-free
  }
  int last = 0;
  while (nonzero != 0) {
    const int k = LowestSetBit64(nonzero);
    nonzero &= nonzero - 1;
    int run = k - last - 1;
    while (run > 15) {
      PutBits(w, ac.code[0xF0], ac.size[0xF0]);  // ZRL: sixteen zeros
      run -= 16;
    }
    PutValue(w, ac, run << 4, levels[k]);
    last = k;
  }
  if (last != 63) PutBits(w, ac.code[0x00], ac.size[0x00]);  // EOB
}

// Bit j set when level 32 * half + j of a block is non-zero, the DC (level 0) left out.
// `pairs` holds the half's 32 levels two to a word, as int16 levels lie in memory on
// the little-endian hosts and GPUs this runs on.
CONVEYOR_HD inline uint32_t HalfNonzeroMask(const uint32_t* pairs, int half) {
  uint32_t m = 0;
  for (int j = 0; j < 16; ++j) {
    const uint32_t v = pairs[j];
    m |= static_cast<uint32_t>((v & 0xFFFFu) != 0) << (2 * j);
    m |= static_cast<uint32_t>((v >> 16) != 0) << (2 * j + 1);
  }
  return half == 0 ? m & ~1u : m;
}

// One half of EncodeBlock, as the GPU codes a block on two threads: half 0 is the DC
// difference and the AC levels 1..31, half 1 the AC levels 32..63 and the EOB. `low` and
// `high` mark the non-zero AC levels (HalfNonzeroMask of each half); half 1 takes the
// zero run that crosses the split from `low`, and only it can end the block. Both
// halves, one after the other, write exactly EncodeBlock's bits.
template <class Writer, class Table>
CONVEYOR_HD inline void EncodeHalfBlock(Writer& w, const int16_t* levels, uint32_t low, uint32_t high, int half,
                                        int32_t dc_diff, const Table& dc, const Table& ac) {
  int last = 0, base = 0;
  uint32_t mine = low;
  if (half == 0) {
    PutValue(w, dc, 0, dc_diff);
  } else {
    if (low != 0) last = HighestSetBit32(low);
    base = 32;
    mine = high;
  }
  while (mine != 0) {
    const int k = base + LowestSetBit32(mine);
    mine &= mine - 1;
    int run = k - last - 1;
    while (run > 15) {
      PutSymbol(w, ac, 0xF0, 0, 0);  // ZRL: sixteen zeros
      run -= 16;
    }
    PutValue(w, ac, run << 4, levels[k]);
    last = k;
  }
  if (half == 1 && (high >> 31) == 0) PutSymbol(w, ac, 0x00, 0, 0);  // EOB
}

// Codes segment `segment` (global index) whose blocks start at `band_levels` (the band's
// level buffer in scan order, 64 levels a block) and writes it to `out`. Returns the byte
// count, or UINT32_MAX if `capacity` was too small (not reachable with the plan's
// segment_capacity, but never written past).
CONVEYOR_HD inline uint32_t EncodeSegment(const EncodePlan& p, const EncodeTables& t,
                                          const int16_t* band_levels, int band, int segment,
                                          uint8_t* out, uint32_t capacity) {
  const int band_first_mcu = p.BandFirstMcu(band);
  const int band_end_mcu = band_first_mcu + p.BandMcus(band);
  const int first_mcu = segment * p.segment_mcus;
  const int end_mcu = first_mcu + p.segment_mcus < band_end_mcu ? first_mcu + p.segment_mcus
                                                                   : band_end_mcu;
  BitWriter w{out, 0, capacity, 0, 0, false};
  int32_t last_dc[3] = {0, 0, 0};
  for (int mcu = first_mcu; mcu < end_mcu; ++mcu) {
    const int16_t* mcu_levels =
        band_levels + static_cast<size_t>(mcu - band_first_mcu) * p.blocks_per_mcu * 64;
    for (int j = 0; j < p.blocks_per_mcu; ++j) {
      const int c = p.block_comp[j];
      const int cls = p.comp[c].quant;
      EncodeBlock(w, mcu_levels + j * 64, &last_dc[c], t.dc[cls], t.ac[cls]);
    }
  }
  FlushWithPadding(w);
  return w.overflow ? UINT32_MAX : w.pos;
}

// The band-local index of the block coded before block `i` in the same component and the
// same restart segment, or -1 when block i starts its component's DC prediction.
CONVEYOR_HD inline int PreviousBlockSameComponent(const EncodePlan& p, int band, int i) {
  const int mcu = i / p.blocks_per_mcu;
  const int j = i - mcu * p.blocks_per_mcu;
  const int c = p.block_comp[j];
  if (j > 0 && p.block_comp[j - 1] == c) return i - 1;
  const int global_mcu = p.BandFirstMcu(band) + mcu;
  if (global_mcu % p.segment_mcus == 0) return -1;  // first MCU of its segment
  int last = j;
  while (last + 1 < p.blocks_per_mcu && p.block_comp[last + 1] == c) ++last;
  return (mcu - 1) * p.blocks_per_mcu + last;
}

// Stage 4 helper: the marker that follows segment `segment`, if any (none after the last).
CONVEYOR_HD inline int WriteRestartMarker(const EncodePlan& p, int segment, uint8_t* out) {
  if (p.restart_interval == 0 || segment == p.num_segments - 1) return 0;
  out[0] = 0xFF;
  out[1] = static_cast<uint8_t>(0xD0 + (segment & 7));
  return 2;
}

}  // namespace conveyor
