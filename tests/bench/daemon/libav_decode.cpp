// Each stream opens the file through an AVIOContext over the one in-memory copy, as
// conveyord's ContainerDecoder opens a session's bytes: avformat_open_input on custom I/O,
// avformat_find_stream_info, av_find_best_stream, and the decoder opened the way the
// daemon opens it. `cuda` uses the daemon's own hwaccel code (hw_decode.h), so the device,
// get_format and thread count are the ones conveyord uses; only the CUDA stream differs:
// the decoder's copies go on the context's default stream instead of a worker's stream.
#include "libav_decode.h"

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <mutex>
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

using Clock = std::chrono::steady_clock;

// Churn's releaser: frees each frame (or drops its DeviceFrameOwner) on a thread of its
// own, `hold` after it came, and counts those whose decoder had closed by then.
class Releaser {
 public:
  struct Held {
    FramePtr frame;
    std::shared_ptr<media::DeviceFrameOwner> owner;
    std::shared_ptr<const std::atomic<bool>> decoder_open;
  };

  explicit Releaser(std::chrono::microseconds hold) : hold_(hold), thread_([this] { Loop(); }) {}
  ~Releaser() { Finish(); }
  // Frees what is still held, at once, and stops the thread.
  void Finish() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  Releaser(const Releaser&) = delete;
  Releaser& operator=(const Releaser&) = delete;

  void Push(Held h) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back({Clock::now() + hold_, std::move(h)});
    }
    cv_.notify_all();
  }
  uint64_t outlived() const { return outlived_.load(); }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      if (queue_.empty()) {
        if (stop_) return;
        cv_.wait(lock);
        continue;
      }
      if (!stop_ && Clock::now() < queue_.front().due) {
        cv_.wait_until(lock, queue_.front().due);
        continue;
      }
      Held h = std::move(queue_.front().held);
      queue_.pop_front();
      lock.unlock();
      if (!h.decoder_open->load()) outlived_++;
      h.frame.reset();
      h.owner.reset();
      lock.lock();
    }
  }

  struct Entry {
    Clock::time_point due;
    Held held;
  };
  const std::chrono::microseconds hold_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Entry> queue_;
  bool stop_ = false;
  std::atomic<uint64_t> outlived_{0};
  std::thread thread_;  // last: starts once the rest is built
};

class DecodeStream {
 public:
  DecodeStream(int index, const std::vector<uint8_t>& file, const LibavDecodeOptions& o,
               std::shared_ptr<HwDecodeDevice> device)
      : index_(index), o_(o), device_(std::move(device)) {
    reader_.data = &file;
  }

  Status Run() {
    RETURN_IF_ERROR(Open());
    RETURN_IF_ERROR(DecodeUpTo(std::numeric_limits<uint64_t>::max()));
    if (frames_ == 0) return InvalidArgument(o_.input + ": no video frame decoded");
    return OkStatus();
  }

  // Opens, decodes frames_per_open frames (or the whole file, if shorter) and closes, again
  // and again until `deadline`, handing every frame to `releaser`.
  Status Churn(Clock::time_point deadline, Releaser* releaser) {
    releaser_ = releaser;
    while (Clock::now() < deadline) {
      reader_.pos = 0;
      decoder_open_ = std::make_shared<std::atomic<bool>>(true);
      gate_ = std::make_shared<media::SurfaceGate>(media::kMaxHeldDeviceFrames);
      first_of_open_ = true;
      RETURN_IF_ERROR(Open());
      RETURN_IF_ERROR(DecodeUpTo(frames_ + static_cast<uint64_t>(o_.frames_per_open)));
      Close();
      opens_++;
    }
    if (frames_ == 0) return InvalidArgument(o_.input + ": no video frame decoded");
    return OkStatus();
  }

  uint64_t frames() const { return frames_; }
  uint64_t opens() const { return opens_; }
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

  // Decodes until frames() reaches `until` or the file ends (then flushes the decoder).
  Status DecodeUpTo(uint64_t until) {
    ASSIGN_OR_RETURN(PacketPtr pkt, media::AllocPacket());
    ASSIGN_OR_RETURN(frame_, media::AllocFrame());
    int err = 0;
    while (frames_ < until && (err = av_read_frame(in_.get(), pkt.get())) >= 0) {
      if (pkt->stream_index == stream_) err = Send(pkt.get());
      av_packet_unref(pkt.get());
      if (err < 0) return FfmpegError(err, "avcodec_send_packet");
      RETURN_IF_ERROR(Drain(until));
    }
    if (frames_ >= until) return OkStatus();
    if (err != AVERROR_EOF) return FfmpegError(err, "av_read_frame");
    if ((err = Send(nullptr)) < 0) return FfmpegError(err, "avcodec_send_packet(flush)");
    return Drain(until);
  }

  // Under the daemon's discipline a hardware decoder's calls until its first get_format
  // (where FFmpeg's hwaccel creates it) hold the device's lifecycle lock, its frames count
  // in a gate, and a closed one is retired to the device (decoder_lifecycle.h).
  bool Disciplined() const { return device_ != nullptr && releaser_ != nullptr && o_.discipline == "daemon"; }
  int Send(const AVPacket* pkt) {
    media::DecoderLifecycle::Creation creating;
    if (Disciplined() && !hw_.asked) creating = device_->BeginDecoderCreation();
    return avcodec_send_packet(dec_.get(), pkt);
  }
  int Receive() {
    media::DecoderLifecycle::Creation creating;
    if (Disciplined() && !hw_.asked) creating = device_->BeginDecoderCreation();
    return avcodec_receive_frame(dec_.get(), frame_.get());
  }
  void Close() {
    if (Disciplined()) {
      device_->Retire(std::move(dec_), gate_);
    } else {
      dec_.reset();
    }
    decoder_open_->store(false);
    in_.reset();
    avio_.reset();
  }

  Status Drain(uint64_t until) {
    while (frames_ < until) {
      const int err = Receive();
      if (err == AVERROR(EAGAIN) || err == AVERROR_EOF) return OkStatus();
      if (err < 0) return FfmpegError(err, "avcodec_receive_frame");
      if (first_of_open_) {  // each decoder's first frame: where it decoded
        first_of_open_ = false;
        width_ = frame_->width;
        height_ = frame_->height;
        if (device_ != nullptr) RETURN_IF_ERROR(CheckDeviceFrame(*frame_));
      }
      frames_++;
      if (releaser_ == nullptr) {
        av_frame_unref(frame_.get());  // a CUDA surface goes back to the decoder's pool untouched
        continue;
      }
      ASSIGN_OR_RETURN(FramePtr kept, media::AllocFrame());
      av_frame_move_ref(kept.get(), frame_.get());
      Releaser::Held held;
      held.decoder_open = decoder_open_;
      if (Disciplined()) {
        held.owner = std::make_shared<media::DeviceFrameOwner>(device_, std::move(kept), gate_);
      } else {
        held.frame = std::move(kept);
      }
      releaser_->Push(std::move(held));
    }
    return OkStatus();
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
  const std::shared_ptr<HwDecodeDevice> device_;  // null: software decoding
  MemoryReader reader_;
  AvioContextPtr avio_;  // declared before in_, so it outlives it
  InputFormatPtr in_;
  int stream_ = -1;
  CodecContextPtr dec_;
  HwDecodeState hw_;
  FramePtr frame_;
  Releaser* releaser_ = nullptr;  // churn only
  std::shared_ptr<std::atomic<bool>> decoder_open_;
  std::shared_ptr<media::SurfaceGate> gate_;  // churn, daemon discipline: the open decoder's frames
  uint64_t opens_ = 0;
  bool first_of_open_ = true;
  uint64_t frames_ = 0;
  int width_ = 0, height_ = 0;
  std::string decoder_;
};

}  // namespace

StatusOr<LibavDecodeResult> DecodeStreams(const LibavDecodeOptions& o) {
  if (o.streams < 1) return InvalidArgument("--streams must be at least 1");
  if (o.decoder != "cuda" && o.decoder != "cpu") return InvalidArgument("--decoder must be cuda or cpu");
  if (o.threads < 0) return InvalidArgument("--threads must be 0 (FFmpeg's choice) or more");
  if (o.churn_seconds < 0 || o.frames_per_open < 1 || o.hold_ms < 0) {
    return InvalidArgument("--churn-seconds and --hold-ms must be 0 or more, --frames-per-open 1 or more");
  }
  if (o.discipline != "daemon" && o.discipline != "plain") {
    return InvalidArgument("--discipline must be daemon or plain");
  }
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
    std::shared_ptr<HwDecodeDevice> device = devices.empty() ? nullptr : devices[devices.size() == 1 ? 0 : i];
    streams.push_back(std::make_unique<DecodeStream>(i, file, o, std::move(device)));
  }
  std::vector<Status> statuses(streams.size());
  std::unique_ptr<Releaser> releaser;
  if (o.churn_seconds > 0) {
    releaser = std::make_unique<Releaser>(std::chrono::microseconds(static_cast<int64_t>(o.hold_ms * 1e3)));
  }
  const double cpu0 = CpuSeconds();
  const auto t0 = Clock::now();
  const auto deadline = t0 + std::chrono::microseconds(static_cast<int64_t>(o.churn_seconds * 1e6));
  {
    std::vector<std::thread> threads;
    for (size_t i = 0; i < streams.size(); ++i) {
      threads.emplace_back([&, i] {
        statuses[i] = releaser ? streams[i]->Churn(deadline, releaser.get()) : streams[i]->Run();
      });
    }
    for (std::thread& t : threads) t.join();
  }
  LibavDecodeResult r;
  if (releaser) {
    releaser->Finish();  // every frame freed, before the clock stops
    r.outlived_decoder = releaser->outlived();
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  r.cpu_seconds = CpuSeconds() - cpu0;
  for (size_t i = 0; i < streams.size(); ++i) {
    if (!statuses[i].ok()) {
      // The message says which stream when it is about the decoder; say it for the rest too.
      const std::string& m = statuses[i].message();
      if (m.rfind("stream ", 0) == 0) return statuses[i];
      return Status(statuses[i].code(), "stream " + std::to_string(i) + ": " + m);
    }
    r.frames += streams[i]->frames();
    r.opens += streams[i]->opens();
  }
  r.width = streams[0]->width();
  r.height = streams[0]->height();
  r.decoder = streams[0]->decoder();
  return r;
}

}  // namespace conveyor::bench
