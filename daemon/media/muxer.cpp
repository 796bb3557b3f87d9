// ContainerMuxer: one MJPEG video stream (and optionally one copied audio stream) written
// with libavformat into a write-only AVIOContext that forwards to the sink: non-seekable
// for live output, seekable (offsets tracked here) for a sink that writes a file.
#include "muxer.h"

#include "display_orientation.h"
#include "mov_faststart.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

extern "C" {
#include <libavutil/dict.h>
#include <libavutil/display.h>
#include <libavutil/mathematics.h>
}

namespace conveyor::media {
namespace {

const char* MuxerName(ContainerFormat f) {
  switch (f) {
    case ContainerFormat::kMatroska:
      return "matroska";
    case ContainerFormat::kMov:
      return "mov";
    case ContainerFormat::kAvi:
      return "avi";
  }
  return "?";
}

bool ValidRational(AVRational r) { return r.num > 0 && r.den > 0; }

}  // namespace

const char* ContainerFormatName(ContainerFormat f) { return MuxerName(f); }

ContainerMuxer::ContainerMuxer(const MuxerOptions& options, OffsetSink sink, bool seekable, InsertSink insert)
    : options_(options), sink_(std::move(sink)), seekable_(seekable), insert_(std::move(insert)) {}

ContainerMuxer::~ContainerMuxer() = default;

StatusOr<std::unique_ptr<ContainerMuxer>> ContainerMuxer::Open(const MuxerOptions& options, Sink sink) {
  if (!sink) return InvalidArgument("ContainerMuxer: no sink");
  return OpenAt(
      options, [sink = std::move(sink)](uint64_t, const uint8_t* data, size_t size) { return sink(data, size); },
      false);
}

StatusOr<std::unique_ptr<ContainerMuxer>> ContainerMuxer::OpenAt(const MuxerOptions& options, OffsetSink sink,
                                                                 bool seekable, InsertSink insert) {
  if (!sink) return InvalidArgument("ContainerMuxer: no sink");
  if (options.faststart && (options.format != ContainerFormat::kMov || !seekable || !insert)) {
    return InvalidArgument("ContainerMuxer: faststart is for seekable MOV output with an InsertSink");
  }
  if (options.width <= 0 || options.height <= 0 || options.width > 65535 || options.height > 65535) {
    return InvalidArgument("ContainerMuxer: bad frame size " + std::to_string(options.width) + "x" +
                           std::to_string(options.height));
  }
  if (!ValidRational(options.time_base)) return InvalidArgument("ContainerMuxer: bad time_base");
  if (options.format == ContainerFormat::kAvi && !ValidRational(options.frame_rate)) {
    return InvalidArgument("ContainerMuxer: AVI needs a frame_rate (it has one constant rate)");
  }
  if (options.audio != nullptr && !ValidRational(options.audio_time_base)) {
    return InvalidArgument("ContainerMuxer: audio passthrough needs audio_time_base");
  }
  if (options.avio_buffer_bytes < 4096) return InvalidArgument("ContainerMuxer: avio_buffer_bytes < 4096");
  std::unique_ptr<ContainerMuxer> m(new ContainerMuxer(options, std::move(sink), seekable, std::move(insert)));
  RETURN_IF_ERROR(m->Init());
  return m;
}

int ContainerMuxer::WriteCallback(void* opaque, uint8_t* buf, int size) {
  auto* self = static_cast<ContainerMuxer*>(opaque);
  if (!self->sink_status_.ok()) return AVERROR_EXTERNAL;
  if (size <= 0) return 0;
  self->sink_status_ = self->Give(buf, static_cast<size_t>(size));
  if (!self->sink_status_.ok()) return AVERROR_EXTERNAL;
  self->position_ += static_cast<uint64_t>(size);
  self->size_ = std::max(self->size_, self->position_);
  return size;
}

// Bytes for position_: to the sink, except what faststart keeps (the file's first box
// header, and the moov the trailer writes at the end, which moves to the front).
Status ContainerMuxer::Give(const uint8_t* data, size_t size) {
  if (!options_.faststart) {
    RETURN_IF_ERROR(sink_(position_, data, size));
    bytes_written_ += size;
    return OkStatus();
  }
  for (uint64_t at = position_; at < sizeof(head_) && at < position_ + size; ++at) {
    head_[at] = data[at - position_];
    head_len_ = std::max<size_t>(head_len_, at + 1);
  }
  // The moov's own size fields are written by seeking back within it.
  const uint64_t end = position_ + size;
  const size_t kept = end > moov_at_ ? static_cast<size_t>(end - std::max(position_, moov_at_)) : 0;
  if (size > kept) {
    RETURN_IF_ERROR(sink_(position_, data, size - kept));
    bytes_written_ += size - kept;
  }
  if (kept > 0) {
    const uint64_t from = std::max(position_, moov_at_) - moov_at_;
    if (moov_.size() < from + kept) moov_.resize(from + kept);
    std::memcpy(moov_.data() + from, data + (size - kept), kept);
  }
  return OkStatus();
}

// Called by the AVIOContext after it has flushed its buffer: moves where the next write
// goes. Only a seekable muxer has it.
int64_t ContainerMuxer::SeekCallback(void* opaque, int64_t offset, int whence) {
  auto* self = static_cast<ContainerMuxer*>(opaque);
  int64_t target = 0;
  switch (whence & ~AVSEEK_FORCE) {
    case AVSEEK_SIZE: return static_cast<int64_t>(self->size_);
    case SEEK_SET: target = offset; break;
    case SEEK_CUR: target = static_cast<int64_t>(self->position_) + offset; break;
    case SEEK_END: target = static_cast<int64_t>(self->size_) + offset; break;
    default: return AVERROR(EINVAL);
  }
  // Past the end would leave a hole the client's file fills with zeros; no muxer asks it.
  if (target < 0 || target > static_cast<int64_t>(self->size_)) return AVERROR(EINVAL);
  self->position_ = static_cast<uint64_t>(target);
  return target;
}

Status ContainerMuxer::Failure(int err, const char* call) const {
  if (!sink_status_.ok()) return sink_status_.WithContext(std::string(call) + ": output sink");
  return FfmpegError(err, call);
}

Status ContainerMuxer::Init() {
  const char* name = MuxerName(options_.format);
  AVFormatContext* raw = nullptr;
  int err = avformat_alloc_output_context2(&raw, nullptr, name, nullptr);
  if (err < 0 || raw == nullptr)
    return FfmpegError(err < 0 ? err : AVERROR_MUXER_NOT_FOUND, "avformat_alloc_output_context2");
  format_.reset(raw);
  ASSIGN_OR_RETURN(avio_, AllocAvio(options_.avio_buffer_bytes, true, this, nullptr, &WriteCallback,
                                    seekable_ ? &SeekCallback : nullptr));
  avio_->seekable = seekable_ ? AVIO_SEEKABLE_NORMAL : 0;
  format_->pb = avio_.get();
  format_->flags |= AVFMT_FLAG_CUSTOM_IO;
  ASSIGN_OR_RETURN(packet_, AllocPacket());

  video_ = avformat_new_stream(format_.get(), nullptr);
  if (video_ == nullptr) return ResourceExhausted("avformat_new_stream(video): out of memory");
  AVCodecParameters* par = video_->codecpar;
  par->codec_type = AVMEDIA_TYPE_VIDEO;
  par->codec_id = AV_CODEC_ID_MJPEG;
  par->width = options_.width;
  par->height = options_.height;
  par->format = AV_PIX_FMT_YUVJ420P;
  par->color_range = AVCOL_RANGE_JPEG;  // JFIF is full range
  video_->time_base =
      options_.format == ContainerFormat::kAvi ? av_inv_q(options_.frame_rate) : options_.time_base;
  if (ValidRational(options_.frame_rate)) {
    video_->avg_frame_rate = options_.frame_rate;
    video_->r_frame_rate = options_.frame_rate;
  }
  video_->codecpar->field_order = options_.field_order;
  if (!options_.orientation.identity()) {
    uint8_t* sd = av_stream_new_side_data(video_, AV_PKT_DATA_DISPLAYMATRIX, 9 * sizeof(int32_t));
    if (sd == nullptr) return ResourceExhausted("av_stream_new_side_data(display matrix): out of memory");
    DisplayMatrixOf(options_.orientation, reinterpret_cast<int32_t*>(sd));
  }

  if (options_.audio != nullptr) {
    const AVCodecID id = options_.audio->codec_id;
    if (avformat_query_codec(format_->oformat, id, FF_COMPLIANCE_NORMAL) == 0) {
      return InvalidArgument(std::string(name) + " cannot carry " + avcodec_get_name(id) + " audio");
    }
    audio_ = avformat_new_stream(format_.get(), nullptr);
    if (audio_ == nullptr) return ResourceExhausted("avformat_new_stream(audio): out of memory");
    err = avcodec_parameters_copy(audio_->codecpar, options_.audio);
    if (err < 0) return FfmpegError(err, "avcodec_parameters_copy(audio)");
    audio_->codecpar->codec_tag = 0;  // tags are per container; let the muxer pick
    audio_->time_base = options_.audio_time_base;
  }

  // The muxer consumes the options it knows and leaves the rest in place.
  Dictionaries opts;
  if (options_.format == ContainerFormat::kMov && !seekable_) {
    err = av_dict_set(&opts[0], "movflags", "frag_keyframe+empty_moov+default_base_moof", 0);
    if (err < 0) return FfmpegError(err, "av_dict_set(movflags)");
  }
  err = avformat_write_header(format_.get(), opts.data());
  if (err < 0) return Failure(err, (std::string("avformat_write_header(") + name + ")").c_str());
  if (opts[0] != nullptr) {
    const AVDictionaryEntry* e = av_dict_get(opts[0], "", nullptr, AV_DICT_IGNORE_SUFFIX);
    return Internal(std::string("avformat_write_header(") + name + "): option " + e->key + " not taken");
  }
  return OkStatus();
}

Status ContainerMuxer::Write(AVPacket* packet, const char* call) {
  // With audio the packets must be interleaved by dts, which buffers them; alone, the
  // video goes straight through.
  const int err = audio_ != nullptr ? av_interleaved_write_frame(format_.get(), packet)
                                    : av_write_frame(format_.get(), packet);
  av_packet_unref(packet);
  if (err < 0) return Failure(err, call);
  if (format_->pb->error < 0) return Failure(format_->pb->error, call);
  return OkStatus();
}

Status ContainerMuxer::WriteVideo(const uint8_t* jpeg, size_t size, int64_t pts, int64_t duration) {
  if (finished_) return FailedPrecondition("ContainerMuxer::WriteVideo after Finish");
  if (jpeg == nullptr || size == 0 || size > static_cast<size_t>(INT32_MAX - AV_INPUT_BUFFER_PADDING_SIZE)) {
    return InvalidArgument("ContainerMuxer::WriteVideo: empty or oversized frame");
  }
  if (pts == AV_NOPTS_VALUE) return InvalidArgument("ContainerMuxer::WriteVideo: frame without pts");
  AVPacket* pkt = packet_.get();
  av_packet_unref(pkt);
  if (audio_ != nullptr) {
    // The interleaver keeps the packet past this call, so it needs its own reference.
    const int err = av_new_packet(pkt, static_cast<int>(size));
    if (err < 0) return FfmpegError(err, "av_new_packet");
    std::memcpy(pkt->data, jpeg, size);
  } else {
    pkt->data = const_cast<uint8_t*>(jpeg);  // read only, and only during av_write_frame
    pkt->size = static_cast<int>(size);
  }
  const auto rounding = static_cast<AVRounding>(AV_ROUND_NEAR_INF | AV_ROUND_PASS_MINMAX);
  int64_t ts = av_rescale_q_rnd(pts, options_.time_base, video_->time_base, rounding);
  if (options_.format == ContainerFormat::kAvi && last_video_dts_ != AV_NOPTS_VALUE &&
      ts <= last_video_dts_) {
    ts = last_video_dts_ + 1;  // two frames rounded onto one AVI frame slot
  }
  pkt->pts = ts;
  pkt->dts = ts;
  pkt->duration = duration > 0 ? av_rescale_q(duration, options_.time_base, video_->time_base) : 0;
  pkt->flags |= AV_PKT_FLAG_KEY;
  pkt->stream_index = video_->index;
  pkt->pos = -1;
  RETURN_IF_ERROR(Write(pkt, "av_write_frame(video)"));
  last_video_dts_ = ts;
  // Hand what is complete to the sink now rather than when the buffer fills.
  avio_flush(format_->pb);
  if (format_->pb->error < 0) return Failure(format_->pb->error, "avio_flush");
  return OkStatus();
}

Status ContainerMuxer::WriteAudio(const AVPacket& packet) {
  if (finished_) return FailedPrecondition("ContainerMuxer::WriteAudio after Finish");
  if (audio_ == nullptr) return FailedPrecondition("ContainerMuxer::WriteAudio: opened without audio");
  AVPacket* pkt = packet_.get();
  av_packet_unref(pkt);
  int err = av_packet_ref(pkt, &packet);
  if (err < 0) return FfmpegError(err, "av_packet_ref(audio)");
  av_packet_rescale_ts(pkt, options_.audio_time_base, audio_->time_base);
  pkt->stream_index = audio_->index;
  pkt->pos = -1;
  return Write(pkt, "av_interleaved_write_frame(audio)");
}

Status ContainerMuxer::Finish() {
  if (finished_) return FailedPrecondition("ContainerMuxer::Finish called twice");
  finished_ = true;
  if (options_.faststart) {
    // Everything so far is mdat, once the interleaver has written the packets it holds;
    // the trailer then fixes mdat's size and writes moov at the end, which is kept.
    if (audio_ != nullptr) {
      const int flushed = av_interleaved_write_frame(format_.get(), nullptr);
      if (flushed < 0) return Failure(flushed, "av_interleaved_write_frame(flush)");
    }
    avio_flush(format_->pb);
    if (format_->pb->error < 0) return Failure(format_->pb->error, "avio_flush");
    moov_at_ = size_;
  }
  const int err = av_write_trailer(format_.get());
  if (err < 0) return Failure(err, "av_write_trailer");
  avio_flush(format_->pb);
  if (format_->pb->error < 0) return Failure(format_->pb->error, "avio_flush");
  if (options_.faststart) return MoveMoovToTheFront();
  return OkStatus();
}

// ftyp | wide | mdat (| moov, kept here)  ->  ftyp | moov | wide | mdat: the moov, its
// chunk offsets moved on by its own size, is inserted after ftyp.
Status ContainerMuxer::MoveMoovToTheFront() {
  if (head_len_ < 8 || std::memcmp(head_ + 4, "ftyp", 4) != 0) {
    return Internal("faststart: the MOV does not start with ftyp");
  }
  const uint64_t ftyp_end = (uint64_t{head_[0]} << 24) | (uint64_t{head_[1]} << 16) | (uint64_t{head_[2]} << 8) |
                            head_[3];
  if (ftyp_end < 8 || ftyp_end > moov_at_) return Internal("faststart: ftyp's size is past the mdat");
  ASSIGN_OR_RETURN(std::vector<uint8_t> front, MoovForTheFront(moov_.data(), moov_.size()));
  // The sink has had nothing past moov_at_: the insert moves ftyp_end..moov_at_.
  RETURN_IF_ERROR(insert_(ftyp_end, front.data(), front.size()));
  bytes_written_ += front.size();
  moov_.clear();
  moov_.shrink_to_fit();
  return OkStatus();
}

}  // namespace conveyor::media
