// ContainerDecoder's hardware decoding: offering the worker's device to the video
// decoder, and settling, before the first frame, whether FFmpeg's hwaccel took it.
#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "demux_decoder.h"

extern "C" {
#include <libavutil/pixdesc.h>
}

namespace conveyor::media {
namespace {

// Packets fed while waiting for get_format; every decoder the engines take asks for its
// format at its first sequence header, so this is far more than a real stream needs.
constexpr size_t kMaxSettlePackets = 256;

std::string StreamShape(const AVCodecContext* c) {
  const char* profile = avcodec_profile_name(c->codec_id, c->profile);
  const char* format = av_get_pix_fmt_name(c->sw_pix_fmt != AV_PIX_FMT_NONE ? c->sw_pix_fmt : c->pix_fmt);
  return std::string(c->codec ? c->codec->name : "?") + (profile ? std::string(" ") + profile : "") + ", " +
         (format ? format : "unknown format") + ", " + std::to_string(c->coded_width) + "x" +
         std::to_string(c->coded_height);
}

}  // namespace

// keyframes_only (DecoderOptions) needs nothing here: FFmpeg's hwaccel decodes through the
// same codec context as software, and its decoders (h264, hevc, vp9, av1, mpeg2) apply
// skip_frame while parsing, before a picture is handed to the engines, so a discarded
// frame never reaches NVDEC or VCN and costs only its parsing.
StatusOr<bool> ContainerDecoder::OfferHardware(const AVCodec* decoder) {
  video_codec_ = decoder;
  const HwDecodeDevice* device = options_.hw_device.get();
  if (device == nullptr) return false;
  video_.hw_api = device->api();
  if (DecoderTakes(decoder, device->type(), &video_.decode_note)) return true;
  if (options_.hw_required) return FailedPrecondition("decode: gpu: " + video_.decode_note);
  return false;
}

Status ContainerDecoder::SettleHardware() {
  const auto start = std::chrono::steady_clock::now();
  struct Timer {  // on every way out
    std::chrono::steady_clock::time_point start;
    double* seconds;
    ~Timer() { *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); }
  } timer{start, &settle_seconds_};
  std::vector<PacketPtr> sent;
  keep_sent_ = &sent;
  Status fed;
  while (fed.ok() && !hw_state_.asked && !draining_ && sent.size() < kMaxSettlePackets) fed = FeedDecoder();
  keep_sent_ = nullptr;
  RETURN_IF_ERROR(fed);
  if (hw_state_.hardware) {
    video_.hw_decoding = true;
    return OkStatus();
  }
  if (hw_state_.refused) {
    video_.decode_note = std::string("FFmpeg's ") + options_.hw_device->api() + " hwaccel does not take " +
                         StreamShape(codec_.get());
  } else if (video_.decode_note.empty()) {
    video_.decode_note = hw_state_.asked ? "the decoder chose a software format"
                                         : "the decoder did not ask for a format within " +
                                               std::to_string(sent.size()) + " packets";
  }
  if (options_.hw_required) return FailedPrecondition("decode: gpu: " + video_.decode_note);
  // Decoded on the CPU after all, with the usual threads: a fresh decoder takes the
  // packets again from the first.
  RETURN_IF_ERROR(OpenCodec(video_codec_, format_->streams[video_.index], false));
  for (PacketPtr& p : sent) {
    const int err = SendToCodec(p.get());
    if (err < 0 && err != AVERROR(EAGAIN)) RETURN_IF_ERROR(DecodeError(err, "avcodec_send_packet"));
    // EAGAIN: a frame is waiting; the packets before it were enough for it, and this
    // one is lost. It cannot happen before the first frame of a real stream: every
    // decoder here emits its first frame only after get_format.
  }
  if (draining_) {
    const int err = SendToCodec(nullptr);
    if (err < 0 && err != AVERROR_EOF) return Failure(err, "avcodec_send_packet(drain)");
  }
  return OkStatus();
}

bool ContainerDecoder::EngineFailure(int err) const {
  // FFmpeg's nvdec returns AVERROR_UNKNOWN when CUVID fails to decode or map a picture,
  // ENOMEM when it has no decoder surface left; vaapi returns EIO.
  return hw_state_.hardware && err != AVERROR_INVALIDDATA && err != AVERROR_PATCHWELCOME &&
         err != AVERROR(EAGAIN) && err != AVERROR_EOF;
}

Status ContainerDecoder::FailOver(const std::string& what) {
  const std::string where = what + " at video packet " + std::to_string(std::max<int64_t>(video_packets_ - 1, 0));
  if (options_.hw_required) return Unavailable("decode: gpu: the video engine failed: " + where);
  // The frames the hardware decoder still held are lost with it; a fresh software decoder
  // can only start at a keyframe, so the packets before the next one are skipped.
  ++damage_.decode_errors;
  if (moving_) {  // failed while draining for a move: the new decoder starts at the held keyframe
    hw_failover_ = "the video engine failed (" + where + ") while decoding moved to the CPU";
    hw_give_up_ = GiveUp::kError;
    Remember(hw_failover_);
    return FinishMove();
  }
  RETURN_IF_ERROR(OpenCodec(video_codec_, format_->streams[video_.index], false));
  hw_state_ = HwDecodeState{};
  hw_failover_ = "the video engine failed (" + where + "); the CPU decodes from the next keyframe";
  hw_give_up_ = GiveUp::kError;
  Remember(hw_failover_);
  resync_ = !draining_;
  if (draining_) {
    const int err = SendToCodec(nullptr);
    if (err < 0 && err != AVERROR_EOF) return Failure(err, "avcodec_send_packet(drain)");
  }
  return OkStatus();
}

void ContainerDecoder::MoveToSoftwareAtNextKeyframe(std::string why) {
  if (!moving_ && !draining_ && !finished_) move_why_ = std::move(why);
}

Status ContainerDecoder::StartMove(AVPacket* keyframe) {
  // Drain the current decoder; Next() opens the new one once every frame before this
  // keyframe is out, and sends it the keyframe.
  held_keyframe_.reset(av_packet_clone(keyframe));
  av_packet_unref(keyframe);
  if (!held_keyframe_) return ResourceExhausted("av_packet_clone: out of memory");
  moving_ = true;
  const int err = SendToCodec(nullptr);
  if (err < 0 && err != AVERROR_EOF) return Failure(err, "avcodec_send_packet(drain before a move)");
  return OkStatus();
}

Status ContainerDecoder::FinishMove() {
  RETURN_IF_ERROR(OpenCodec(video_codec_, format_->streams[video_.index], false));
  hw_state_ = HwDecodeState{};
  moving_ = false;
  if (hw_failover_.empty()) {
    hw_failover_ = "decoding moved to the CPU at video packet " + std::to_string(video_packets_ - 1) + ": " + move_why_;
    hw_give_up_ = GiveUp::kMoved;
  }
  move_why_.clear();
  PacketPtr keyframe = std::move(held_keyframe_);
  const int err = SendToCodec(keyframe.get());
  if (err < 0) return DecodeError(err, "avcodec_send_packet");
  return OkStatus();
}

StatusOr<bool> ContainerDecoder::PlaceFrame(DecodedFrame* out) {
  if (out->frame->hw_frames_ctx == nullptr) {
    if (hw_frames_seen_) RETURN_IF_ERROR(NoteSoftwareFrames(frames_));
    return true;
  }
  hw_frames_seen_ = true;
  if (out->frame->format == AV_PIX_FMT_CUDA && out->frame->data[0] == nullptr) {
    // nvdec outputs a frame it could not start (no free surface) without a picture. The
    // frame goes before its decoder closes, so that it does not outlive it.
    av_frame_unref(out->frame.get());
    RETURN_IF_ERROR(FailOver("the video engine gave a frame without a surface"));
    return false;
  }
  if (options_.hw_frames == DecodedFrames::kDevice) return true;
  StatusOr<FramePtr> host = TransferToHost(*out->frame);
  if (!host.ok()) {
    av_frame_unref(out->frame.get());
    RETURN_IF_ERROR(FailOver(host.status().message()));
    return false;
  }
  out->frame = std::move(host).value();
  return true;
}

Status ContainerDecoder::NoteSoftwareFrames(int64_t frame_number) {
  if (!hw_failover_.empty()) return OkStatus();
  const std::string what = "the video engines do not take the stream from frame " + std::to_string(frame_number) +
                           " on (" + StreamShape(codec_.get()) + ")";
  if (options_.hw_required) return FailedPrecondition("decode: gpu: " + what);
  hw_failover_ = what + "; the CPU decodes it";
  hw_give_up_ = GiveUp::kFormat;
  return OkStatus();
}

Status ContainerDecoder::FlushPendingAudio() {
  for (PacketPtr& p : pending_audio_) RETURN_IF_ERROR(audio_sink_(*p));
  pending_audio_.clear();
  return OkStatus();
}

}  // namespace conveyor::media
