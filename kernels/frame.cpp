// Pixel format names, layouts and frame validation.
#include "frame.h"

#include <array>
#include <cstring>

namespace conveyor {
namespace {

struct FormatInfo {
  PixelFormat format;
  const char* name;
  FormatLayout layout;
};

constexpr std::array<FormatInfo, 9> kFormats = {{
    {PixelFormat::kYuv420p, "yuv420p", {LayoutKind::kPlanarYuv, 3, 1, 1, 1, 0, 0, 0}},
    {PixelFormat::kYuvj420p, "yuvj420p", {LayoutKind::kPlanarYuv, 3, 1, 1, 1, 0, 0, 0}},
    {PixelFormat::kNv12, "nv12", {LayoutKind::kSemiPlanarYuv, 2, 1, 1, 1, 0, 0, 0}},
    {PixelFormat::kYuv422p, "yuv422p", {LayoutKind::kPlanarYuv, 3, 1, 0, 1, 0, 0, 0}},
    {PixelFormat::kYuv444p, "yuv444p", {LayoutKind::kPlanarYuv, 3, 0, 0, 1, 0, 0, 0}},
    {PixelFormat::kRgb24, "rgb24", {LayoutKind::kPackedRgb, 1, 0, 0, 3, 0, 1, 2}},
    {PixelFormat::kBgr24, "bgr24", {LayoutKind::kPackedRgb, 1, 0, 0, 3, 2, 1, 0}},
    {PixelFormat::kRgba, "rgba", {LayoutKind::kPackedRgb, 1, 0, 0, 4, 0, 1, 2}},
    {PixelFormat::kBgra, "bgra", {LayoutKind::kPackedRgb, 1, 0, 0, 4, 2, 1, 0}},
}};

const FormatInfo& InfoOf(PixelFormat f) {
  for (const auto& info : kFormats) {
    if (info.format == f) return info;
  }
  return kFormats[0];  // unreachable for valid enum values; ValidateFrame rejects others
}

bool IsKnown(PixelFormat f) {
  for (const auto& info : kFormats) {
    if (info.format == f) return true;
  }
  return false;
}

int CeilShift(int v, int shift) { return (v + (1 << shift) - 1) >> shift; }

}  // namespace

const char* PixelFormatName(PixelFormat f) { return IsKnown(f) ? InfoOf(f).name : "unknown"; }

StatusOr<PixelFormat> ParsePixelFormat(const std::string& name) {
  for (const auto& info : kFormats) {
    if (name == info.name) return info.format;
  }
  return InvalidArgument("unknown pixel format '" + name +
                         "' (expected yuv420p, yuvj420p, nv12, yuv422p, yuv444p, rgb24, bgr24, "
                         "rgba or bgra)");
}

const char* ColorMatrixName(ColorMatrix m) {
  switch (m) {
    case ColorMatrix::kBt601: return "bt601";
    case ColorMatrix::kBt709: return "bt709";
    case ColorMatrix::kBt2020: return "bt2020";
  }
  return "unknown";
}

StatusOr<ColorMatrix> ParseColorMatrix(const std::string& name) {
  if (name == "bt601" || name == "smpte170m" || name == "bt470bg") return ColorMatrix::kBt601;
  if (name == "bt709") return ColorMatrix::kBt709;
  if (name == "bt2020" || name == "bt2020nc") return ColorMatrix::kBt2020;
  return InvalidArgument("unknown colour matrix '" + name + "' (expected bt601, bt709 or bt2020)");
}

const char* ColorRangeName(ColorRange r) { return r == ColorRange::kFull ? "full" : "limited"; }

StatusOr<ColorRange> ParseColorRange(const std::string& name) {
  if (name == "limited" || name == "tv" || name == "mpeg") return ColorRange::kLimited;
  if (name == "full" || name == "pc" || name == "jpeg") return ColorRange::kFull;
  return InvalidArgument("unknown colour range '" + name + "' (expected limited or full)");
}

FormatLayout LayoutOf(PixelFormat f) { return InfoOf(f).layout; }

PlaneGeometry PackedPlaneGeometry(PixelFormat f, int width, int height) {
  PlaneGeometry g;
  const FormatLayout l = LayoutOf(f);
  switch (l.kind) {
    case LayoutKind::kPackedRgb:
      g.row_bytes[0] = width * l.bytes_per_pixel;
      g.rows[0] = height;
      break;
    case LayoutKind::kPlanarYuv:
      g.row_bytes[0] = width;
      g.rows[0] = height;
      g.row_bytes[1] = g.row_bytes[2] = CeilShift(width, l.chroma_shift_x);
      g.rows[1] = g.rows[2] = CeilShift(height, l.chroma_shift_y);
      break;
    case LayoutKind::kSemiPlanarYuv:
      g.row_bytes[0] = width;
      g.rows[0] = height;
      g.row_bytes[1] = 2 * CeilShift(width, l.chroma_shift_x);
      g.rows[1] = CeilShift(height, l.chroma_shift_y);
      break;
  }
  size_t offset = 0;
  for (int p = 0; p < 3; ++p) {
    g.offset[p] = offset;
    offset += static_cast<size_t>(g.row_bytes[p]) * g.rows[p];
  }
  return g;
}

size_t PackedFrameSize(PixelFormat f, int width, int height) {
  const PlaneGeometry g = PackedPlaneGeometry(f, width, height);
  size_t total = 0;
  for (int p = 0; p < 3; ++p) total += static_cast<size_t>(g.row_bytes[p]) * g.rows[p];
  return total;
}

void CopyToPackedLayout(const FrameView& frame, uint8_t* dst) {
  const PlaneGeometry g = PackedPlaneGeometry(frame.format, frame.width, frame.height);
  for (int p = 0; p < LayoutOf(frame.format).num_planes; ++p) {
    for (int y = 0; y < g.rows[p]; ++y) {
      std::memcpy(dst + g.offset[p] + static_cast<size_t>(y) * g.row_bytes[p],
                  frame.plane[p] + static_cast<size_t>(y) * frame.stride[p], g.row_bytes[p]);
    }
  }
}

static Status ValidateDimensions(int width, int height) {
  if (width < 1 || width > kMaxDimension) {
    return InvalidArgument("width " + std::to_string(width) + " is out of range 1.." +
                           std::to_string(kMaxDimension));
  }
  if (height < 1 || height > kMaxDimension) {
    return InvalidArgument("height " + std::to_string(height) + " is out of range 1.." +
                           std::to_string(kMaxDimension));
  }
  return OkStatus();
}

StatusOr<FrameView> MakePackedFrameView(const uint8_t* data, size_t size, int width, int height,
                                        PixelFormat f, ColorMatrix m, ColorRange r) {
  if (!IsKnown(f)) return InvalidArgument("unknown pixel format");
  RETURN_IF_ERROR(ValidateDimensions(width, height));
  const size_t need = PackedFrameSize(f, width, height);
  if (data == nullptr || size < need) {
    return InvalidArgument("frame buffer holds " + std::to_string(size) + " bytes but " +
                           std::to_string(width) + "x" + std::to_string(height) + " " +
                           PixelFormatName(f) + " needs " + std::to_string(need));
  }
  const PlaneGeometry g = PackedPlaneGeometry(f, width, height);
  FrameView v;
  v.width = width;
  v.height = height;
  v.format = f;
  v.matrix = m;
  v.range = r;
  for (int p = 0; p < LayoutOf(f).num_planes; ++p) {
    v.plane[p] = data + g.offset[p];
    v.stride[p] = g.row_bytes[p];
  }
  return v;
}

Status ValidateFrame(const FrameView& frame) {
  if (!IsKnown(frame.format)) return InvalidArgument("unknown pixel format");
  RETURN_IF_ERROR(ValidateDimensions(frame.width, frame.height));
  const PlaneGeometry g = PackedPlaneGeometry(frame.format, frame.width, frame.height);
  for (int p = 0; p < LayoutOf(frame.format).num_planes; ++p) {
    if (frame.plane[p] == nullptr) {
      return InvalidArgument("plane " + std::to_string(p) + " of the " +
                             PixelFormatName(frame.format) + " frame is missing");
    }
    if (frame.stride[p] < g.row_bytes[p]) {
      return InvalidArgument("stride " + std::to_string(frame.stride[p]) + " of plane " +
                             std::to_string(p) + " is shorter than a row (" +
                             std::to_string(g.row_bytes[p]) + " bytes)");
    }
  }
  return OkStatus();
}

}  // namespace conveyor
