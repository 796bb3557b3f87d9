// Fuzz target: client container bytes through the daemon's input path: the ByteQueue the
// rpc layer fills, the custom AVIO read callback, demux (probe or a named demuxer, as a
// format_hint would ask), decode of a few frames, and the mapping onto encoder formats,
// whose result the CPU encoder then reads (ASan catches a view pointing past a plane).
//
// Input layout: byte 0 picks the format hint, byte 1 the chunk size the bytes arrive in;
// the rest is the stream. Work is bounded: max_len (run_fuzzers.sh), a few frames, and
// pictures larger than kMaxPixels are refused by the decoder's max_pixels bound, as the
// session sets it from the daemon's size limit.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "byte_queue.h"
#include "cpu_encoder.h"
#include "demux_decoder.h"
#include "frame_convert.h"

extern "C" {
#include <libavutil/log.h>
}

namespace {

// "" probes; the rest are the demuxers the daemon accepts (DefaultInputFormats).
const char* const kFormatHints[] = {"",          "mov",  "matroska", "avi",  "mpegts", "mpeg",
                                    "mpegvideo", "h264", "hevc",     "mjpeg", "ivf",   "obu"};
constexpr int kMaxFrames = 8;
constexpr int kMaxEncodedFrames = 2;
// 1280x720: the daemon allows 3840x2160, but a frame that size costs ASan seconds and
// the demux/decode paths do not depend on the size.
constexpr int64_t kMaxPixels = 1280 * 720;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  av_log_set_level(AV_LOG_QUIET);  // corrupt input makes FFmpeg log on every call
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const char* hint = kFormatHints[data[0] % (sizeof(kFormatHints) / sizeof(kFormatHints[0]))];
  const size_t chunk = 1 + static_cast<size_t>(data[1]) * 64;
  data += 2;
  size -= 2;

  // Everything is queued before the decoder reads (one thread), so the queue holds it all.
  conveyor::media::ByteQueue queue(size + 1);
  for (size_t at = 0; at < size; at += chunk) {
    const size_t n = std::min(chunk, size - at);
    if (!queue.Push(std::vector<uint8_t>(data + at, data + at + n)).ok()) __builtin_trap();
  }
  queue.Close();

  conveyor::media::DecoderOptions options;
  options.format = hint;
  options.threads = 1;  // frame threads would make runs slower and less reproducible
  options.max_pixels = kMaxPixels;
  auto opened = conveyor::media::ContainerDecoder::Open(&queue, options);
  if (!opened.ok()) return 0;
  conveyor::media::ContainerDecoder& decoder = **opened;
  if (static_cast<int64_t>(decoder.video().width) * decoder.video().height > kMaxPixels) __builtin_trap();

  static conveyor::CpuJpegEncoder encoder(1);
  conveyor::media::FrameConverter converter;
  conveyor::media::DecodedFrame frame;
  for (int i = 0; i < kMaxFrames; ++i) {
    auto more = decoder.Next(&frame);
    if (!more.ok() || !*more) break;
    // As the session: a frame whose size differs from the stream's ends the job.
    if (frame.width != decoder.video().width || frame.height != decoder.video().height) break;
    // As the session: pass-through formats are mapped in place, others converted into a
    // buffer of the packed size.
    std::vector<uint8_t> buffer;
    conveyor::StatusOr<conveyor::media::ConvertedFrame> converted = conveyor::Status();
    if (conveyor::media::PassThroughFormat(frame.format)) {
      converted = converter.Convert(*frame.frame);
    } else {
      auto target = conveyor::media::EncoderFormatFor(frame.format);
      if (!target.ok()) break;
      buffer.resize(conveyor::PackedFrameSize(*target, frame.width, frame.height));
      converted = converter.Convert(*frame.frame, buffer.data(), buffer.size());
    }
    if (!converted.ok() || i >= kMaxEncodedFrames) continue;
    conveyor::EncodeParams params;
    params.quality = 50;
    auto jpeg = encoder.Encode(converted->view, params);
    if (!jpeg.ok() && jpeg.status().code() != conveyor::StatusCode::kInvalidArgument) __builtin_trap();
  }
  return 0;
}
