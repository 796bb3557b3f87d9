// The two independent decoders of the conformance suite (see conformance_util.h):
// libjpeg-turbo's TurboJPEG API, to packed RGB or to raw YCbCr planes, and FFmpeg's
// libavcodec mjpeg decoder, which fails on any complaint it logs.
#include "conformance_util.h"

#include <cerrno>
#include <cstdarg>
#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <turbojpeg.h>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavutil/log.h>
#include <libavutil/pixdesc.h>
}

namespace conformance {

using conveyor::Internal;
using conveyor::Status;
using conveyor::StatusOr;

namespace {

// ---------------------------------------------------------------------------------------
// RAII for every C handle used here.

struct TjDeleter {
  void operator()(void* h) const {
    if (h != nullptr) tjDestroy(h);
  }
};
using TjHandle = std::unique_ptr<void, TjDeleter>;

struct CodecContextDeleter {
  void operator()(AVCodecContext* c) const { avcodec_free_context(&c); }
};
struct PacketDeleter {
  void operator()(AVPacket* p) const { av_packet_free(&p); }
};
struct FrameDeleter {
  void operator()(AVFrame* f) const { av_frame_free(&f); }
};
using CodecContextPtr = std::unique_ptr<AVCodecContext, CodecContextDeleter>;
using PacketPtr = std::unique_ptr<AVPacket, PacketDeleter>;
using FramePtr = std::unique_ptr<AVFrame, FrameDeleter>;

std::string AvError(int err) {
  char buf[AV_ERROR_MAX_STRING_SIZE] = {0};
  av_strerror(err, buf, sizeof(buf));
  return buf;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// libjpeg-turbo (TurboJPEG API)

namespace {

StatusOr<TjHandle> NewDecompressor() {
  TjHandle h(tjInitDecompress());
  if (!h) return Internal(std::string("tjInitDecompress: ") + tjGetErrorStr2(nullptr));
  return h;
}

Status TurboError(const char* what, void* h) {
  const bool warning = tjGetErrorCode(h) == TJERR_WARNING;
  return Internal(std::string(what) + (warning ? " warning: " : " error: ") + tjGetErrorStr2(h));
}

}  // namespace

StatusOr<TurboHeader> TurboReadHeader(const std::vector<uint8_t>& jpeg) {
  ASSIGN_OR_RETURN(TjHandle h, NewDecompressor());
  TurboHeader hdr;
  if (tjDecompressHeader3(h.get(), jpeg.data(), jpeg.size(), &hdr.width, &hdr.height,
                          &hdr.subsamp, &hdr.colorspace) != 0) {
    return TurboError("tjDecompressHeader3", h.get());
  }
  return hdr;
}

StatusOr<Planes> TurboDecodeRgb(const std::vector<uint8_t>& jpeg) {
  ASSIGN_OR_RETURN(TjHandle h, NewDecompressor());
  int w = 0, hgt = 0, subsamp = 0, cs = 0;
  if (tjDecompressHeader3(h.get(), jpeg.data(), jpeg.size(), &w, &hgt, &subsamp, &cs) != 0) {
    return TurboError("tjDecompressHeader3", h.get());
  }
  Planes out;
  out.width = w;
  out.height = hgt;
  out.plane_w[0] = w * 3;
  out.plane_h[0] = hgt;
  out.plane[0].resize(static_cast<size_t>(w) * hgt * 3);
  if (tjDecompress2(h.get(), jpeg.data(), jpeg.size(), out.plane[0].data(), w, 0, hgt, TJPF_RGB,
                    0) != 0) {
    return TurboError("tjDecompress2", h.get());
  }
  return out;
}

StatusOr<Planes> TurboDecodeYuv(const std::vector<uint8_t>& jpeg) {
  ASSIGN_OR_RETURN(TjHandle h, NewDecompressor());
  int w = 0, hgt = 0, subsamp = 0, cs = 0;
  if (tjDecompressHeader3(h.get(), jpeg.data(), jpeg.size(), &w, &hgt, &subsamp, &cs) != 0) {
    return TurboError("tjDecompressHeader3", h.get());
  }
  if (subsamp == TJSAMP_GRAY) return Internal("unexpected grayscale JPEG");
  std::vector<uint8_t> buf(tjBufSizeYUV2(w, 1, hgt, subsamp));
  if (tjDecompressToYUV2(h.get(), jpeg.data(), jpeg.size(), buf.data(), w, 1, hgt, 0) != 0) {
    return TurboError("tjDecompressToYUV2", h.get());
  }
  Planes out;
  out.width = w;
  out.height = hgt;
  size_t offset = 0;
  for (int c = 0; c < 3; ++c) {
    out.plane_w[c] = tjPlaneWidth(c, w, subsamp);
    out.plane_h[c] = tjPlaneHeight(c, hgt, subsamp);
    const size_t n = static_cast<size_t>(out.plane_w[c]) * out.plane_h[c];
    out.plane[c].assign(buf.begin() + offset, buf.begin() + offset + n);
    offset += n;
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// FFmpeg libavcodec

namespace {

std::vector<std::string>* g_av_log_sink = nullptr;

void CaptureAvLog(void* avcl, int level, const char* fmt, va_list vl) {
  if (g_av_log_sink == nullptr || level > AV_LOG_WARNING) return;
  char line[1024];
  int print_prefix = 1;
  av_log_format_line2(avcl, level, fmt, vl, line, sizeof(line), &print_prefix);
  std::string text(line);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  g_av_log_sink->push_back(text);
}

// Installs CaptureAvLog for the lifetime of the object (the suite runs tests serially).
class AvLogCapture {
 public:
  AvLogCapture() {
    g_av_log_sink = &lines_;
    av_log_set_callback(CaptureAvLog);
  }
  ~AvLogCapture() {
    av_log_set_callback(av_log_default_callback);
    g_av_log_sink = nullptr;
  }
  AvLogCapture(const AvLogCapture&) = delete;
  AvLogCapture& operator=(const AvLogCapture&) = delete;
  const std::vector<std::string>& lines() const { return lines_; }

 private:
  std::vector<std::string> lines_;
};

}  // namespace

StatusOr<FfmpegDecoded> FfmpegDecode(const std::vector<uint8_t>& jpeg) {
  AvLogCapture log;
  auto with_log = [&](std::string msg) {
    for (const auto& l : log.lines()) msg += "\n  av_log: " + l;
    return Internal(msg);
  };

  const AVCodec* codec = avcodec_find_decoder(AV_CODEC_ID_MJPEG);
  if (codec == nullptr) return Internal("no mjpeg decoder in libavcodec");
  CodecContextPtr ctx(avcodec_alloc_context3(codec));
  if (!ctx) return Internal("avcodec_alloc_context3 failed");
  ctx->thread_count = 1;
  ctx->err_recognition = AV_EF_EXPLODE | AV_EF_BITSTREAM | AV_EF_BUFFER | AV_EF_CAREFUL;
  if (int err = avcodec_open2(ctx.get(), codec, nullptr); err < 0) {
    return with_log("avcodec_open2: " + AvError(err));
  }

  PacketPtr pkt(av_packet_alloc());
  FramePtr frame(av_frame_alloc());
  if (!pkt || !frame) return Internal("out of memory");
  if (int err = av_new_packet(pkt.get(), static_cast<int>(jpeg.size())); err < 0) {
    return Internal("av_new_packet: " + AvError(err));
  }
  std::memcpy(pkt->data, jpeg.data(), jpeg.size());

  if (int err = avcodec_send_packet(ctx.get(), pkt.get()); err < 0) {
    return with_log("avcodec_send_packet: " + AvError(err));
  }
  int err = avcodec_receive_frame(ctx.get(), frame.get());
  if (err == AVERROR(EAGAIN)) {
    if (int e = avcodec_send_packet(ctx.get(), nullptr); e < 0) {
      return with_log("avcodec_send_packet(flush): " + AvError(e));
    }
    err = avcodec_receive_frame(ctx.get(), frame.get());
  }
  if (err < 0) return with_log("avcodec_receive_frame: " + AvError(err));
  if (!log.lines().empty()) return with_log("mjpeg decoder complained");
  if (frame->decode_error_flags != 0) {
    return with_log("decode_error_flags " + std::to_string(frame->decode_error_flags));
  }
  if (frame->flags & AV_FRAME_FLAG_CORRUPT) return with_log("frame flagged corrupt");

  FfmpegDecoded out;
  out.pix_fmt = frame->format;
  const AVPixFmtDescriptor* desc = av_pix_fmt_desc_get(static_cast<AVPixelFormat>(frame->format));
  if (desc == nullptr) return Internal("decoder returned an unknown pixel format");
  out.pix_fmt_name = desc->name;
  if (desc->nb_components != 3 || (desc->flags & AV_PIX_FMT_FLAG_RGB) ||
      desc->comp[0].depth != 8 || av_pix_fmt_count_planes(static_cast<AVPixelFormat>(frame->format)) != 3) {
    return Internal(std::string("unexpected decoder output format ") + desc->name);
  }
  const int w = frame->width, h = frame->height;
  out.yuv.width = w;
  out.yuv.height = h;
  for (int c = 0; c < 3; ++c) {
    const int pw = c == 0 ? w : AV_CEIL_RSHIFT(w, desc->log2_chroma_w);
    const int ph = c == 0 ? h : AV_CEIL_RSHIFT(h, desc->log2_chroma_h);
    out.yuv.plane_w[c] = pw;
    out.yuv.plane_h[c] = ph;
    out.yuv.plane[c].resize(static_cast<size_t>(pw) * ph);
    for (int y = 0; y < ph; ++y) {
      std::memcpy(out.yuv.plane[c].data() + static_cast<size_t>(y) * pw,
                  frame->data[c] + static_cast<ptrdiff_t>(y) * frame->linesize[c], pw);
    }
  }

  return out;
}

}  // namespace conformance
