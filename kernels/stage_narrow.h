// The narrow stage: a hardware decoder's 10-bit 4:2:0 surface (P010: a luma plane, then
// a plane of interleaved Cb,Cr pairs, 16-bit little-endian samples holding the value in
// their top 10 bits) to 8-bit NV12, with the same sample values that libswscale (FFmpeg
// 5.1) gives for the same picture as yuv420p10 narrowed to yuv420p at the same size and
// range, which is what the daemon does with a CPU decoder's 10-bit frames. NarrowSample
// gives one destination sample in integers, so the GPU kernel (a thread per sample) and
// the CPU path give the same bytes, and JPEGs from either decoder are byte-identical.
//
// libswscale takes its unscaled planar copy for that conversion (planarCopyWrapper): each
// sample gets an ordered-dither offset for its position, then loses its two low bits.
// Which of two forms runs depends on the plane and the range:
//   chroma (either range), and luma of limited range:
//       t = (v + d) >> 2;  out = t - (t >> 8)          (t = 256 only for v >= 1021)
//   luma of full range, where 1023 must land on 255 exactly:
//       out = (v - (v >> 8) + d) >> 2
// d is libswscale's ordered dither for a 2-bit shift, indexed by the sample's row and
// column within its own plane (for chroma, of the Cb,Cr pair): its 8x8 table repeats
// every two rows and columns, {1, 2} on even rows and {3, 0} on odd ones. libswscale
// picks it under its default dither setting; SWS_DITHER_NONE would shift without it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "hd.h"

namespace conveyor {

// The ordered-dither offset of the sample at column x, row y of its plane: the same
// ordered-dither values as libswscale's `dithers` table for a shift of 2 (its second 8x8
// table), which are
//   row 0, 2, 4, 6: 1 2 1 2 1 2 1 2
//   row 1, 3, 5, 7: 3 0 3 0 3 0 3 0
// held here as its 2x2 period, a nibble each: (row parity, column parity) = (0,0) 1,
// (0,1) 2, (1,0) 3, (1,1) 0.
constexpr unsigned kNarrowDither2x2 = 0x0321;

CONVEYOR_HD inline unsigned NarrowDither(int x, int y) {
  const unsigned index = (static_cast<unsigned>(y) & 1u) << 1 | (static_cast<unsigned>(x) & 1u);
  return (kNarrowDither2x2 >> (4 * index)) & 0xFu;
}

// A 10-bit value (0..1023) with its dither offset `d` to 8 bits. `rescale` is the full
// range luma form (1023 maps to 255 through the subtraction before the shift), else the
// shift-then-clip form that libswscale runs on chroma and on limited-range luma.
CONVEYOR_HD inline uint8_t NarrowValue(unsigned value10, unsigned d, bool rescale) {
  if (rescale) return static_cast<uint8_t>((value10 - (value10 >> 8) + d) >> 2);
  const unsigned t = (value10 + d) >> 2;
  return static_cast<uint8_t>(t - (t >> 8));
}

// Destination sample of a 10-bit value at column x, row y of its plane (for NV12 chroma,
// x is the column of the Cb,Cr pair, the same for both of its bytes).
CONVEYOR_HD inline uint8_t NarrowSample(unsigned value10, int x, int y, bool chroma, bool full_range) {
  return NarrowValue(value10, NarrowDither(x, y), full_range && !chroma);
}

// The 10-bit value of the P010 sample at `p` (two bytes, little-endian, value << 6); the
// six low bits are not part of it. Read a byte at a time, so rows may have any pitch.
CONVEYOR_HD inline unsigned P010Value(const uint8_t* p) {
  return (static_cast<unsigned>(p[0]) | static_cast<unsigned>(p[1]) << 8) >> 6;
}

// One narrowing of a width x height frame. The source has the chroma plane of 4:2:0 at
// odd sizes too: (width + 1) / 2 pairs a row, (height + 1) / 2 rows. The destination is
// NV12 in the packed layout (PackedPlaneGeometry(PixelFormat::kNv12, width, height)):
// width x height luma bytes, then chroma_rows rows of chroma_row_bytes.
struct NarrowPlan {
  int width = 0, height = 0;
  bool full_range = false;
  int chroma_row_bytes = 0;  // 2 bytes (Cb, Cr) a pair
  int chroma_rows = 0;
  size_t chroma_offset = 0;  // of the chroma plane in the destination
  size_t dst_size = 0;
};

CONVEYOR_HD inline NarrowPlan MakeNarrowPlan(int width, int height, bool full_range) {
  NarrowPlan p;
  p.width = width;
  p.height = height;
  p.full_range = full_range;
  p.chroma_row_bytes = 2 * ((width + 1) / 2);
  p.chroma_rows = (height + 1) / 2;
  p.chroma_offset = static_cast<size_t>(width) * height;
  p.dst_size = p.chroma_offset + static_cast<size_t>(p.chroma_row_bytes) * p.chroma_rows;
  return p;
}

// Destination byte b of row y of a plane (chroma: of the interleaved plane), from that
// plane's source row: byte b narrows the 16-bit sample b of the row. Chroma bytes 2k and
// 2k + 1 are pair k's Cb and Cr and share its dither.
CONVEYOR_HD inline uint8_t NarrowByte(const uint8_t* src_row, int b, int y, bool chroma, bool full_range) {
  return NarrowSample(P010Value(src_row + 2 * b), chroma ? b >> 1 : b, y, chroma, full_range);
}

}  // namespace conveyor
