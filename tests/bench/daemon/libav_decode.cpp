// Each stream opens the file through an AVIOContext over the one in-memory copy, as
// conveyord's ContainerDecoder opens a session's bytes: avformat_open_input on custom I/O,
// avformat_find_stream_info, av_find_best_stream, and the decoder opened the way the
// daemon opens it. `cuda` uses the daemon's own hwaccel code (hw_decode.h), so the device,
// get_format and thread count are the ones conveyord uses; only the CUDA stream differs:
// the decoder's copies go on the context's default stream instead of a worker's stream.
#include "libav_decode.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <thread>
#include <vector>

extern "C" {
#include <libavutil/pixdesc.h>
}

#include "ffmpeg_handles.h"
#include "hw_decode.h"

namespace conveyor::bench {
namespace {

using media::AvioContextPtr;
using media::CodecContextPtr;
using media::FfmpegError;
using media::FramePtr;
using media::HwDecodeDevice;
using media::HwDecodeState;
using media::InputFormatPtr;
using media::PacketPtr;
using media::UnopenedInputPtr;

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return s(u.ru_utime) + s(u.ru_stime);
}

// A read position over the shared file bytes: each stream has its own.
struct MemoryReader {
  const std::vector<uint8_t>* data = nullptr;
  size_t pos = 0;

  static int Read(void* opaque, uint8_t* buf, int size) {
    auto* r = static_cast<MemoryReader*>(opaque);
    if (r->pos >= r->data->size()) return AVERROR_EOF;
    const size_t n = std::min(static_cast<size_t>(size), r->data->size() - r->pos);
    std::memcpy(buf, r->data->data() + r->pos, n);
    r->pos += n;
    return static_cast<int>(n);
  }

  static int64_t Seek(void* opaque, int64_t offset, int whence) {
    auto* r = static_cast<MemoryReader*>(opaque);
    const auto size = static_cast<int64_t>(r->data->size());
    int64_t to = 0;
    switch (whence & ~AVSEEK_FORCE) {
      case AVSEEK_SIZE: return size;
      case SEEK_SET: to = offset; break;
      case SEEK_CUR: to = static_cast<int64_t>(r->pos) + offset; break;
      case SEEK_END: to = size + offset; break;
      default: return AVERROR(EINVAL);
    }
    if (to < 0 || to > size) return AVERROR(EINVAL);
    r->pos = static_cast<size_t>(to);
    return to;
  }
};

class DecodeStream {
 public:
  DecodeStream(int index, const std::vector<uint8_t>& file, const LibavDecodeOptions& o, const HwDecodeDevice* device)
      : index_(index), o_(o), device_(device) {
    reader_.data = &file;
  }

  Status Run() {
    RETURN_IF_ERROR(Open());
    ASSIGN_OR_RETURN(PacketPtr pkt, media::AllocPacket());
    ASSIGN_OR_RETURN(frame_, media::AllocFrame());
    int err = 0;
    while ((err = av_read_frame(in_.get(), pkt.get())) >= 0) {
      if (pkt->stream_index == stream_) err = avcodec_send_packet(dec_.get(), pkt.get());
      av_packet_unref(pkt.get());
      if (err < 0) return FfmpegError(err, "avcodec_send_packet");
      RETURN_IF_ERROR(Drain());
    }
    if (err != AVERROR_EOF) return FfmpegError(err, "av_read_frame");
    if ((err = avcodec_send_packet(dec_.get(), nullptr)) < 0) return FfmpegError(err, "avcodec_send_packet(flush)");
    RETURN_IF_ERROR(Drain());
    if (frames_ == 0) return InvalidArgument(o_.input + ": no video frame decoded");
    return OkStatus();
  }

  uint64_t frames() const { return frames_; }
  int width() const { return width_; }
  int height() const { return height_; }
  const std::string& decoder() const { return decoder_; }

 private:
  Status Open() {
    ASSIGN_OR_RETURN(avio_, media::AllocAvio(kAvioBufferBytes, false, &reader_, &MemoryReader::Read, nullptr,
                                             &MemoryReader::Seek));
    UnopenedInputPtr ctx(avformat_alloc_context());
    if (!ctx) return ResourceExhausted("avformat_alloc_context: out of memory");
    ctx->pb = avio_.get();
    ctx->flags |= AVFMT_FLAG_CUSTOM_IO;
    AVFormatContext* raw = ctx.release();  // avformat_open_input frees it if it fails
    int err = avformat_open_input(&raw, nullptr, nullptr, nullptr);
    if (err < 0) return FfmpegError(err, ("avformat_open_input(" + o_.input + ")").c_str());
    in_.reset(raw);
    if ((err = avformat_find_stream_info(in_.get(), nullptr)) < 0) return FfmpegError(err, "avformat_find_stream_info");
    const AVCodec* codec = nullptr;
    stream_ = av_find_best_stream(in_.get(), AVMEDIA_TYPE_VIDEO, -1, -1, &codec, 0);
    if (stream_ < 0) return FfmpegError(stream_, ("av_find_best_stream(video) in " + o_.input).c_str());
    for (unsigned i = 0; i < in_->nb_streams; ++i) {
      if (static_cast<int>(i) != stream_) in_->streams[i]->discard = AVDISCARD_ALL;
    }
    const AVStream* st = in_->streams[stream_];
    dec_.reset(avcodec_alloc_context3(codec));
    if (!dec_) return ResourceExhausted("avcodec_alloc_context3");
    if ((err = avcodec_parameters_to_context(dec_.get(), st->codecpar)) < 0) {
      return FfmpegError(err, "avcodec_parameters_to_context");
    }
    dec_->pkt_timebase = st->time_base;
    if (device_ != nullptr) {
      if (!media::DecoderTakes(codec, device_->type())) {
        return FailedPrecondition(std::string("FFmpeg's ") + codec->name + " decoder has no " + device_->api() +
                                  " hwaccel");
      }
      RETURN_IF_ERROR(media::AttachHwDevice(dec_.get(), *device_, &hw_));
    } else {
      dec_->thread_count = o_.threads;
      dec_->thread_type = FF_THREAD_FRAME | FF_THREAD_SLICE;
    }
    if ((err = avcodec_open2(dec_.get(), codec, nullptr)) < 0) return FfmpegError(err, "avcodec_open2");
    decoder_ = std::string(codec->name) + (device_ != nullptr ? std::string(" (") + device_->api() + ")" : "") + ", " +
               std::to_string(dec_->thread_count) + " thread(s)" +
               (dec_->active_thread_type == FF_THREAD_FRAME   ? " (frame)"
                : dec_->active_thread_type == FF_THREAD_SLICE ? " (slice)"
                                                              : "");
    return OkStatus();
  }

  Status Drain() {
    for (;;) {
      const int err = avcodec_receive_frame(dec_.get(), frame_.get());
      if (err == AVERROR(EAGAIN) || err == AVERROR_EOF) return OkStatus();
      if (err < 0) return FfmpegError(err, "avcodec_receive_frame");
      if (frames_ == 0) {
        width_ = frame_->width;
        height_ = frame_->height;
        if (device_ != nullptr) RETURN_IF_ERROR(CheckDeviceFrame(*frame_));
      }
      frames_++;
      av_frame_unref(frame_.get());  // a CUDA surface goes back to the decoder's pool untouched
    }
  }

  // A stream meant for the engines that decodes on the CPU would time the wrong decoder.
  Status CheckDeviceFrame(const AVFrame& f) const {
    if (f.format == device_->hw_format() && hw_.hardware) return OkStatus();
    const char* got = av_get_pix_fmt_name(static_cast<AVPixelFormat>(f.format));
    std::string why = hw_.refused  ? std::string("FFmpeg's ") + device_->api() + " hwaccel refused the stream"
                      : hw_.asked ? "get_format did not pick the device format"
                                  : "the decoder never asked for a format";
    return FailedPrecondition("stream " + std::to_string(index_) + ": the " + dec_->codec->name +
                              " decoder did not decode on " + device_->api() + " (" + why + "; frames are " +
                              (got ? got : "of an unknown format") + ")");
  }

  static constexpr int kAvioBufferBytes = 1 << 16;

  const int index_;
  const LibavDecodeOptions& o_;
  const HwDecodeDevice* device_;  // null: software decoding
  MemoryReader reader_;
  AvioContextPtr avio_;  // declared before in_, so it outlives it
  InputFormatPtr in_;
  int stream_ = -1;
  CodecContextPtr dec_;
  HwDecodeState hw_;
  FramePtr frame_;
  uint64_t frames_ = 0;
  int width_ = 0, height_ = 0;
  std::string decoder_;
};

}  // namespace

StatusOr<LibavDecodeResult> DecodeStreams(const LibavDecodeOptions& o) {
  if (o.streams < 1) return InvalidArgument("--streams must be at least 1");
  if (o.decoder != "cuda" && o.decoder != "cpu") return InvalidArgument("--decoder must be cuda or cpu");
  if (o.threads < 0) return InvalidArgument("--threads must be 0 (FFmpeg's choice) or more");
  std::ifstream in(o.input, std::ios::binary);
  if (!in) return InvalidArgument("cannot open " + o.input);
  const std::vector<uint8_t> file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (file.empty()) return InvalidArgument(o.input + " is empty");

  // One device for every stream, as one conveyord worker serves all its sessions' decoders;
  // opened before the clock starts, as the daemon's is before any session.
  std::vector<std::shared_ptr<HwDecodeDevice>> devices;
  for (int i = 0; o.decoder == "cuda" && i < (o.context_per_stream ? o.streams : 1); ++i) {
    auto opened = HwDecodeDevice::OpenCuda(o.device, nullptr, nullptr, !o.context_per_stream);
    if (!opened.ok()) return Unavailable("cuda device " + std::to_string(o.device) + ": " + opened.status().message());
    devices.push_back(std::move(*opened));
  }

  std::vector<std::unique_ptr<DecodeStream>> streams;
  for (int i = 0; i < o.streams; ++i) {
    const HwDecodeDevice* device = devices.empty() ? nullptr : devices[devices.size() == 1 ? 0 : i].get();
    streams.push_back(std::make_unique<DecodeStream>(i, file, o, device));
  }
  std::vector<Status> statuses(streams.size());
  const double cpu0 = CpuSeconds();
  const auto t0 = std::chrono::steady_clock::now();
  {
    std::vector<std::thread> threads;
    for (size_t i = 0; i < streams.size(); ++i) threads.emplace_back([&, i] { statuses[i] = streams[i]->Run(); });
    for (std::thread& t : threads) t.join();
  }
  LibavDecodeResult r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.cpu_seconds = CpuSeconds() - cpu0;
  for (size_t i = 0; i < streams.size(); ++i) {
    if (!statuses[i].ok()) {
      // The message says which stream when it is about the decoder; say it for the rest too.
      const std::string& m = statuses[i].message();
      if (m.rfind("stream ", 0) == 0) return statuses[i];
      return Status(statuses[i].code(), "stream " + std::to_string(i) + ": " + m);
    }
    r.frames += streams[i]->frames();
  }
  r.width = streams[0]->width();
  r.height = streams[0]->height();
  r.decoder = streams[0]->decoder();
  return r;
}

}  // namespace conveyor::bench
