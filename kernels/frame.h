// What the encoder takes in: a decoded frame described by its pixel format, colour
// signalling and plane pointers. FrameView does not own memory; callers (FFmpeg frames,
// pinned slots, test buffers) do.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "status.h"

namespace conveyor {

enum class PixelFormat : uint8_t {
  kYuv420p,   // planar, limited range unless the frame says otherwise
  kYuvj420p,  // planar, full range (FFmpeg's JPEG flavour of yuv420p)
  kNv12,      // luma plane + interleaved CbCr plane, 4:2:0
  kYuv422p,
  kYuv444p,
  kRgb24,
  kBgr24,
  kRgba,
  kBgra,
};

enum class ColorMatrix : uint8_t { kBt601, kBt709, kBt2020 };
enum class ColorRange : uint8_t { kLimited, kFull };

constexpr int kMaxDimension = 16384;

const char* PixelFormatName(PixelFormat f);
StatusOr<PixelFormat> ParsePixelFormat(const std::string& name);
const char* ColorMatrixName(ColorMatrix m);
StatusOr<ColorMatrix> ParseColorMatrix(const std::string& name);
const char* ColorRangeName(ColorRange r);
StatusOr<ColorRange> ParseColorRange(const std::string& name);

// How a pixel format is laid out: what kind of planes, chroma subsampling shifts and,
// for packed RGB, where each channel sits in a pixel.
enum class LayoutKind : uint8_t { kPlanarYuv, kSemiPlanarYuv, kPackedRgb };
struct FormatLayout {
  LayoutKind kind;
  int num_planes;
  int chroma_shift_x;  // log2 of horizontal chroma subsampling (YUV only)
  int chroma_shift_y;
  int bytes_per_pixel;  // packed RGB only
  int r_index, g_index, b_index;
};
FormatLayout LayoutOf(PixelFormat f);

struct FrameView {
  int width = 0;
  int height = 0;
  PixelFormat format = PixelFormat::kYuv420p;
  // Colour signalling as carried by the frame; ignored for RGB formats. yuvj420p is
  // full range by definition, whatever `range` says.
  ColorMatrix matrix = ColorMatrix::kBt601;
  ColorRange range = ColorRange::kLimited;
  const uint8_t* plane[3] = {nullptr, nullptr, nullptr};
  int stride[3] = {0, 0, 0};  // bytes per row of each plane

  // The range the encoder must assume, taking yuvj420p into account.
  ColorRange EffectiveRange() const {
    return format == PixelFormat::kYuvj420p ? ColorRange::kFull : range;
  }
};

// Bytes of a tightly packed frame (planes back to back, rows without padding).
size_t PackedFrameSize(PixelFormat f, int width, int height);

// Plane widths/heights in samples (bytes per row for packed RGB) of the packed layout.
struct PlaneGeometry {
  int row_bytes[3] = {0, 0, 0};
  int rows[3] = {0, 0, 0};
  size_t offset[3] = {0, 0, 0};
};
PlaneGeometry PackedPlaneGeometry(PixelFormat f, int width, int height);

// Copies a frame (any strides) into the packed layout at `dst`, which must hold
// PackedFrameSize() bytes.
void CopyToPackedLayout(const FrameView& frame, uint8_t* dst);

// Checks dimensions (1..kMaxDimension) and that the buffer holds a packed frame of
// this size, then returns a view over it.
StatusOr<FrameView> MakePackedFrameView(const uint8_t* data, size_t size, int width, int height,
                                        PixelFormat f, ColorMatrix m = ColorMatrix::kBt601,
                                        ColorRange r = ColorRange::kLimited);

// Checks that a view is usable: dimensions in range, planes present, strides wide enough.
Status ValidateFrame(const FrameView& frame);

}  // namespace conveyor
