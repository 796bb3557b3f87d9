// The geometry of one rendition scale, derived once on the host from the pixel format
// and the two sizes: per plane, source and destination samples, interleaved channels and
// the resolved filters, plus the destination's packed layout. A flat POD passed by value
// to the GPU kernel and used unchanged by the CPU path.
#pragma once

#include <cstddef>

#include "frame.h"
#include "stage_scale.h"
#include "status.h"

namespace conveyor {

struct ScalePlan {
  PixelFormat format;
  int src_width, src_height;
  int dst_width, dst_height;
  int num_planes;
  ScalePlaneGeom plane[3];
  // Destination in the packed layout (PackedPlaneGeometry of the destination size).
  size_t dst_offset[3];
  int dst_row_bytes[3];
  size_t dst_size;

  // Bytes per row of the source plane `p` when tightly packed (the smallest stride).
  int SrcRowBytes(int p) const { return plane[p].src_w * plane[p].channels; }
};

// "auto", "area" or "bilinear".
const char* ScaleFilterName(ScaleFilter f);

// Checks the format and the four dimensions (1..kMaxDimension each; the Status names
// the one that is not) and resolves kAuto plane by plane and dimension by dimension.
StatusOr<ScalePlan> MakeScalePlan(PixelFormat format, int src_width, int src_height,
                                  int dst_width, int dst_height,
                                  ScaleFilter filter = ScaleFilter::kAuto);

}  // namespace conveyor
