// RAII owners for the FFmpeg handles the media layer holds, and the one place FFmpeg error
// codes become a conveyor::Status. Every handle is a unique_ptr with a deleter, so an early
// return on any error path frees what was built so far.
#pragma once

#include <memory>
#include <vector>

extern "C" {
#include <libavutil/dict.h>
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavformat/avio.h>
#include <libavutil/frame.h>
#include <libswscale/swscale.h>
}

#include "status.h"

namespace conveyor::media {

// An input opened by avformat_open_input. Closing it never touches a custom AVIOContext
// (AVFMT_FLAG_CUSTOM_IO), which its owner must therefore outlive.
struct InputFormatDeleter {
  void operator()(AVFormatContext* c) const { avformat_close_input(&c); }
};
using InputFormatPtr = std::unique_ptr<AVFormatContext, InputFormatDeleter>;

// An output from avformat_alloc_output_context2. avformat_free_context leaves ->pb alone;
// the media layer's outputs always write through a custom AVIOContext owned beside it.
struct OutputFormatDeleter {
  void operator()(AVFormatContext* c) const { avformat_free_context(c); }
};
using OutputFormatPtr = std::unique_ptr<AVFormatContext, OutputFormatDeleter>;
// An input context from avformat_alloc_context that avformat_open_input has not taken
// over yet (it frees the context itself when it fails): the same deleter.
using UnopenedInputPtr = std::unique_ptr<AVFormatContext, OutputFormatDeleter>;

struct CodecContextDeleter {
  void operator()(AVCodecContext* c) const { avcodec_free_context(&c); }
};
using CodecContextPtr = std::unique_ptr<AVCodecContext, CodecContextDeleter>;

struct FrameDeleter {
  void operator()(AVFrame* f) const { av_frame_free(&f); }
};
using FramePtr = std::unique_ptr<AVFrame, FrameDeleter>;

struct PacketDeleter {
  void operator()(AVPacket* p) const { av_packet_free(&p); }
};
using PacketPtr = std::unique_ptr<AVPacket, PacketDeleter>;

// A custom AVIOContext and its buffer. FFmpeg may replace the buffer it was given (it
// grows it to probe or to keep seek-back room), so the one to free is ctx->buffer at the
// end, not the pointer passed to avio_alloc_context.
struct AvioContextDeleter {
  void operator()(AVIOContext* c) const {
    if (c == nullptr) return;
    av_freep(&c->buffer);
    avio_context_free(&c);
  }
};
using AvioContextPtr = std::unique_ptr<AVIOContext, AvioContextDeleter>;

// Option dictionaries handed to FFmpeg by address: one, or an array of one per stream.
// FFmpeg replaces what it consumes, so each is freed as it stands at the end.
class Dictionaries {
 public:
  explicit Dictionaries(size_t count = 1) : d_(count, nullptr) {}
  ~Dictionaries() {
    for (AVDictionary*& d : d_) av_dict_free(&d);
  }
  Dictionaries(const Dictionaries&) = delete;
  Dictionaries& operator=(const Dictionaries&) = delete;

  AVDictionary*& operator[](size_t i) { return d_[i]; }
  // The array FFmpeg takes, or null when it is empty.
  AVDictionary** data() { return d_.empty() ? nullptr : d_.data(); }

 private:
  std::vector<AVDictionary*> d_;
};

struct SwsContextDeleter {
  void operator()(SwsContext* c) const { sws_freeContext(c); }
};
using SwsContextPtr = std::unique_ptr<SwsContext, SwsContextDeleter>;

// "call: <av_strerror text>" with a code that fits the error: CANCELLED for AVERROR_EXIT,
// RESOURCE_EXHAUSTED for ENOMEM, INVALID_ARGUMENT for undecodable data, INTERNAL otherwise.
Status FfmpegError(int err, const char* call);

// Allocation helpers that turn a null result into RESOURCE_EXHAUSTED.
StatusOr<FramePtr> AllocFrame();
StatusOr<PacketPtr> AllocPacket();

// A custom AVIOContext over `buffer_size` bytes of av_malloc'd buffer. read_packet or
// write_packet may be null (exactly one should be set); seek may be null.
StatusOr<AvioContextPtr> AllocAvio(int buffer_size, bool write, void* opaque,
                                   int (*read_packet)(void*, uint8_t*, int),
                                   int (*write_packet)(void*, uint8_t*, int),
                                   int64_t (*seek)(void*, int64_t, int));

}  // namespace conveyor::media
