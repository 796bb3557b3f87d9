// A Transcode stream's container input (see session.h): bytes from the reactor into the
// byte queue, the decode thread's loop that demuxes and decodes them (DecodeAhead), and
// the pipeline thread's that selects and converts the frames for the worker.
#include "session.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "deinterlace_window.h"
#include "demux_decoder.h"
#include "frame_convert.h"
#include "frame_selection.h"

extern "C" {
#include <libavutil/frame.h>
}

namespace conveyor {
namespace {

// Decoder and demuxer failures are the client's data, except a cancel.
Status AsInputError(const Status& s) {
  if (s.ok()) return s;
  // UNAVAILABLE: the video engines failed a session that requires them (decode gpu).
  if (s.code() == StatusCode::kCancelled || s.code() == StatusCode::kFailedPrecondition ||
      s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kResourceExhausted ||
      s.code() == StatusCode::kUnavailable) {
    return s.WithContext("input");
  }
  return Status(StatusCode::kInvalidArgument, "input: " + s.message());
}

}  // namespace

struct Session::DecodedForPipeline {
  Status status;     // not OK: decoding failed (the last item)
  bool end = false;  // the input ended (the last item)
  media::DecodedFrame frame;
  int64_t pts = 0;       // the frame's, else its number
  int64_t duration = 0;  // the packet's, else one frame at the stream's rate
  // A device frame: its picture moved into its owner, which holds one of the session's
  // surfaces (SurfaceGate) from the moment it is decoded.
  std::shared_ptr<media::DeviceFrameOwner> device_owner;
  media::DeviceFrameView device_view;
};

void Session::RecordDamage(const media::ContainerDecoder& decoder) {
  spooled_bytes_.store(decoder.spooled_bytes());
  const media::InputDamage& d = decoder.damage();
  const uint64_t errors = static_cast<uint64_t>(d.decode_errors);
  const uint64_t before = decode_errors_.exchange(errors);
  if (errors > before) meter_.DecodeErrors(errors - before);
  if (d.truncated && !truncated_.exchange(true)) meter_.InputTruncated();
  std::lock_guard<std::mutex> lock(damage_mu_);
  if (damage_note_.empty() && !d.first_error.empty()) damage_note_ = d.first_error;
}

StatusOr<bool> Session::TryPushContainerRange(const v1::ContainerRange& range, std::vector<uint8_t>& data) {
  if (!job_.container_input) return InvalidArgument("container_range: this job's input is raw frames");
  if (!job_.seekable) {
    return InvalidArgument("container_range: this job's input is not seekable (spec.container.seekable is false); "
                           "send container_chunk");
  }
  if (bytes_in_.load() + data.size() > options_.max_input_bytes) {
    return ResourceExhausted("input exceeds max_session_bytes (" + std::to_string(options_.max_input_bytes) + ")");
  }
  if (job_.input_size > 0 && range.offset() + data.size() > job_.input_size) {
    return InvalidArgument("container_range: bytes " + std::to_string(range.offset()) + ".." +
                           std::to_string(range.offset() + data.size()) + " run past spec.container.size " +
                           std::to_string(job_.input_size));
  }
  const size_t n = data.size();
  StatusOr<media::ByteQueue::PushAt> pushed =
      bytes_.TryPushAt(range.seek_id(), range.offset(), data, range.end_of_input());
  if (!pushed.ok()) return InvalidArgument("container_range." + pushed.status().message());
  if (*pushed == media::ByteQueue::PushAt::kFull) return false;
  bytes_in_ += n;  // stale ranges too: they were moved all the same
  meter_.BytesIn(n);
  Touch();
  if (*pushed == media::ByteQueue::PushAt::kTaken) {
    std::lock_guard<std::mutex> lock(request_mu_);
    if (range.seek_id() == request_id_) request_answered_ = true;
  }
  return true;
}

std::string Session::UnansweredRequest() const {
  std::lock_guard<std::mutex> lock(request_mu_);
  if (request_answered_) return "";
  return "ReadRequest " + std::to_string(request_id_) + " (offset " + std::to_string(request_offset_) +
         ") has had no answer";
}

StatusOr<bool> Session::TryPushContainerBytes(std::vector<uint8_t>& chunk) {
  if (!job_.container_input) return InvalidArgument("container_chunk: this job's input is raw frames");
  if (job_.seekable) {
    return InvalidArgument("container_chunk: this job's input is seekable; send container_range messages");
  }
  if (bytes_in_.load() + chunk.size() > options_.max_input_bytes) {
    return ResourceExhausted("input exceeds max_session_bytes (" + std::to_string(options_.max_input_bytes) + ")");
  }
  const size_t n = chunk.size();
  if (!bytes_.TryPush(chunk)) return false;
  bytes_in_ += n;
  meter_.BytesIn(n);
  Touch();
  return true;
}

void Session::SetDecodeDevice(std::shared_ptr<media::HwDecodeDevice> device, std::string why_none,
                              std::shared_ptr<DecodeBalancer> balancer, int worker) {
  decode_device_ = std::move(device);
  decode_unavailable_ = std::move(why_none);
  decode_balancer_ = std::move(balancer);
  decode_worker_ = worker;
}

int Session::HeldDeviceFrames() const {
  // Frames the session itself holds back wait for frames not yet decoded: the deinterlace
  // window's two (the frame before and the one waiting for its next) and the frame_rate
  // sampler's one. They come on top of decode.held_frames, or decoding could wait for
  // room that only the next decoded frame would make.
  const int held_back = (job_.deinterlace != Job::Deinterlace::kOff ? 2 : 0) + (job_.selection.sampled() ? 1 : 0);
  return options_.held_device_frames + held_back;
}

Status Session::RunContainer() {
  media::DecoderOptions o;
  // The device frames on their way to the worker, those waiting in the hand-off included;
  // the decoder's surfaces are bounded, and a closed hardware decoder is torn down once
  // none is held.
  auto surfaces = std::make_shared<media::SurfaceGate>(HeldDeviceFrames());
  const media::DecodeMode mode = job_.decode.value_or(options_.decode);
  // auto: the balancer may find the engines the bottleneck and this session better on the CPU.
  const std::string balanced_to_cpu =
      mode == media::DecodeMode::kAuto && decode_device_ && decode_balancer_ ? decode_balancer_->Place(decode_worker_)
                                                                             : "";
  if (!balanced_to_cpu.empty()) {
    notes_.push_back("decode: the CPU decodes: " + balanced_to_cpu);
  } else if (mode != media::DecodeMode::kCpu) {
    if (decode_device_) {
      o.hw_device = decode_device_;
      o.hw_required = mode == media::DecodeMode::kGpu;
      o.hw_frames = decode_device_->device_frames() ? options_.decoded_frames : media::DecodedFrames::kHost;
      o.hw_fault_at_packet = options_.decode_fault_at_packet;
      o.hw_held_frames = HeldDeviceFrames();
      o.hw_surfaces = surfaces;
    } else if (mode == media::DecodeMode::kGpu) {
      return FailedPrecondition("decode: gpu: " + (decode_unavailable_.empty()
                                                       ? worker_name_ + " has no video engines to decode on"
                                                       : decode_unavailable_));
    } else if (worker_.is_gpu() && !decode_unavailable_.empty()) {
      notes_.push_back("decode: the CPU decodes: " + decode_unavailable_);
    }
  }
  o.format = job_.format_hint;
  o.threads = options_.decode_threads;
  o.untagged_matrix = options_.untagged_matrix;
  o.strict = job_.strict;
  o.spool_directory = options_.spool_directory;
  o.spool_bytes = options_.spool_bytes;
  if (job_.seekable) {
    o.random_access.enabled = true;
    o.random_access.size = job_.input_size;
    o.random_access.request = [this](uint64_t seek_id, uint64_t offset) {
      {
        std::lock_guard<std::mutex> lock(request_mu_);
        request_id_ = seek_id;
        request_offset_ = offset;
        request_answered_ = false;
      }
      read_requests_++;
      Touch();  // the idle clock runs for the client's answer from here
      v1::TranscodeResponse r;
      r.mutable_read_request()->set_seek_id(seek_id);
      r.mutable_read_request()->set_offset(offset);
      Send(std::move(r));
    };
  }
  o.audio = job_.audio;
  o.keyframes_only = job_.selection.keyframes_only;
  // Pictures past the size limit are refused before FFmpeg allocates them; the exact
  // per-dimension check follows in BeginOutput.
  o.max_pixels = static_cast<int64_t>(options_.limits.max_width) * options_.limits.max_height;
  StatusOr<std::unique_ptr<media::ContainerDecoder>> opened = media::ContainerDecoder::Open(&bytes_, o);
  if (!opened.ok()) return AsInputError(opened.status());
  std::unique_ptr<media::ContainerDecoder> decoder = std::move(opened).value();
  first_frame_.opened = std::chrono::steady_clock::now();
  first_frame_.settle_s = decoder->settle_seconds();
  first_frame_.settle_wait_s = decoder->device_wait_seconds();
  // On every way out, once the decode thread has stopped (the Joiner below goes first): a
  // decoder that started on the video engines is retired to the device's lifecycle
  // thread, whose teardowns so far are logged at debug level with it.
  struct Closer {
    media::ContainerDecoder& decoder;
    const std::shared_ptr<media::HwDecodeDevice>& device;
    const std::string& id;
    ~Closer() {
      if (!decoder.video().hw_decoding || !device) return;
      decoder.Close();
      spdlog::debug("session {}: video decoder retired; the decode device has {} retired decoders waiting for "
                    "teardown, and tore {} down in {:.1f} ms on average",
                    id, device->retired_decoders(), device->decoder_teardowns(),
                    device->decoder_teardowns() > 0
                        ? device->decoder_teardown_seconds() * 1e3 / static_cast<double>(device->decoder_teardowns())
                        : 0.0);
    }
  } closer{*decoder, decode_device_, id_};
  const media::VideoStreamInfo& v = decoder->video();
  meter_.SetCodec(v.codec);
  meter_.SetDecoder(v.hw_decoding);
  decoder_ = v.hw_decoding ? "gpu" : "cpu";
  decoder_api_ = v.hw_decoding ? v.hw_api : "";
  decoder_name_ = v.decoder;
  if (!v.decode_note.empty()) notes_.push_back("decode: the CPU decodes: " + v.decode_note);
  // An auto session on the engines stays movable to the CPU while they are the bottleneck.
  std::shared_ptr<DecodeBalancer::Ticket> ticket;
  if (v.hw_decoding && mode == media::DecodeMode::kAuto && decode_balancer_) {
    ticket = decode_balancer_->Register(decode_worker_);
  }
  const media::AudioStreamInfo* audio = decoder->audio();
  if (job_.audio && audio == nullptr) {
    notes_.push_back("audio_passthrough: the input has no audio stream; the output has video only");
  }
  if (v.frame_rate.num > 0 && v.frame_rate.den > 0 &&
      static_cast<double>(v.frame_rate.num) / v.frame_rate.den > options_.limits.max_frame_rate) {
    return InvalidArgument("input: frame rate " + std::to_string(v.frame_rate.num) + "/" +
                           std::to_string(v.frame_rate.den) + " is above the limit");
  }
  source_start_pts_ = v.start_pts;
  source_duration_ = v.duration;
  source_frames_ = v.frame_count;
  source_time_base_ = v.time_base;
  RETURN_IF_ERROR(BeginOutput(v.width, v.height, v.frame_rate.num, v.frame_rate.den > 0 ? v.frame_rate.den : 1,
                              v.time_base.num, v.time_base.den, v.codec,
                              media::DisplayOrientation{v.orientation, v.rotation_degrees, v.odd_rotation},
                              v.field_order,
                              audio ? audio->codecpar : nullptr, audio ? audio->time_base : AVRational{0, 1}));
  FrameSelection selection(job_.selection, v.time_base.num, v.time_base.den);
  if (audio != nullptr) {
    const AVRational audio_tb = audio->time_base;
    const bool may_seek = job_.selection.start_seconds.has_value();
    decoder->SetAudioSink([this, &selection, audio_tb, may_seek,
                           last_pts = int64_t{AV_NOPTS_VALUE}](const AVPacket& packet) mutable -> Status {
      // The audio of the selected time range only, as the ffmpeg CLI trims both streams.
      if (packet.pts != AV_NOPTS_VALUE && !selection.Covers(packet.pts * av_q2d(audio_tb))) return OkStatus();
      // A seek that went back a second time reads some audio again: it was written already.
      if (may_seek && packet.pts != AV_NOPTS_VALUE) {
        if (last_pts != AV_NOPTS_VALUE && packet.pts <= last_pts) return OkStatus();
        last_pts = packet.pts;
      }
      std::lock_guard<std::mutex> lock(mux_mu_);
      for (auto& m : muxers_) RETURN_IF_ERROR(m->WriteAudio(packet));
      return OkStatus();
    });
  }
  media::FrameConverter converter(options_.untagged_matrix);
  bool have_last_pts = false;
  int64_t last_pts = 0;
  // Unless deinterlacing is off, a frame waits for the next one: the deinterlace stage
  // reads the frames before and after it (auto: only frames flagged interlaced are
  // deinterlaced, but which are is known only as they come).
  const bool may_deinterlace = job_.deinterlace != Job::Deinterlace::kOff;
  DeinterlaceWindow window;
  auto submit = [this](DeinterlaceWindow::Ready&& r) -> Status {
    FrameRequest::Deinterlace d;
    d.enabled = job_.deinterlace == Job::Deinterlace::kOn || r.cur.interlaced;
    if (d.enabled) {
      // As yadif's parity=auto reads it: a frame not flagged interlaced counts as top first.
      d.top_field_first = r.cur.interlaced ? r.cur.top_field_first : true;
      d.prev = r.prev;
      d.next = r.next;
      frames_deinterlaced_++;
    }
    return SubmitKept(KeptFrame{r.cur.view, r.cur.pts, std::move(r.owner), nullptr, d, r.cur.device});
  };
  // frame_rate: the last frame is written up to its end, its pts plus its duration (the
  // packet's, else one frame at the stream's rate), as the ffmpeg CLI ends the fps filter.
  const int64_t rate_duration =
      v.frame_rate.num > 0 && v.frame_rate.den > 0 && v.time_base.num > 0
          ? av_rescale_q(1, AVRational{v.frame_rate.den, v.frame_rate.num}, v.time_base)
          : 0;
  int64_t kept_end = 0;
  // start_seconds on an input that can seek: decoding starts at the keyframe before it.
  // The first frame decoded shows whether the demuxer found one early enough (MPEG-TS
  // searches by dts, and can land a GOP late); if not, the seek goes back a second, then
  // two, ... to the stream's start, and past that to the input's first byte.
  const int64_t stream_start = v.start_pts == AV_NOPTS_VALUE ? 0 : v.start_pts;
  const int64_t start_target =
      decoder->can_seek() ? selection.SeekTarget().value_or(stream_start) : stream_start;
  if (start_target > stream_start) RETURN_IF_ERROR(AsInputError(decoder->SeekBefore(start_target)));
  DecodeHandOff<DecodedForPipeline> hand_off(kDecodeAheadFrames);
  std::atomic<bool> decoding{true};
  std::thread decode_thread([&] {
    DecodedForPipeline last;
    last.status = DecodeAhead(*decoder, v, start_target, rate_duration, surfaces, ticket, hand_off);
    last.end = last.status.ok();
    decoding = false;
    hand_off.Push(std::move(last));
  });
  // On every way out: an end before the input's (frame selection, max_frames, a failure)
  // stops the decode thread, and its reading, before the decoder goes.
  struct Joiner {
    DecodeHandOff<DecodedForPipeline>& hand_off;
    std::atomic<bool>& decoding;
    media::ByteQueue& bytes;
    std::thread& thread;
    void Join() {
      if (!thread.joinable()) return;
      hand_off.Stop();
      if (decoding) bytes.Cancel();  // the input is read no further
      thread.join();
    }
    ~Joiner() { Join(); }
  } joiner{hand_off, decoding, bytes_, decode_thread};
  auto end_input = [&]() -> Status {
    if (auto last = window.Finish()) RETURN_IF_ERROR(submit(std::move(*last)));
    return FinishKept(kept_end);
  };
  for (;;) {
    std::optional<DecodedForPipeline> next = hand_off.Pop();
    if (!next) return Internal("the decode thread stopped without a last word");
    DecodedForPipeline& d = *next;
    if (!d.status.ok()) return d.status;
    if (d.end) {
      joiner.Join();
      RETURN_IF_ERROR(end_input());
      if (frames_in_.load() == 0 && decoder->damage().decode_errors > 0) {
        return InvalidArgument("input: no frame could be decoded (" +
                               std::to_string(decoder->damage().decode_errors) +
                               " decode errors; first: " + decoder->damage().first_error + ")");
      }
      return OkStatus();
    }
    media::DecodedFrame& f = d.frame;
    const int64_t pts = d.pts;
    const FrameSelection::Verdict verdict = selection.Decide(pts);
    if (verdict == FrameSelection::Verdict::kDrop) continue;
    if (verdict == FrameSelection::Verdict::kStop) return end_input();
    std::shared_ptr<void> keepalive;
    StatusOr<media::ConvertedFrame> converted = Status();
    FrameRequest::DeviceInput device;
    if (d.device_owner) {
      // A surface in the worker's device memory: the worker copies it device to device.
      device.enabled = true;
      device.p010 = d.device_view.p010;
      media::ConvertedFrame c;
      c.view = d.device_view.view;
      converted = c;
      keepalive = std::move(d.device_owner);
    } else if (media::PassThroughFormat(f.format)) {
      std::shared_ptr<AVFrame> ref(av_frame_clone(f.frame.get()), [](AVFrame* p) { av_frame_free(&p); });
      if (!ref) return ResourceExhausted("av_frame_clone: out of memory");
      converted = converter.Convert(*ref);
      keepalive = ref;
    } else {
      ASSIGN_OR_RETURN(PixelFormat target, media::EncoderFormatFor(f.format));
      auto buffer = std::make_shared<std::vector<uint8_t>>(PackedFrameSize(target, f.width, f.height));
      converted = converter.Convert(*f.frame, buffer->data(), buffer->size());
      keepalive = buffer;
    }
    if (!converted.ok()) return AsInputError(converted.status());
    if (job_.container_output && have_last_pts && pts <= last_pts) {
      // A muxer takes only increasing pts; the ffmpeg CLI drops such a frame too.
      frames_dropped_++;
      meter_.FrameDropped();
      std::lock_guard<std::mutex> lock(damage_mu_);
      if (damage_note_.empty()) {
        damage_note_ = "frame " + std::to_string(f.number) + " dropped: pts " + std::to_string(pts) +
                       " is not after " + std::to_string(last_pts);
      }
      continue;
    }
    have_last_pts = true;
    last_pts = pts;
    kept_end = pts + d.duration;
    if (!may_deinterlace) {
      RETURN_IF_ERROR(SubmitKept(KeptFrame{converted->view, pts, std::move(keepalive), nullptr, std::nullopt, device}));
    } else if (auto ready = window.Push(
                   {converted->view, pts, std::move(keepalive), f.interlaced, f.top_field_first, device})) {
      RETURN_IF_ERROR(submit(std::move(*ready)));
    }
    // max_frames reached: the input is read no further (the call ends; see JobSpec).
    if (selection.done() || SamplingDone()) return end_input();
  }
}

Status Session::DecodeAhead(media::ContainerDecoder& decoder, const media::VideoStreamInfo& v, int64_t start_target,
                            int64_t rate_duration, const std::shared_ptr<media::SurfaceGate>& surfaces,
                            std::shared_ptr<DecodeBalancer::Ticket>& ticket,
                            DecodeHandOff<DecodedForPipeline>& hand_off) {
  const int64_t stream_start = v.start_pts == AV_NOPTS_VALUE ? 0 : v.start_pts;
  int64_t seek_target = start_target;
  int64_t seek_back = std::max<int64_t>(1, v.time_base.num > 0 ? v.time_base.den / v.time_base.num : 1);
  bool check_seek = start_target > stream_start;
  bool rewound = false;  // SeekToStart done: decoding starts at the input's beginning
  media::DecodedFrame f;
  for (;;) {
    const auto waiting = std::chrono::steady_clock::now();
    while (!surfaces->WaitForRoom(std::chrono::milliseconds(100))) {
      if (hand_off.stopped()) return Status(StatusCode::kCancelled, "the pipeline stopped");
      std::lock_guard<std::mutex> lock(state_mu_);
      if (cancelled_) return failure_;
    }
    const auto decode_start = std::chrono::steady_clock::now();
    surfaces_wait_seconds_ += std::chrono::duration<double>(decode_start - waiting).count();
    const double demuxed_before = decoder.demux_seconds();
    StatusOr<bool> more = decoder.Next(&f);
    const double demux_seconds = decoder.demux_seconds() - demuxed_before;
    const double decode_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - decode_start).count() - demux_seconds;
    demux_seconds_ += demux_seconds;
    decode_seconds_ += decode_seconds;
    RecordDamage(decoder);
    if (ticket) {
      decode_balancer_->Tick(decode_worker_);
      if (ticket->move_requested()) {
        decoder.MoveToSoftwareAtNextKeyframe("the video engines are the bottleneck and CPU cores are idle");
        ticket.reset();
      }
    }
    if (decoder_failover_.empty() && !decoder.hw_failover().empty()) {
      ticket.reset();
      decoder_failover_ = decoder.hw_failover();
      using Reason = metrics::DaemonMetrics::FailoverReason;
      const media::ContainerDecoder::GiveUp why = decoder.hw_give_up();
      meter_.FailedOver(why == media::ContainerDecoder::GiveUp::kMoved    ? Reason::kBalance
                        : why == media::ContainerDecoder::GiveUp::kFormat ? Reason::kFormat
                                                                          : Reason::kError);
      if (why == media::ContainerDecoder::GiveUp::kMoved) {
        spdlog::info("session {}: {}", id_, decoder_failover_);
      } else {
        spdlog::warn("session {}: {}", id_, decoder_failover_);
      }
    }
    if (!more.ok()) return AsInputError(more.status());
    if (!*more) return OkStatus();  // the input's end
    if (f.width != v.width || f.height != v.height) {
      return InvalidArgument("input: frame " + std::to_string(f.number) + " is " + std::to_string(f.width) + "x" +
                             std::to_string(f.height) + ", the stream started at " + std::to_string(v.width) + "x" +
                             std::to_string(v.height) + " (size changes are not supported)");
    }
    if (frames_in_.load() == 0) {
      first_frame_.decoded = std::chrono::steady_clock::now();
      first_frame_.demux_s = demux_seconds_;
      first_frame_.decode_s = decode_seconds_;
    }
    frames_in_++;
    meter_.FrameIn();
    meter_.Decoded(decode_seconds);
    const int64_t pts = f.pts == AV_NOPTS_VALUE ? f.number : f.pts;
    if (check_seek) {
      check_seek = false;
      if (pts > start_target && seek_target > stream_start) {
        seek_target = std::max(stream_start, seek_target - seek_back);
        seek_back *= 2;
        RETURN_IF_ERROR(AsInputError(decoder.SeekBefore(seek_target)));
        check_seek = true;
        continue;
      }
      if (pts > start_target && !rewound) {
        rewound = true;
        const Status to_start = decoder.SeekToStart();
        // A demuxer without byte seeks has an index, which found the GOP already.
        if (to_start.code() != StatusCode::kFailedPrecondition) {
          RETURN_IF_ERROR(AsInputError(to_start));
          continue;
        }
      }
    }
    DecodedForPipeline d;
    d.pts = pts;
    // Read before a device frame's picture moves into its owner below.
    d.duration = f.frame->pkt_duration > 0 ? f.frame->pkt_duration : rate_duration;
    if (f.frame->hw_frames_ctx != nullptr) {
      StatusOr<media::DeviceFrameView> surface = media::ViewOfDeviceFrame(*f.frame, options_.untagged_matrix);
      if (!surface.ok()) return AsInputError(surface.status());
      d.device_view = *surface;
      d.device_owner = std::make_shared<media::DeviceFrameOwner>(decode_device_, std::move(f.frame), surfaces);
    }
    d.frame = std::move(f);
    f = media::DecodedFrame{};
    if (!hand_off.Push(std::move(d))) return Status(StatusCode::kCancelled, "the pipeline stopped");
  }
}

}  // namespace conveyor
