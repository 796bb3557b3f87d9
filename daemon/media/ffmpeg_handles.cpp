// FFmpeg error codes as Status, and the allocation helpers of ffmpeg_handles.h.
#include "ffmpeg_handles.h"

#include <cerrno>
#include <string>

extern "C" {
#include <libavutil/error.h>
#include <libavutil/mem.h>
}

namespace conveyor::media {

Status FfmpegError(int err, const char* call) {
  char text[AV_ERROR_MAX_STRING_SIZE] = {0};
  av_strerror(err, text, sizeof(text));
  std::string message = std::string(call) + ": " + text;
  StatusCode code = StatusCode::kInternal;
  if (err == AVERROR_EXIT) {
    code = StatusCode::kCancelled;
  } else if (err == AVERROR(ENOMEM)) {
    code = StatusCode::kResourceExhausted;
  } else if (err == AVERROR_INVALIDDATA || err == AVERROR_DECODER_NOT_FOUND ||
             err == AVERROR_STREAM_NOT_FOUND || err == AVERROR_DEMUXER_NOT_FOUND ||
             err == AVERROR_PATCHWELCOME || err == AVERROR(EINVAL)) {
    code = StatusCode::kInvalidArgument;
  }
  return Status(code, std::move(message));
}

StatusOr<FramePtr> AllocFrame() {
  FramePtr f(av_frame_alloc());
  if (!f) return ResourceExhausted("av_frame_alloc: out of memory");
  return f;
}

StatusOr<PacketPtr> AllocPacket() {
  PacketPtr p(av_packet_alloc());
  if (!p) return ResourceExhausted("av_packet_alloc: out of memory");
  return p;
}

StatusOr<AvioContextPtr> AllocAvio(int buffer_size, bool write, void* opaque,
                                   int (*read_packet)(void*, uint8_t*, int),
                                   int (*write_packet)(void*, uint8_t*, int),
                                   int64_t (*seek)(void*, int64_t, int)) {
  auto* buffer = static_cast<unsigned char*>(av_malloc(buffer_size));
  if (buffer == nullptr) return ResourceExhausted("av_malloc(avio buffer): out of memory");
  AvioContextPtr avio(
      avio_alloc_context(buffer, buffer_size, write ? 1 : 0, opaque, read_packet, write_packet, seek));
  if (!avio) {
    av_free(buffer);  // not yet owned by a context
    return ResourceExhausted("avio_alloc_context: out of memory");
  }
  return avio;
}

}  // namespace conveyor::media
