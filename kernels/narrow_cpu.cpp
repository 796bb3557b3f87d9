// The narrow stage on the host (see narrow_cpu.h): row loops over NarrowValue with the
// row's two dither offsets fixed, the range's form chosen once a plane.
#include "narrow_cpu.h"

#include <cstddef>

namespace conveyor {
namespace {

// One row of `bytes` destination bytes from the row's 16-bit samples. Destination byte b
// takes the dither of column b >> kPairShift (0 for luma, 1 for chroma's Cb,Cr pairs).
template <bool kRescale, int kPairShift>
void NarrowRow(const uint8_t* src, int bytes, int row, uint8_t* dst) {
  const unsigned even = NarrowDither(0, row), odd = NarrowDither(1, row);
  for (int b = 0; b < bytes; ++b) {
    const unsigned d = ((b >> kPairShift) & 1) != 0 ? odd : even;
    dst[b] = NarrowValue(P010Value(src + 2 * static_cast<size_t>(b)), d, kRescale);
  }
}

template <bool kRescale, int kPairShift>
void NarrowPlane(const uint8_t* src, int stride, int row_bytes, int rows, uint8_t* dst) {
  for (int r = 0; r < rows; ++r) {
    NarrowRow<kRescale, kPairShift>(src + static_cast<size_t>(r) * stride, row_bytes, r,
                                    dst + static_cast<size_t>(r) * row_bytes);
  }
}

}  // namespace

void NarrowP010ToNv12(const uint8_t* y, int y_stride, const uint8_t* uv, int uv_stride, int width, int height,
                      bool full_range, uint8_t* dst_packed_nv12) {
  const NarrowPlan plan = MakeNarrowPlan(width, height, full_range);
  if (full_range) {
    NarrowPlane<true, 0>(y, y_stride, width, height, dst_packed_nv12);
  } else {
    NarrowPlane<false, 0>(y, y_stride, width, height, dst_packed_nv12);
  }
  // Chroma takes the shift-then-clip form in either range, as libswscale narrows it.
  NarrowPlane<false, 1>(uv, uv_stride, plan.chroma_row_bytes, plan.chroma_rows,
                        dst_packed_nv12 + plan.chroma_offset);
}

}  // namespace conveyor
