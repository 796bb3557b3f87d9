// Builds ScalePlans: plane sizes from the packed layouts of both frame sizes, filters
// resolved per plane and dimension.
#include "scale_plan.h"

#include <string>

namespace conveyor {
namespace {

Status CheckDimension(const char* field, int v) {
  if (v < 1 || v > kMaxDimension) {
    return InvalidArgument(std::string(field) + " " + std::to_string(v) + " is out of range 1.." +
                           std::to_string(kMaxDimension));
  }
  return OkStatus();
}

// Chroma planes follow the luma direction or keep their size (ceil(n / 2) is monotonic),
// so resolving per plane never mixes directions between the planes of one frame.
ScaleFilter Resolve(ScaleFilter f, int src, int dst) {
  if (f != ScaleFilter::kAuto) return f;
  return dst <= src ? ScaleFilter::kArea : ScaleFilter::kBilinear;
}

}  // namespace

const char* ScaleFilterName(ScaleFilter f) {
  switch (f) {
    case ScaleFilter::kAuto: return "auto";
    case ScaleFilter::kArea: return "area";
    case ScaleFilter::kBilinear: return "bilinear";
  }
  return "unknown";
}

StatusOr<ScalePlan> MakeScalePlan(PixelFormat format, int src_width, int src_height,
                                  int dst_width, int dst_height, ScaleFilter filter) {
  // frame.cpp keeps its format table private; a name that parses back is a known format.
  if (!ParsePixelFormat(PixelFormatName(format)).ok()) {
    return InvalidArgument("format " + std::to_string(static_cast<int>(format)) +
                           " is not a known pixel format");
  }
  if (filter != ScaleFilter::kAuto && filter != ScaleFilter::kArea &&
      filter != ScaleFilter::kBilinear) {
    return InvalidArgument("filter " + std::to_string(static_cast<int>(filter)) +
                           " is not a known scale filter");
  }
  RETURN_IF_ERROR(CheckDimension("src_width", src_width));
  RETURN_IF_ERROR(CheckDimension("src_height", src_height));
  RETURN_IF_ERROR(CheckDimension("dst_width", dst_width));
  RETURN_IF_ERROR(CheckDimension("dst_height", dst_height));

  ScalePlan p{};
  p.format = format;
  p.src_width = src_width;
  p.src_height = src_height;
  p.dst_width = dst_width;
  p.dst_height = dst_height;
  const FormatLayout l = LayoutOf(format);
  p.num_planes = l.num_planes;
  const PlaneGeometry sg = PackedPlaneGeometry(format, src_width, src_height);
  const PlaneGeometry dg = PackedPlaneGeometry(format, dst_width, dst_height);
  for (int i = 0; i < p.num_planes; ++i) {
    int channels = 1;
    if (l.kind == LayoutKind::kPackedRgb) channels = l.bytes_per_pixel;
    if (l.kind == LayoutKind::kSemiPlanarYuv && i == 1) channels = 2;
    ScalePlaneGeom& g = p.plane[i];
    g.channels = channels;
    g.src_w = sg.row_bytes[i] / channels;
    g.src_h = sg.rows[i];
    g.dst_w = dg.row_bytes[i] / channels;
    g.dst_h = dg.rows[i];
    g.filter_x = Resolve(filter, g.src_w, g.dst_w);
    g.filter_y = Resolve(filter, g.src_h, g.dst_h);
    g.reciprocal = ScaleReciprocal(static_cast<uint64_t>(AxisTotal(g.src_w, g.filter_x)) *
                                   AxisTotal(g.src_h, g.filter_y));
    p.dst_offset[i] = dg.offset[i];
    p.dst_row_bytes[i] = dg.row_bytes[i];
  }
  p.dst_size = PackedFrameSize(format, dst_width, dst_height);
  return p;
}

}  // namespace conveyor
