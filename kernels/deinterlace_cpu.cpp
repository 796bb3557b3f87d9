// The deinterlace plan and the host path (see stage_deinterlace.h).
#include "deinterlace_cpu.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace conveyor {

StatusOr<DeinterlacePlan> MakeDeinterlacePlan(PixelFormat format, int width, int height, bool top_field_first) {
  if (width < 1 || height < 1 || width > kMaxDimension || height > kMaxDimension) {
    return InvalidArgument("deinterlace: frame size " + std::to_string(width) + "x" + std::to_string(height) +
                           " is outside 1x1.." + std::to_string(kMaxDimension));
  }
  const FormatLayout l = LayoutOf(format);
  if (l.kind == LayoutKind::kPackedRgb) {
    return InvalidArgument(std::string("deinterlace: ") + PixelFormatName(format) +
                           " is packed RGB; the stage takes planar and semi-planar YUV");
  }
  DeinterlacePlan p{};
  p.format = format;
  p.width = width;
  p.height = height;
  p.top_field_first = top_field_first;
  p.num_planes = l.num_planes;
  const PlaneGeometry g = PackedPlaneGeometry(format, width, height);
  for (int i = 0; i < 3; ++i) {
    p.dst_offset[i] = g.offset[i];
    p.dst_row_bytes[i] = g.row_bytes[i];
  }
  for (int i = 0; i < p.num_planes; ++i) {
    DeinterlacePlaneGeom& pg = p.plane[i];
    pg.channels = l.kind == LayoutKind::kSemiPlanarYuv && i == 1 ? 2 : 1;
    pg.w = g.row_bytes[i] / pg.channels;
    pg.h = g.rows[i];
  }
  p.dst_size = PackedFrameSize(format, width, height);
  return p;
}

namespace {

Status CheckFrame(const FrameView& f, const DeinterlacePlan& plan, const char* which) {
  RETURN_IF_ERROR(ValidateFrame(f));
  if (f.format != plan.format || f.width != plan.width || f.height != plan.height) {
    return InvalidArgument(std::string("deinterlace: the ") + which + " frame (" + PixelFormatName(f.format) + " " +
                           std::to_string(f.width) + "x" + std::to_string(f.height) + ") is not the plan's " +
                           PixelFormatName(plan.format) + " " + std::to_string(plan.width) + "x" +
                           std::to_string(plan.height));
  }
  return OkStatus();
}

// Channel k of interpolated line y into `out` (that channel's byte of the line's first
// sample): the three columns at each side without the spatial check, those between with
// it, and the channel count fixed at compile time, so that the long middle runs without a
// test per sample.
template <int kChannels>
void InterpolateLine(const DeinterlaceInputs& in, const DeinterlaceLines& lines, int w, int y, uint8_t* out) {
  const int middle_begin = std::min(w, 3);
  const int middle_end = std::max(middle_begin, w - 3);
  for (int x = 0; x < middle_begin; ++x) out[x * kChannels] = DeinterlaceSampleWith<false, kChannels>(in, lines, x, y);
  for (int x = middle_begin; x < middle_end; ++x) {
    out[x * kChannels] = DeinterlaceSampleWith<true, kChannels>(in, lines, x, y);
  }
  for (int x = middle_end; x < w; ++x) out[x * kChannels] = DeinterlaceSampleWith<false, kChannels>(in, lines, x, y);
}

}  // namespace

Status DeinterlaceFrameOnHost(const FrameView& prev, const FrameView& cur, const FrameView& next,
                              const DeinterlacePlan& plan, uint8_t* dst_packed) {
  RETURN_IF_ERROR(CheckFrame(prev, plan, "previous"));
  RETURN_IF_ERROR(CheckFrame(cur, plan, "current"));
  RETURN_IF_ERROR(CheckFrame(next, plan, "next"));
  const FrameView* frames[3] = {&prev, &cur, &next};
  for (int i = 0; i < plan.num_planes; ++i) {
    const DeinterlacePlaneGeom& g = plan.plane[i];
    const size_t row_bytes = static_cast<size_t>(g.w) * g.channels;
    for (int y = 0; y < g.h; ++y) {
      uint8_t* out = dst_packed + plan.dst_offset[i] + static_cast<size_t>(y) * plan.dst_row_bytes[i];
      if (DeinterlaceKeepsLine(plan.top_field_first, y)) {
        std::memcpy(out, cur.plane[i] + static_cast<size_t>(y) * cur.stride[i], row_bytes);
        continue;
      }
      const DeinterlaceLines lines = DeinterlaceLinesOf(y, g.h);
      for (int k = 0; k < g.channels; ++k) {
        DeinterlaceInputs in{};
        for (int f = 0; f < 3; ++f) {
          in.base[f] = frames[f]->plane[i] + k;
          in.stride[f] = frames[f]->stride[i];
        }
        in.channels = g.channels;
        if (g.channels == 2) {
          InterpolateLine<2>(in, lines, g.w, y, out + k);
        } else {
          InterpolateLine<1>(in, lines, g.w, y, out + k);
        }
      }
    }
  }
  return OkStatus();
}

StatusOr<DeinterlacedFrame> DeinterlaceFrameToOwned(const FrameView& prev, const FrameView& cur,
                                                    const FrameView& next, bool top_field_first) {
  ASSIGN_OR_RETURN(const DeinterlacePlan plan, MakeDeinterlacePlan(cur.format, cur.width, cur.height, top_field_first));
  DeinterlacedFrame out;
  out.bytes.resize(plan.dst_size);
  RETURN_IF_ERROR(DeinterlaceFrameOnHost(prev, cur, next, plan, out.bytes.data()));
  ASSIGN_OR_RETURN(out.view, MakePackedFrameView(out.bytes.data(), out.bytes.size(), plan.width, plan.height,
                                                 plan.format, cur.matrix, cur.range));
  return out;
}

}  // namespace conveyor
