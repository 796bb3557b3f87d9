// FrameConverter: a table of pass-through formats, and libswscale (same size, no colour
// model change: YUV stays YUV, RGB stays RGB) for the rest.
#include "frame_convert.h"

#include <cstring>
#include <string>

#include "narrow_cpu.h"

extern "C" {
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
}

namespace conveyor::media {
namespace {

AVPixelFormat AvFormatOf(PixelFormat f) {
  switch (f) {
    case PixelFormat::kYuv420p:
      return AV_PIX_FMT_YUV420P;
    case PixelFormat::kYuvj420p:
      return AV_PIX_FMT_YUVJ420P;
    case PixelFormat::kNv12:
      return AV_PIX_FMT_NV12;
    case PixelFormat::kYuv422p:
      return AV_PIX_FMT_YUV422P;
    case PixelFormat::kYuv444p:
      return AV_PIX_FMT_YUV444P;
    case PixelFormat::kRgb24:
      return AV_PIX_FMT_RGB24;
    case PixelFormat::kBgr24:
      return AV_PIX_FMT_BGR24;
    case PixelFormat::kRgba:
      return AV_PIX_FMT_RGBA;
    case PixelFormat::kBgra:
      return AV_PIX_FMT_BGRA;
  }
  return AV_PIX_FMT_NONE;
}

bool IsJpegRangeFormat(AVPixelFormat f) {
  return f == AV_PIX_FMT_YUVJ420P || f == AV_PIX_FMT_YUVJ422P || f == AV_PIX_FMT_YUVJ444P ||
         f == AV_PIX_FMT_YUVJ440P || f == AV_PIX_FMT_YUVJ411P;
}

std::string FormatName(AVPixelFormat f) {
  const char* name = av_get_pix_fmt_name(f);
  return name != nullptr ? name : "pix_fmt " + std::to_string(static_cast<int>(f));
}

// The bits of a colour tag as an int. Decoders copy these tags from the bitstream without
// checking them against the enum (an H.264 VUI may say matrix_coefficients 65; the fuzzer
// found one), and loading an enum-typed field that holds no enumerator is undefined
// behaviour, so the field is read as the int it is stored as and compared with ints.
template <typename Enum>
int TagBits(const Enum& field) {
  static_assert(sizeof(Enum) == sizeof(int), "FFmpeg's colour tags are int-sized enums");
  int bits = 0;
  std::memcpy(&bits, &field, sizeof bits);
  return bits;
}

}  // namespace

std::optional<UntaggedMatrix> ParseUntaggedMatrix(const std::string& name) {
  if (name == "bt601") return UntaggedMatrix::kBt601;
  if (name == "bt709") return UntaggedMatrix::kBt709;
  if (name == "by-size") return UntaggedMatrix::kBySize;
  return std::nullopt;
}

const char* UntaggedMatrixName(UntaggedMatrix m) {
  switch (m) {
    case UntaggedMatrix::kBt601:
      return "bt601";
    case UntaggedMatrix::kBt709:
      return "bt709";
    case UntaggedMatrix::kBySize:
      return "by-size";
  }
  return "?";
}

FrameColor ColorOf(const AVFrame& frame, UntaggedMatrix untagged) {
  FrameColor c;
  const auto format = static_cast<AVPixelFormat>(frame.format);
  c.range = (IsJpegRangeFormat(format) || TagBits(frame.color_range) == AVCOL_RANGE_JPEG) ? ColorRange::kFull
                                                                                          : ColorRange::kLimited;
  c.matrix_signalled = true;
  switch (TagBits(frame.colorspace)) {
    case AVCOL_SPC_BT709:
    case AVCOL_SPC_SMPTE240M:  // close enough to BT.709 for the encoder's three matrices
      c.matrix = ColorMatrix::kBt709;
      break;
    case AVCOL_SPC_BT2020_NCL:
    case AVCOL_SPC_BT2020_CL:
      c.matrix = ColorMatrix::kBt2020;
      break;
    case AVCOL_SPC_BT470BG:
    case AVCOL_SPC_SMPTE170M:
    case AVCOL_SPC_FCC:
      c.matrix = ColorMatrix::kBt601;
      break;
    default:
      // Unspecified. libswscale reads it as BT.601 (its SWS_CS_DEFAULT coefficients), so
      // that is what the ffmpeg CLI's output of the same file shows.
      c.matrix_signalled = false;
      switch (untagged) {
        case UntaggedMatrix::kBt601:
          c.matrix = ColorMatrix::kBt601;
          break;
        case UntaggedMatrix::kBt709:
          c.matrix = ColorMatrix::kBt709;
          break;
        case UntaggedMatrix::kBySize:
          c.matrix = (frame.width >= 1280 || frame.height >= 720) ? ColorMatrix::kBt709 : ColorMatrix::kBt601;
          break;
      }
      break;
  }
  return c;
}

std::optional<PixelFormat> PassThroughFormat(AVPixelFormat f) {
  switch (f) {
    case AV_PIX_FMT_YUV420P:
      return PixelFormat::kYuv420p;
    case AV_PIX_FMT_YUVJ420P:
      return PixelFormat::kYuvj420p;
    case AV_PIX_FMT_NV12:
      return PixelFormat::kNv12;
    case AV_PIX_FMT_YUV422P:
    case AV_PIX_FMT_YUVJ422P:
      return PixelFormat::kYuv422p;
    case AV_PIX_FMT_YUV444P:
    case AV_PIX_FMT_YUVJ444P:
      return PixelFormat::kYuv444p;
    case AV_PIX_FMT_RGB24:
      return PixelFormat::kRgb24;
    case AV_PIX_FMT_BGR24:
      return PixelFormat::kBgr24;
    // The encoder never reads the fourth byte, so "unused" and alpha are the same to it.
    case AV_PIX_FMT_RGBA:
    case AV_PIX_FMT_RGB0:
      return PixelFormat::kRgba;
    case AV_PIX_FMT_BGRA:
    case AV_PIX_FMT_BGR0:
      return PixelFormat::kBgra;
    default:
      return std::nullopt;
  }
}

StatusOr<PixelFormat> EncoderFormatFor(AVPixelFormat f) {
  if (auto direct = PassThroughFormat(f)) return *direct;
  if (f == AV_PIX_FMT_P010) return PixelFormat::kNv12;  // a hardware decoder's 10-bit surface, narrowed
  const AVPixFmtDescriptor* desc = av_pix_fmt_desc_get(f);
  if (desc == nullptr) return InvalidArgument("unknown pixel format " + FormatName(f));
  if ((desc->flags & AV_PIX_FMT_FLAG_HWACCEL) != 0) {
    return Unimplemented("hardware frames (" + FormatName(f) + ") are not accepted");
  }
  if ((desc->flags & (AV_PIX_FMT_FLAG_RGB | AV_PIX_FMT_FLAG_PAL | AV_PIX_FMT_FLAG_BAYER)) != 0) {
    return PixelFormat::kRgb24;
  }
  if (desc->nb_components <= 2) return PixelFormat::kYuv420p;  // gray (+alpha): chroma 128
  if (desc->log2_chroma_w == 0 && desc->log2_chroma_h == 0) return PixelFormat::kYuv444p;
  if (desc->log2_chroma_h == 0) return PixelFormat::kYuv422p;  // 4:2:2, and 4:1:1 up to it
  return PixelFormat::kYuv420p;                                // 4:2:0, 4:1:0, 4:4:0
}

const char* ConvertPathName(ConvertPath p) {
  return p == ConvertPath::kPassThrough ? "pass-through" : "converted";
}

Status FrameConverter::Prepare(const Key& key) {
  if (sws_ && key == key_) return OkStatus();
  sws_.reset();
  SwsContextPtr sws(sws_alloc_context());
  if (!sws) return ResourceExhausted("sws_alloc_context: out of memory");
  // The range is kept as it is (src_range == dst_range), so only the bit depth, the
  // subsampling or the packing changes; the FrameView carries matrix and range onwards.
  const int full = key.range == ColorRange::kFull ? 1 : 0;
  const AVPixelFormat dst = AvFormatOf(key.dst);
  SwsContext* s = sws.get();
  int err = 0;
  if ((err = av_opt_set_int(s, "srcw", key.width, 0)) < 0 ||
      (err = av_opt_set_int(s, "srch", key.height, 0)) < 0 ||
      (err = av_opt_set_int(s, "dstw", key.width, 0)) < 0 ||
      (err = av_opt_set_int(s, "dsth", key.height, 0)) < 0 ||
      (err = av_opt_set_int(s, "src_format", key.src, 0)) < 0 ||
      (err = av_opt_set_int(s, "dst_format", dst, 0)) < 0 ||
      (err = av_opt_set_int(s, "src_range", full, 0)) < 0 ||
      (err = av_opt_set_int(s, "dst_range", full, 0)) < 0 ||
      (err = av_opt_set_int(s, "sws_flags", SWS_BICUBIC | SWS_ACCURATE_RND, 0)) < 0) {
    return FfmpegError(err, "av_opt_set_int(SwsContext)");
  }
  if ((err = sws_init_context(s, nullptr, nullptr)) < 0) {
    return FfmpegError(err,
                       ("sws_init_context(" + FormatName(key.src) + " -> " + FormatName(dst) + ")").c_str());
  }
  sws_ = std::move(sws);
  key_ = key;
  return OkStatus();
}

StatusOr<ConvertedFrame> FrameConverter::Convert(const AVFrame& frame, uint8_t* dst, size_t dst_size) {
  const auto src_format = static_cast<AVPixelFormat>(frame.format);
  if (frame.width <= 0 || frame.height <= 0 || frame.data[0] == nullptr) {
    return InvalidArgument("frame has no picture");
  }
  if (frame.width > kMaxDimension || frame.height > kMaxDimension) {
    return InvalidArgument("frame " + std::to_string(frame.width) + "x" + std::to_string(frame.height) +
                           " is larger than the encoder's " + std::to_string(kMaxDimension) + " limit");
  }
  const FrameColor color = ColorOf(frame, untagged_);
  ConvertedFrame out;
  out.source_format = src_format;
  out.view.width = frame.width;
  out.view.height = frame.height;
  out.view.matrix = color.matrix;
  out.view.range = color.range;

  if (auto direct = PassThroughFormat(src_format)) {
    out.path = ConvertPath::kPassThrough;
    out.view.format = *direct;
    const int planes = LayoutOf(*direct).num_planes;
    for (int i = 0; i < planes; ++i) {
      out.view.plane[i] = frame.data[i];
      out.view.stride[i] = frame.linesize[i];
    }
    RETURN_IF_ERROR(ValidateFrame(out.view));
    return out;
  }

  ASSIGN_OR_RETURN(const PixelFormat target, EncoderFormatFor(src_format));
  out.path = ConvertPath::kConverted;
  out.view.format = target;
  const size_t need = PackedFrameSize(target, frame.width, frame.height);
  if (dst != nullptr) {
    if (dst_size < need) {
      return InvalidArgument("conversion buffer holds " + std::to_string(dst_size) + " bytes, the " +
                             PixelFormatName(target) + " frame needs " + std::to_string(need));
    }
  } else {
    // A little slack past the frame: some libswscale output paths store whole vectors.
    owned_.resize(need + 64);
    dst = owned_.data();
  }
  const PlaneGeometry geo = PackedPlaneGeometry(target, frame.width, frame.height);
  uint8_t* dst_planes[4] = {nullptr, nullptr, nullptr, nullptr};
  int dst_strides[4] = {0, 0, 0, 0};
  const int planes = LayoutOf(target).num_planes;
  for (int i = 0; i < planes; ++i) {
    dst_planes[i] = dst + geo.offset[i];
    dst_strides[i] = geo.row_bytes[i];
    out.view.plane[i] = dst_planes[i];
    out.view.stride[i] = geo.row_bytes[i];
  }
  if (src_format == AV_PIX_FMT_P010) {
    // A hardware decoder's surface in host memory: narrowed as libswscale narrows the
    // same picture decoded on the CPU (yuv420p10), so both decoders give the same bytes.
    NarrowP010ToNv12(frame.data[0], frame.linesize[0], frame.data[1], frame.linesize[1], frame.width, frame.height,
                     color.range == ColorRange::kFull, dst);
    RETURN_IF_ERROR(ValidateFrame(out.view));
    return out;
  }
  RETURN_IF_ERROR(Prepare(Key{frame.width, frame.height, src_format, target, color.matrix, color.range}));
  const int rows =
      sws_scale(sws_.get(), frame.data, frame.linesize, 0, frame.height, dst_planes, dst_strides);
  if (rows < 0) return FfmpegError(rows, "sws_scale");
  if (rows != frame.height) {
    return Internal("sws_scale wrote " + std::to_string(rows) + " of " + std::to_string(frame.height) +
                    " rows");
  }
  RETURN_IF_ERROR(ValidateFrame(out.view));
  return out;
}

}  // namespace conveyor::media
