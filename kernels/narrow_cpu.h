// Host execution of the narrow stage: a P010 picture in host memory (a hardware
// decoder's surface transferred) to 8-bit NV12 in the packed layout, each sample
// NarrowSample (stage_narrow.h), so the bytes of the GPU kernel (gpu_narrow.h) and of
// libswscale's yuv420p10 to yuv420p.
#pragma once

#include <cstdint>

#include "stage_narrow.h"

namespace conveyor {

// Narrows the P010 planes `y` (width 16-bit samples a row, `height` rows) and `uv`
// ((width + 1) / 2 Cb,Cr pairs a row, (height + 1) / 2 rows), rows `y_stride` and
// `uv_stride` bytes apart (any pitch of at least a row), into `dst_packed_nv12`, which
// holds MakeNarrowPlan(width, height, full_range).dst_size bytes. `full_range` is the
// frame's range (JPEG range). Width and height are at least 1.
void NarrowP010ToNv12(const uint8_t* y, int y_stride, const uint8_t* uv, int uv_stride, int width, int height,
                      bool full_range, uint8_t* dst_packed_nv12);

}  // namespace conveyor
