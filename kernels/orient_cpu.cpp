// The orientation plan, the EXIF mapping and the host copy (see stage_orient.h).
#include "orient_cpu.h"

#include <cstring>
#include <string>

namespace conveyor {
namespace {

// EXIF Orientation 1..8 as (transpose, flip_x, flip_y), index 0 unused (TIFF 6.0 tag 274).
constexpr Orientation kExif[9] = {
    {},
    {false, false, false},  // 1: as stored
    {false, true, false},   // 2: mirrored
    {false, true, true},    // 3: rotated 180
    {false, false, true},   // 4: mirrored vertically
    {true, false, false},   // 5: transposed (mirror, then 270 clockwise)
    {true, false, true},    // 6: rotated 90 clockwise
    {true, true, true},     // 7: transversed (mirror, then 90 clockwise)
    {true, true, false},    // 8: rotated 270 clockwise
};
constexpr int kDegrees[9] = {0, 0, 0, 180, 180, 270, 90, 90, 270};
constexpr bool kMirrors[9] = {false, false, true, false, true, true, false, true, false};
const char* const kNames[9] = {"none",     "none",         "mirror",     "rotate 180",   "mirror + rotate 180",
                               "mirror + rotate 270", "rotate 90", "mirror + rotate 90", "rotate 270"};

// Bytes per sample of plane `p` of a format.
int ChannelsOf(const FormatLayout& l, int p) {
  if (l.kind == LayoutKind::kPackedRgb) return l.bytes_per_pixel;
  if (l.kind == LayoutKind::kSemiPlanarYuv && p == 1) return 2;
  return 1;
}

}  // namespace

int ExifOrientation(Orientation o) {
  for (int e = 1; e <= 8; ++e) {
    if (kExif[e] == o) return e;
  }
  return 1;
}

Orientation OrientationFromExif(int exif) { return exif >= 1 && exif <= 8 ? kExif[exif] : Orientation{}; }
int OrientationDegrees(Orientation o) { return kDegrees[ExifOrientation(o)]; }
bool OrientationMirrors(Orientation o) { return kMirrors[ExifOrientation(o)]; }
const char* OrientationName(Orientation o) { return kNames[ExifOrientation(o)]; }

StatusOr<OrientPlan> MakeOrientPlan(PixelFormat format, int width, int height, Orientation o) {
  if (width < 1 || height < 1 || width > kMaxDimension || height > kMaxDimension) {
    return InvalidArgument("orientation: frame size " + std::to_string(width) + "x" + std::to_string(height) +
                           " is outside 1x1.." + std::to_string(kMaxDimension));
  }
  const FormatLayout l = LayoutOf(format);
  OrientPlan p{};
  p.orientation = o;
  p.src_format = format;
  // A transposed 4:2:2 plane would be 4:4:0: its chroma rows are doubled into 4:4:4.
  const bool doubled_rows = o.transpose && format == PixelFormat::kYuv422p;
  p.dst_format = doubled_rows ? PixelFormat::kYuv444p : format;
  p.src_width = width;
  p.src_height = height;
  p.dst_width = o.transpose ? height : width;
  p.dst_height = o.transpose ? width : height;
  p.num_planes = l.num_planes;
  const PlaneGeometry src = PackedPlaneGeometry(format, width, height);
  const PlaneGeometry dst = PackedPlaneGeometry(p.dst_format, p.dst_width, p.dst_height);
  for (int i = 0; i < p.num_planes; ++i) {
    OrientPlaneGeom& g = p.plane[i];
    g.channels = ChannelsOf(l, i);
    g.src_w = src.row_bytes[i] / g.channels;
    g.src_h = src.rows[i];
    g.dst_w = dst.row_bytes[i] / g.channels;
    g.dst_h = dst.rows[i];
    g.dst_shift_y = doubled_rows && i > 0 ? 1 : 0;
    // Every destination sample must read inside the source plane.
    const int turned_w = o.transpose ? g.src_h : g.src_w;
    const int turned_h = (o.transpose ? g.src_w : g.src_h) << g.dst_shift_y;
    if (g.dst_w != turned_w || g.dst_h > turned_h) {
      return Internal("orientation: plane " + std::to_string(i) + " of " + PixelFormatName(format) + " " +
                      std::to_string(width) + "x" + std::to_string(height) + " does not map onto its turn");
    }
  }
  for (int i = 0; i < 3; ++i) {
    p.dst_offset[i] = dst.offset[i];
    p.dst_row_bytes[i] = dst.row_bytes[i];
  }
  p.dst_size = PackedFrameSize(p.dst_format, p.dst_width, p.dst_height);
  return p;
}

Status OrientFrameOnHost(const FrameView& src, const OrientPlan& plan, uint8_t* dst_packed) {
  RETURN_IF_ERROR(ValidateFrame(src));
  if (src.format != plan.src_format || src.width != plan.src_width || src.height != plan.src_height) {
    return InvalidArgument("orientation: the frame is not the plan's source");
  }
  const Orientation o = plan.orientation;
  for (int i = 0; i < plan.num_planes; ++i) {
    const OrientPlaneGeom& g = plan.plane[i];
    const int c = g.channels;
    for (int dy = 0; dy < g.dst_h; ++dy) {
      uint8_t* out = dst_packed + plan.dst_offset[i] + static_cast<size_t>(dy) * plan.dst_row_bytes[i];
      if (!o.transpose) {
        // A whole source row, forwards or backwards.
        int sx = 0, sy = 0;
        OrientSource(o, g, 0, dy, &sx, &sy);
        const uint8_t* row = src.plane[i] + static_cast<size_t>(sy) * src.stride[i];
        if (!o.flip_x) {
          std::memcpy(out, row, static_cast<size_t>(g.dst_w) * c);
          continue;
        }
        for (int dx = 0; dx < g.dst_w; ++dx) std::memcpy(out + dx * c, row + (g.src_w - 1 - dx) * c, c);
        continue;
      }
      for (int dx = 0; dx < g.dst_w; ++dx) {
        int sx = 0, sy = 0;
        OrientSource(o, g, dx, dy, &sx, &sy);
        std::memcpy(out + dx * c, src.plane[i] + static_cast<size_t>(sy) * src.stride[i] + sx * c, c);
      }
    }
  }
  return OkStatus();
}

StatusOr<OrientedFrame> OrientFrameToOwned(const FrameView& src, Orientation o) {
  ASSIGN_OR_RETURN(const OrientPlan plan, MakeOrientPlan(src.format, src.width, src.height, o));
  OrientedFrame out;
  out.bytes.resize(plan.dst_size);
  RETURN_IF_ERROR(OrientFrameOnHost(src, plan, out.bytes.data()));
  ASSIGN_OR_RETURN(out.view, MakePackedFrameView(out.bytes.data(), out.bytes.size(), plan.dst_width, plan.dst_height,
                                                 plan.dst_format, src.matrix, src.range));
  return out;
}

}  // namespace conveyor
