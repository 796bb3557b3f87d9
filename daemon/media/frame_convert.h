// From a decoded AVFrame to what the encoder takes (kernels/frame.h). Formats the encoder
// reads directly pass through as a FrameView over the frame's own planes, with no copy;
// any other format (10-bit, 4:1:1, planar RGB, palettes, alpha planes, ...) is converted
// with libswscale to the nearest 8-bit format the encoder takes, keeping chroma
// subsampling where it can, and the colour matrix and range as the frame signals them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ffmpeg_handles.h"
#include "frame.h"
#include "status.h"

extern "C" {
#include <libavutil/pixfmt.h>
}

namespace conveyor::media {

// The matrix assumed for a frame that does not signal one.
enum class UntaggedMatrix : uint8_t {
  kBt601,   // what FFmpeg's libswscale (and so `ffmpeg -i IN out.jpg`) assumes: the default
  kBt709,
  kBySize,  // BT.709 from 1280 wide or 720 high up, else BT.601, as many players guess
};
// "bt601", "bt709", "by-size"; nullopt for anything else.
std::optional<UntaggedMatrix> ParseUntaggedMatrix(const std::string& name);
const char* UntaggedMatrixName(UntaggedMatrix m);

// Colour signalling of a frame as the encoder understands it.
struct FrameColor {
  ColorMatrix matrix = ColorMatrix::kBt601;
  // false when the frame does not say (AVCOL_SPC_UNSPECIFIED and the like) and the
  // matrix is the UntaggedMatrix policy's.
  bool matrix_signalled = false;
  ColorRange range = ColorRange::kLimited;  // yuvj* formats are full range by definition
};
FrameColor ColorOf(const AVFrame& frame, UntaggedMatrix untagged = UntaggedMatrix::kBt601);

// The encoder format a decoder format passes through as, or nullopt when it needs a
// conversion. yuvj422p and yuvj444p pass through as yuv422p/yuv444p with full range
// (the same bytes; the range travels in FrameView::range).
std::optional<PixelFormat> PassThroughFormat(AVPixelFormat f);
// The encoder format a frame of `f` is converted to (for a pass-through format, itself).
StatusOr<PixelFormat> EncoderFormatFor(AVPixelFormat f);

enum class ConvertPath : uint8_t { kPassThrough, kConverted };
const char* ConvertPathName(ConvertPath p);

struct ConvertedFrame {
  // Pass-through: planes point into the AVFrame, valid while the caller keeps that frame
  // referenced. Converted: planes point into the caller's buffer or the converter's own,
  // valid until the next Convert().
  FrameView view;
  ConvertPath path = ConvertPath::kPassThrough;
  AVPixelFormat source_format = AV_PIX_FMT_NONE;
};

class FrameConverter {
 public:
  explicit FrameConverter(UntaggedMatrix untagged = UntaggedMatrix::kBt601) : untagged_(untagged) {}
  FrameConverter(const FrameConverter&) = delete;
  FrameConverter& operator=(const FrameConverter&) = delete;

  // Maps `frame` for the encoder. When a conversion is needed, the result goes into
  // `dst` if given (tightly packed, PackedPlaneGeometry of the target format; at least
  // PackedFrameSize() bytes, else INVALID_ARGUMENT), else into a buffer the converter owns
  // and reuses. A caller that wants even a pass-through frame in its own memory (a slot
  // registered with a worker) copies it with CopyToPackedLayout().
  StatusOr<ConvertedFrame> Convert(const AVFrame& frame, uint8_t* dst = nullptr, size_t dst_size = 0);

 private:
  struct Key {
    int width = 0, height = 0;
    AVPixelFormat src = AV_PIX_FMT_NONE;
    PixelFormat dst = PixelFormat::kYuv420p;
    ColorMatrix matrix = ColorMatrix::kBt601;
    ColorRange range = ColorRange::kLimited;
    bool operator==(const Key& o) const {
      return width == o.width && height == o.height && src == o.src && dst == o.dst && matrix == o.matrix &&
             range == o.range;
    }
  };
  Status Prepare(const Key& key);

  const UntaggedMatrix untagged_;
  SwsContextPtr sws_;
  Key key_;
  std::vector<uint8_t> owned_;
};

}  // namespace conveyor::media
