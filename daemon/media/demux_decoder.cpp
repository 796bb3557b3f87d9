// ContainerDecoder: opening the input (the AVIOContext over the ByteQueue, in
// demux_decoder_io.cpp), the best video stream's decoder with frame and slice threads, and the
// send/receive loop with draining.
#include "demux_decoder.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

extern "C" {
#include <libavutil/avstring.h>
#include <libavutil/dict.h>
#include <libavutil/pixdesc.h>
}

namespace conveyor::media {
namespace {

std::string CodecName(AVCodecID id) {
  const char* name = avcodec_get_name(id);
  return name != nullptr ? name : "unknown";
}

// Nested inputs (playlists, concat lists, external MOV references) would open URLs or
// files on the daemon's host on a client's say-so; the media layer reads one stream only.
int RefuseIoOpen(AVFormatContext*, AVIOContext**, const char*, int, AVDictionary**) { return AVERROR(EPERM); }

}  // namespace

std::string DefaultInputFormats() { return "mov,matroska,avi,mpegts,mpeg,mpegvideo,h264,hevc,mjpeg,ivf,obu"; }

std::vector<AVCodecID> DefaultVideoCodecs() {
  return {AV_CODEC_ID_H264,       AV_CODEC_ID_HEVC,   AV_CODEC_ID_VP9,  AV_CODEC_ID_AV1,
          AV_CODEC_ID_MPEG2VIDEO, AV_CODEC_ID_PRORES, AV_CODEC_ID_MJPEG};
}

double DecodedFrame::seconds() const {
  if (pts == AV_NOPTS_VALUE || time_base.den == 0) return std::numeric_limits<double>::quiet_NaN();
  return static_cast<double>(pts) * av_q2d(time_base);
}

ContainerDecoder::ContainerDecoder(ByteQueue* input, const DecoderOptions& options)
    : input_(input), options_(options) {}

ContainerDecoder::~ContainerDecoder() { CloseCodec(); }

void ContainerDecoder::CloseCodec() {
  if (!codec_) return;
  if (!hw_offered_ || options_.hw_device == nullptr) {
    codec_.reset();
    return;
  }
  // A hardware decoder's teardown waits, on the device's lifecycle thread, for its frames
  // and for a moment when no other decoder is being created (decoder_lifecycle.h).
  options_.hw_device->Retire(std::move(codec_), options_.hw_surfaces);
}

DecoderLifecycle::Creation ContainerDecoder::BeginCreation() {
  const auto waiting = std::chrono::steady_clock::now();
  DecoderLifecycle::Creation creation = options_.hw_device->BeginDecoderCreation();
  device_wait_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - waiting).count();
  return creation;
}

int ContainerDecoder::SendToCodec(const AVPacket* packet) {
  DecoderLifecycle::Creation creating;  // the hwaccel creates its decoder at the first get_format
  if (hw_offered_ && !hw_state_.asked) creating = BeginCreation();
  return avcodec_send_packet(codec_.get(), packet);
}

int ContainerDecoder::ReceiveFromCodec(AVFrame* frame) {
  DecoderLifecycle::Creation creating;
  if (hw_offered_ && !hw_state_.asked) creating = BeginCreation();
  return avcodec_receive_frame(codec_.get(), frame);
}

StatusOr<std::unique_ptr<ContainerDecoder>> ContainerDecoder::Open(ByteQueue* input,
                                                                   const DecoderOptions& options) {
  if (input == nullptr) return InvalidArgument("ContainerDecoder: no input queue");
  if (options.avio_buffer_bytes < 4096) return InvalidArgument("ContainerDecoder: avio_buffer_bytes < 4096");
  std::unique_ptr<ContainerDecoder> d(new ContainerDecoder(input, options));
  DemuxErrorCapture capture(&d->demux_errors_);
  RETURN_IF_ERROR(d->OpenInput());
  RETURN_IF_ERROR(d->OpenVideoDecoder());
  if (d->hw_offered_) RETURN_IF_ERROR(d->SettleHardware());
  return d;
}

Status ContainerDecoder::OpenCodec(const AVCodec* decoder, const AVStream* st, bool hardware) {
  CloseCodec();
  CodecContextPtr ctx(avcodec_alloc_context3(decoder));
  if (!ctx) return ResourceExhausted("avcodec_alloc_context3: out of memory");
  int err = avcodec_parameters_to_context(ctx.get(), st->codecpar);
  if (err < 0) return FfmpegError(err, "avcodec_parameters_to_context");
  ctx->pkt_timebase = st->time_base;
  ctx->thread_count = options_.threads;
  ctx->thread_type = FF_THREAD_FRAME | FF_THREAD_SLICE;
  if (options_.max_pixels > 0) ctx->max_pixels = options_.max_pixels;  // also bounds size changes mid-stream
  if (options_.keyframes_only) ctx->skip_frame = AVDISCARD_NONKEY;
  if (hardware) RETURN_IF_ERROR(AttachHwDevice(ctx.get(), *options_.hw_device, &hw_state_, options_.hw_held_frames));
  err = avcodec_open2(ctx.get(), decoder, nullptr);
  if (err < 0) return FfmpegError(err, (std::string("avcodec_open2(") + decoder->name + ")").c_str());
  codec_ = std::move(ctx);
  hw_offered_ = hardware;
  return OkStatus();
}

Status ContainerDecoder::Failure(int err, const char* call) const {
  if (input_->cancelled()) return Status(StatusCode::kCancelled, std::string(call) + ": input cancelled");
  if (!io_failure_.ok()) return io_failure_.WithContext(call);
  if (moov_at_end_) {
    return FailedPrecondition(
        std::string("input is an MP4/MOV with its moov atom after mdat, which cannot be "
                    "demuxed from a stream: ") +
        kMoovAtEndAdvice);
  }
  return FfmpegError(err, call);
}

Status ContainerDecoder::OpenInput() {
  const AVInputFormat* hint = nullptr;
  if (!options_.format.empty()) {
    hint = av_find_input_format(options_.format.c_str());
    if (hint == nullptr) return InvalidArgument("unknown input format '" + options_.format + "'");
    if (!options_.input_formats.empty() &&
        av_match_list(hint->name, options_.input_formats.c_str(), ',') <= 0) {
      return InvalidArgument("input format '" + options_.format + "' is not accepted (" +
                             options_.input_formats + ")");
    }
  }
  ASSIGN_OR_RETURN(avio_,
                   AllocAvio(options_.avio_buffer_bytes, false, this, &ReadCallback, nullptr, &SeekCallback));
  avio_->seekable = 0;
  ASSIGN_OR_RETURN(packet_, AllocPacket());

  UnopenedInputPtr ctx(avformat_alloc_context());
  if (!ctx) return ResourceExhausted("avformat_alloc_context: out of memory");
  ctx->pb = avio_.get();
  ctx->flags |= AVFMT_FLAG_CUSTOM_IO;
  // No nested inputs: io_open refuses them here, and the protocol whitelist, which
  // demuxers that open a second AVFormatContext (concat) copy into it, allows no protocol.
  ctx->io_open = &RefuseIoOpen;
  ctx->protocol_whitelist = av_strdup("none");
  if (ctx->protocol_whitelist == nullptr) return ResourceExhausted("av_strdup: out of memory");
  if (!options_.input_formats.empty()) {
    ctx->format_whitelist = av_strdup(options_.input_formats.c_str());
    if (ctx->format_whitelist == nullptr) return ResourceExhausted("av_strdup: out of memory");
  }
  if (options_.probe_bytes > 0) ctx->probesize = options_.probe_bytes;
  // Never read the end of a stream only to estimate its duration (MPEG-TS/PS would, on a
  // seekable input): a request and its bytes for a number nobody uses.
  ctx->skip_estimate_duration_from_pts = 1;
  if (options_.analyze_us > 0) ctx->max_analyze_duration = options_.analyze_us;
  // avformat_open_input owns the context from here, and frees it if it fails (leaving our
  // AVIOContext alone).
  AVFormatContext* raw = ctx.release();
  int err = avformat_open_input(&raw, nullptr, hint, nullptr);
  if (err < 0) {
    if (input_->bytes_read() == 0 && input_->closed() && !input_->cancelled()) {
      return InvalidArgument("avformat_open_input: the input is empty");
    }
    if (err == AVERROR(EINVAL) && !options_.input_formats.empty() && !moov_at_end_ && !input_->cancelled()) {
      // What FFmpeg returns for a format off the whitelist (it only logs which one).
      return InvalidArgument("avformat_open_input: Invalid argument (is the input in an accepted format? " +
                             options_.input_formats + ")");
    }
    return Failure(err, "avformat_open_input");
  }
  format_.reset(raw);
  // find_stream_info decodes a frame or so of each stream with decoders of its own: give
  // them the pixel bound too, or they allocate whatever size the header claims.
  Dictionaries probe_options(format_->nb_streams);
  if (options_.max_pixels > 0) {
    for (unsigned i = 0; i < format_->nb_streams; ++i) {
      av_dict_set_int(&probe_options[i], "max_pixels", options_.max_pixels, 0);
    }
  }
  err = avformat_find_stream_info(format_.get(), probe_options.data());
  if (err < 0) return Failure(err, "avformat_find_stream_info");
  return CheckPictureSizes();
}

Status ContainerDecoder::CheckPictureSizes() const {
  if (options_.max_pixels <= 0) return OkStatus();
  for (unsigned i = 0; i < format_->nb_streams; ++i) {
    const AVCodecParameters* par = format_->streams[i]->codecpar;
    if (par->codec_type != AVMEDIA_TYPE_VIDEO) continue;
    if (static_cast<int64_t>(par->width) * par->height > options_.max_pixels) {
      return InvalidArgument("input video size " + std::to_string(par->width) + "x" + std::to_string(par->height) +
                             " (stream " + std::to_string(i) + ") is above the limit of " +
                             std::to_string(options_.max_pixels) + " pixels");
    }
  }
  return OkStatus();
}

Status ContainerDecoder::OpenVideoDecoder() {
  AVFormatContext* fmt = format_.get();
  const AVCodec* decoder = nullptr;
  const int index = av_find_best_stream(fmt, AVMEDIA_TYPE_VIDEO, -1, -1, &decoder, 0);
  if (index == AVERROR_STREAM_NOT_FOUND) {
    return InvalidArgument(std::string("the input (") + fmt->iformat->name + ") has no video stream");
  }
  if (index < 0 && index != AVERROR_DECODER_NOT_FOUND) return Failure(index, "av_find_best_stream(video)");
  // av_find_best_stream reports a missing decoder without the stream; find that stream.
  const int video_index =
      index >= 0 ? index : av_find_best_stream(fmt, AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
  if (video_index < 0) return Failure(video_index, "av_find_best_stream(video)");
  AVStream* st = fmt->streams[video_index];
  const AVCodecID id = st->codecpar->codec_id;
  const auto& accepted = options_.video_codecs;
  if (!accepted.empty() && std::find(accepted.begin(), accepted.end(), id) == accepted.end()) {
    return Status(StatusCode::kUnimplemented, "video codec " + CodecName(id) + " is not accepted");
  }
  if (decoder == nullptr) {
    return Status(StatusCode::kUnimplemented,
                  "no decoder for video codec " + CodecName(id) + " in this FFmpeg");
  }

  ASSIGN_OR_RETURN(const bool hardware, OfferHardware(decoder));
  RETURN_IF_ERROR(OpenCodec(decoder, st, hardware));

  size_t matrix_size = 0;
  const uint8_t* matrix = av_stream_get_side_data(st, AV_PKT_DATA_DISPLAYMATRIX, &matrix_size);
  const DisplayOrientation display = DisplayOrientationOf(matrix, matrix_size);
  stream_rotation_ = display.rotation_degrees;

  video_.index = video_index;
  video_.container = fmt->iformat->name;
  video_.codec = CodecName(id);
  video_.decoder = decoder->name;
  video_.width = st->codecpar->width;
  video_.height = st->codecpar->height;
  video_.pix_fmt = static_cast<AVPixelFormat>(st->codecpar->format);
  video_.time_base = st->time_base;
  video_.start_pts = st->start_time;
  video_.duration = st->duration > 0    ? st->duration
                    : fmt->duration > 0 ? av_rescale_q(fmt->duration, AV_TIME_BASE_Q, st->time_base) : 0;
  video_.frame_count = std::max<int64_t>(st->nb_frames, 0);
  video_.frame_rate = av_guess_frame_rate(fmt, st, nullptr);
  video_.sample_aspect = av_guess_sample_aspect_ratio(fmt, st, nullptr);
  video_.rotation_degrees = stream_rotation_;
  video_.orientation = display.orientation;
  video_.field_order = st->codecpar->field_order;
  video_.odd_rotation = display.odd_angle;

  if (options_.audio) {
    const int audio_index = av_find_best_stream(fmt, AVMEDIA_TYPE_AUDIO, -1, video_index, nullptr, 0);
    if (audio_index >= 0) {
      AVStream* ast = fmt->streams[audio_index];
      audio_ =
          AudioStreamInfo{audio_index, CodecName(ast->codecpar->codec_id), ast->codecpar, ast->time_base};
    }
  }
  // Let the demuxer drop everything else as early as it can.
  for (unsigned i = 0; i < fmt->nb_streams; ++i) {
    const int s = static_cast<int>(i);
    if (s != video_index && !(audio_ && s == audio_->index)) fmt->streams[i]->discard = AVDISCARD_ALL;
  }
  return OkStatus();
}

InputDamage ContainerDecoder::damage() const {
  InputDamage d = damage_;
  d.decode_errors += demux_errors_.count;
  if (d.first_error.empty()) d.first_error = demux_errors_.first;
  return d;
}

Status ContainerDecoder::CheckStrictDemux() const {
  if (!options_.strict || demux_errors_.count == 0) return OkStatus();
  return InvalidArgument("the demuxer reported an error: " + demux_errors_.first);
}

void ContainerDecoder::Remember(const std::string& what) {
  if (damage_.first_error.empty()) damage_.first_error = what;
}

Status ContainerDecoder::DecodeError(int err, const char* call) {
  if (options_.strict || err == AVERROR(ENOMEM) || input_->cancelled()) return Failure(err, call);
  ++damage_.decode_errors;
  Remember(FfmpegError(err, call).message() + " (video packet " + std::to_string(video_packets_ - 1) + ")");
  return OkStatus();
}

Status ContainerDecoder::EndOfReadableInput(int err, const char* call) {
  // A spool past its bound or a client gone is no damage of the input: those fail.
  if (options_.strict || input_->cancelled() || moov_at_end_ || !io_failure_.ok()) return Failure(err, call);
  damage_.truncated = true;
  Remember(FfmpegError(err, call).message() + " after " + std::to_string(video_packets_) + " video packets");
  return OkStatus();
}

Status ContainerDecoder::Drain() {
  draining_ = true;
  const int err = SendToCodec(nullptr);
  if (err < 0 && err != AVERROR_EOF) return Failure(err, "avcodec_send_packet(drain)");
  return OkStatus();
}

// The demuxer reached the end without an error: was the input whole?
Status ContainerDecoder::CheckWholeInput(bool error_at_end) {
  const int64_t indexed = format_->streams[video_.index]->nb_frames;
  std::string why;
  if (error_at_end) {
    why = "the demuxer met the end inside an element: " + demux_errors_.first;
  } else if (last_packet_cut_) {
    why = "the last video packet is cut short";
  } else if (std::strcmp(format_->iformat->name, "mpegts") == 0 && input_->bytes_read() % 188 != 0 &&
             input_->bytes_read() % 192 != 0 && input_->bytes_read() % 204 != 0) {
    // A transport stream is whole packets of 188 bytes (192 in M2TS, 204 with FEC);
    // the demuxer drops a partial last one without a word.
    why = "the transport stream ends inside a packet (" + std::to_string(input_->bytes_read()) + " bytes)";
  } else if (indexed > 0 && video_packets_ < indexed && !sought_) {
    why = "the container lists " + std::to_string(indexed) + " video packets and " +
          std::to_string(video_packets_) + " arrived";
  }
  if (why.empty()) return OkStatus();
  if (options_.strict) return InvalidArgument("the input is truncated: " + why);
  damage_.truncated = true;
  Remember("truncated: " + why);
  return OkStatus();
}

// Reads packets until one video packet (or, at the end of the input, the drain signal)
// went to the decoder. Audio packets met on the way go to the sink. A packet the decoder
// refuses is skipped (DecodeError), as the ffmpeg CLI skips it.
Status ContainerDecoder::FeedDecoder() {
  AVPacket* pkt = packet_.get();
  for (;;) {
    const int64_t demux_errors_before = demux_errors_.count;
    const auto reading = std::chrono::steady_clock::now();
    int err = av_read_frame(format_.get(), pkt);
    demux_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - reading).count();
    if (err == AVERROR_EOF) {
      // The demuxer says EOF for a read error too; tell the two apart.
      if (input_->cancelled()) return Status(StatusCode::kCancelled, "av_read_frame: input cancelled");
      // A seek that failed (a client gone, a spool past its bound) reads as the end.
      if (!io_failure_.ok()) return Failure(AVERROR(EIO), "av_read_frame");
      RETURN_IF_ERROR(CheckStrictDemux());
      if (format_->pb != nullptr && format_->pb->error < 0 && format_->pb->error != AVERROR_EOF) {
        RETURN_IF_ERROR(EndOfReadableInput(format_->pb->error, "av_read_frame"));
      } else {
        // An error logged by the read that found the end: the input stops inside an
        // element (Matroska's "File ended prematurely").
        RETURN_IF_ERROR(CheckWholeInput(demux_errors_.count > demux_errors_before));
      }
      return Drain();
    }
    if (err < 0) {
      // The ffmpeg CLI, too, ends an input on a read error and keeps what it decoded.
      RETURN_IF_ERROR(EndOfReadableInput(err, "av_read_frame"));
      return Drain();
    }
    RETURN_IF_ERROR(CheckStrictDemux());
    if (pkt->stream_index == video_.index) {
      ++video_packets_;
      // A corrupt packet (cut short, or the demuxer saw damage) still goes to the decoder,
      // as the ffmpeg CLI sends it; one cut short at the very end is a truncation.
      last_packet_cut_ = (pkt->flags & AV_PKT_FLAG_CORRUPT) != 0;
      if (last_packet_cut_) {
        if (options_.strict) {
          av_packet_unref(pkt);
          return InvalidArgument("video packet " + std::to_string(video_packets_ - 1) + " is corrupt");
        }
        ++damage_.decode_errors;
        Remember("video packet " + std::to_string(video_packets_ - 1) + " is corrupt");
      }
      if (resync_) {  // after a failover: the software decoder starts at a keyframe
        if ((pkt->flags & AV_PKT_FLAG_KEY) == 0) {
          ++damage_.decode_errors;
          av_packet_unref(pkt);
          continue;
        }
        resync_ = false;
      }
      if (!move_why_.empty() && !moving_ && keep_sent_ == nullptr && (pkt->flags & AV_PKT_FLAG_KEY) != 0) {
        return StartMove(pkt);
      }
      if (hw_state_.hardware && video_packets_ - 1 == options_.hw_fault_at_packet) {
        av_packet_unref(pkt);
        RETURN_IF_ERROR(FailOver("a fault injected for tests (hw_fault_at_packet)"));
        continue;
      }
      if (keep_sent_ != nullptr) {  // SettleHardware may send them again to a software decoder
        PacketPtr copy(av_packet_clone(pkt));
        if (!copy) return ResourceExhausted("av_packet_clone: out of memory");
        keep_sent_->push_back(std::move(copy));
      }
      err = SendToCodec(pkt);
      av_packet_unref(pkt);
      if (err < 0 && keep_sent_ == nullptr && EngineFailure(err)) {
        RETURN_IF_ERROR(FailOver(FfmpegError(err, "avcodec_send_packet").message()));
        continue;
      }
      if (err < 0) {
        RETURN_IF_ERROR(DecodeError(err, "avcodec_send_packet"));
        continue;
      }
      return OkStatus();
    }
    Status sunk;
    if (audio_ && pkt->stream_index == audio_->index) {
      if (audio_sink_) {
        sunk = FlushPendingAudio();
        if (sunk.ok()) sunk = audio_sink_(*pkt);
      } else if (pending_audio_.size() < kMaxPendingAudio) {
        // Read before the sink was set (SettleHardware reads while Open runs): kept for it.
        PacketPtr copy(av_packet_clone(pkt));
        if (copy) pending_audio_.push_back(std::move(copy));
      }
    }
    av_packet_unref(pkt);
    RETURN_IF_ERROR(sunk);
  }
}

void ContainerDecoder::FillFrame(DecodedFrame* out) {
  const AVFrame* f = out->frame.get();
  out->pts = f->best_effort_timestamp != AV_NOPTS_VALUE ? f->best_effort_timestamp : f->pts;
  out->time_base = video_.time_base;
  out->number = frames_++;
  out->width = f->width;
  out->height = f->height;
  out->format = static_cast<AVPixelFormat>(f->format);
  out->color = ColorOf(*f, options_.untagged_matrix);
  out->sample_aspect = f->sample_aspect_ratio.num != 0 ? f->sample_aspect_ratio : video_.sample_aspect;
  out->interlaced = f->interlaced_frame != 0;
  out->top_field_first = f->top_field_first != 0;
  const AVFrameSideData* sd = av_frame_get_side_data(f, AV_FRAME_DATA_DISPLAYMATRIX);
  out->rotation_degrees = sd != nullptr ? DisplayOrientationOf(sd->data, sd->size).rotation_degrees : stream_rotation_;
}

StatusOr<bool> ContainerDecoder::Next(DecodedFrame* out) {
  if (out == nullptr) return InvalidArgument("ContainerDecoder::Next: no output frame");
  DemuxErrorCapture capture(&demux_errors_);
  if (!out->frame) {
    ASSIGN_OR_RETURN(out->frame, AllocFrame());
  }
  if (audio_sink_) RETURN_IF_ERROR(FlushPendingAudio());
  for (;;) {
    if (finished_) return false;
    const int err = ReceiveFromCodec(out->frame.get());
    if (err >= 0) {
      receive_errors_in_a_row_ = 0;
      ASSIGN_OR_RETURN(const bool kept, PlaceFrame(out));
      if (!kept) continue;
      FillFrame(out);
      const AVFrame* f = out->frame.get();
      if (f->decode_error_flags != 0 || (f->flags & AV_FRAME_FLAG_CORRUPT) != 0) {
        if (options_.strict) return InvalidArgument("frame " + std::to_string(out->number) + " is damaged");
        ++damage_.decode_errors;
        Remember("frame " + std::to_string(out->number) + " decoded with concealed damage");
      }
      return true;
    }
    if (err == AVERROR_EOF && moving_) {
      RETURN_IF_ERROR(FinishMove());
      continue;
    }
    if (err == AVERROR_EOF) {
      finished_ = true;
      return false;
    }
    if (err != AVERROR(EAGAIN) && EngineFailure(err)) {
      RETURN_IF_ERROR(FailOver(FfmpegError(err, "avcodec_receive_frame").message()));
      continue;
    }
    if (err != AVERROR(EAGAIN)) {
      // A frame the decoder could not finish; the next call goes on with the next one. A
      // decoder that only fails would loop here: that ends the input.
      RETURN_IF_ERROR(DecodeError(err, "avcodec_receive_frame"));
      if (++receive_errors_in_a_row_ > kMaxReceiveErrorsInARow) return Failure(err, "avcodec_receive_frame");
      continue;
    }
    if (draining_ || moving_) return Internal("avcodec_receive_frame: decoder asked for input after the drain");
    RETURN_IF_ERROR(FeedDecoder());
  }
}

}  // namespace conveyor::media
