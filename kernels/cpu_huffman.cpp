// Host Huffman coder.
#include "cpu_huffman.h"

#include <cstring>

#include "hd.h"

namespace conveyor {
namespace {

typedef int16_t Levels8 __attribute__((vector_size(16)));
typedef int8_t Bytes8 __attribute__((vector_size(8)));

// Bit k set when levels[k] != 0, k = 1..63 (bit 0, the DC, cleared).
inline uint64_t NonzeroMask(const int16_t* levels) {
  uint64_t mask = 0;
  for (int i = 0; i < 64; i += 8) {
    Levels8 v;
    std::memcpy(&v, levels + i, sizeof(v));
    const Bytes8 nz = __builtin_convertvector(v != 0, Bytes8) & 1;  // 0 or 1 per byte
    uint64_t bytes;
    std::memcpy(&bytes, &nz, sizeof(bytes));
    // Gathers bit 0 of each byte j into bit j of the top byte (no carries: disjoint bits).
    mask |= ((bytes * 0x0102040810204080ULL) >> 56) << i;
  }
  return mask & ~uint64_t{1};
}

struct Writer {
  uint8_t* out;
  uint64_t acc = 0;  // pending bits, right-aligned
  int nbits = 0;     // < 32 between calls

  void Put(uint32_t bits, int size) {  // size <= 27
    acc = (acc << size) | bits;
    nbits += size;
    if (nbits >= 32) {
      nbits -= 32;
      const uint32_t word = static_cast<uint32_t>(acc >> nbits);
      // Any 0xFF byte in the word? (a zero byte in its complement)
      const uint32_t inv = ~word;
      if (((inv - 0x01010101u) & ~inv & 0x80808080u) == 0) {
        const uint32_t be = __builtin_bswap32(word);
        std::memcpy(out, &be, 4);
        out += 4;
      } else {
        for (int shift = 24; shift >= 0; shift -= 8) Byte(static_cast<uint8_t>(word >> shift));
      }
    }
  }

  void Byte(uint8_t b) {
    *out++ = b;
    if (b == 0xFF) *out++ = 0x00;
  }

  // Pads the last byte with 1-bits (T.81 F.1.2.3) and writes what is pending.
  void Finish() {
    if (nbits % 8 != 0) {
      const int pad = 8 - nbits % 8;
      acc = (acc << pad) | ((1u << pad) - 1);
      nbits += pad;
    }
    while (nbits >= 8) {
      nbits -= 8;
      Byte(static_cast<uint8_t>(acc >> nbits));
    }
  }
};

// libjpeg-turbo's jchuff.c forms the value bits the same way, without branches: with s
// the sign mask (0 or -1), |v| = (v ^ s) - s, and v + s is v for v > 0 and v - 1 (the
// one's complement of |v|) for v < 0, whose low n bits are the ones T.81 F.1.2.1 sends.
// kNonzero: v is an AC level from the nonzero mask, so its bit length needs no zero check.
template <bool kNonzero>
inline void PutValue(Writer& w, const uint32_t* table, int run_high, int32_t v) {
  const int32_t sign = v >> 31;
  const uint32_t magnitude = static_cast<uint32_t>((v ^ sign) - sign);
  const int n = kNonzero ? HighestSetBit32(magnitude) + 1 : BitLength(magnitude);
  const uint32_t extra = static_cast<uint32_t>(v + sign) & ((1u << n) - 1);
  const uint32_t entry = table[run_high | n];
  w.Put(((entry >> 8) << n) | extra, static_cast<int>(entry & 0xFF) + n);
}

inline void EncodeBlockHost(Writer& w, const int16_t* levels, uint64_t nonzero, int32_t* last_dc,
                            const uint32_t* dc, const uint32_t* ac) {
  const int32_t diff = levels[0] - *last_dc;
  *last_dc = levels[0];
  PutValue<false>(w, dc, 0, diff);
  int last = 0;
  while (nonzero != 0) {
    const int k = LowestSetBit64(nonzero);
    nonzero &= nonzero - 1;
    int run = k - last - 1;
    while (run > 15) {
      w.Put(ac[0xF0] >> 8, ac[0xF0] & 0xFF);  // ZRL
      run -= 16;
    }
    PutValue<true>(w, ac, run << 4, levels[k]);
    last = k;
  }
  if (last != 63) w.Put(ac[0x00] >> 8, ac[0x00] & 0xFF);  // EOB
}

}  // namespace

void BuildHostHuffTables(const EncodeTables& t, HostHuffTables* out) {
  std::memset(out, 0, sizeof(*out));
  for (int c = 0; c < 2; ++c) {
    for (int s = 0; s < 16; ++s) out->dc[c][s] = (uint32_t{t.dc[c].code[s]} << 8) | t.dc[c].size[s];
    for (int s = 0; s < 256; ++s) out->ac[c][s] = (uint32_t{t.ac[c].code[s]} << 8) | t.ac[c].size[s];
  }
}

// Built twice, as the encoder's other hot stages are (cpu_encoder.cpp): for x86-64-v3
// (BMI2's flag-free shifts, LZCNT and TZCNT for the bit lengths and the run scan) and for
// baseline x86-64; the loader picks one. Integer code: the same bytes.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
__attribute__((target_clones("arch=x86-64-v3", "default"), flatten))
#endif
uint32_t EncodeSegmentHost(const EncodePlan& p, const HostHuffTables& t, const int16_t* band_levels, int band,
                           int segment, uint8_t* out, const uint64_t* band_nonzero) {
  const int band_first_mcu = p.BandFirstMcu(band);
  const int band_end_mcu = band_first_mcu + p.BandMcus(band);
  const int first_mcu = segment * p.segment_mcus;
  const int end_mcu = first_mcu + p.segment_mcus < band_end_mcu ? first_mcu + p.segment_mcus : band_end_mcu;
  Writer w{out};
  int32_t last_dc[3] = {0, 0, 0};
  for (int mcu = first_mcu; mcu < end_mcu; ++mcu) {
    const size_t mcu_block = static_cast<size_t>(mcu - band_first_mcu) * p.blocks_per_mcu;
    for (int j = 0; j < p.blocks_per_mcu; ++j) {
      const int c = p.block_comp[j];
      const int cls = p.comp[c].quant;
      const int16_t* levels = band_levels + (mcu_block + j) * 64;
      const uint64_t nonzero = band_nonzero != nullptr ? band_nonzero[mcu_block + j] : NonzeroMask(levels);
      EncodeBlockHost(w, levels, nonzero, &last_dc[c], t.dc[cls], t.ac[cls]);
    }
  }
  w.Finish();
  return static_cast<uint32_t>(w.out - out);
}

}  // namespace conveyor
