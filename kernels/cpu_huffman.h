// Stage 3 on the host, tuned for CPUs: the same bytes as EncodeSegment (stage_huffman.h,
// which the GPU path runs), written with a 64-bit accumulator that flushes 32 bits at a
// time and stuffs byte by byte only when one of them is 0xFF, merged code/length tables,
// and a nonzero mask built eight levels at a time. A unit test holds it to EncodeSegment.
#pragma once

#include <cstdint>

#include "encode_plan.h"
#include "jpeg_tables.h"

namespace conveyor {

// (code << 8) | length for every symbol, per table class.
struct HostHuffTables {
  uint32_t dc[2][16];
  uint32_t ac[2][256];
};

void BuildHostHuffTables(const EncodeTables& t, HostHuffTables* out);

// As EncodeSegment: codes `segment` of `band` into `out` (at least plan.segment_capacity
// bytes) and returns the byte count. `band_nonzero`, when given, holds each block's mask
// of nonzero AC levels (bit k for zigzag level k), as the SIMD DCT stages make them.
uint32_t EncodeSegmentHost(const EncodePlan& p, const HostHuffTables& t, const int16_t* band_levels, int band,
                           int segment, uint8_t* out, const uint64_t* band_nonzero = nullptr);

}  // namespace conveyor
