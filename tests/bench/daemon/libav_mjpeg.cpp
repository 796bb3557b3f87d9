// What FFmpeg 5.1's CLI does for `ffmpeg -i IN -c:v mjpeg -q:v Q -f null -`, without
// libavfilter: demux on the calling thread (the CLI starts an input thread only for more
// than one input), decode with "threads auto", convert in one swscale call per frame as the
// auto-inserted scale filter does, encode with "threads auto", and count the packets.
// `ffmpeg -v verbose` here shows each of these choices; the comments name the log line.
#include "libav_mjpeg.h"

#include <chrono>
#include <cstdio>
#include <memory>
#include <utility>

extern "C" {
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
}

#include "ffmpeg_handles.h"

namespace conveyor::bench {
namespace {

using media::CodecContextPtr;
using media::FfmpegError;
using media::FramePtr;
using media::InputFormatPtr;
using media::PacketPtr;
using media::SwsContextPtr;

struct BufferPoolDeleter {
  void operator()(AVBufferPool* p) const { av_buffer_pool_uninit(&p); }
};
using BufferPoolPtr = std::unique_ptr<AVBufferPool, BufferPoolDeleter>;

struct FileCloser {
  void operator()(FILE* f) const { std::fclose(f); }
};
using FilePtr = std::unique_ptr<FILE, FileCloser>;

// The CLI keeps only the full-range formats for mjpeg at the default strictness
// ("picking yuvj420p out of 3 ref:yuv420p") and lavfi picks the least lossy of them.
AVPixelFormat NegotiatedFormat(AVPixelFormat source) {
  static const AVPixelFormat kMjpegFormats[] = {AV_PIX_FMT_YUVJ420P, AV_PIX_FMT_YUVJ422P,
                                                AV_PIX_FMT_YUVJ444P, AV_PIX_FMT_NONE};
  return avcodec_find_best_pix_fmt_of_list(kMjpegFormats, source, 0, nullptr);
}

// vf_scale's parse_yuv_type for its default in_color_matrix "auto": the frame's matrix,
// BT.601 where it names none that swscale has coefficients for.
const int* AutoCoefficients(AVColorSpace space) {
  int s = space;
  if (s < 1 || s > 10 || s == 8) s = AVCOL_SPC_BT470BG;
  return sws_getCoefficients(s);
}

class Pipeline {
 public:
  // `output`, when not null, receives the packets as `-f mjpeg FILE` would write them.
  Pipeline(const LibavMjpegOptions& o, FILE* output, LibavMjpegResult* r) : o_(o), output_(output), r_(r) {}

  Status Run() {
    RETURN_IF_ERROR(OpenInput());
    ASSIGN_OR_RETURN(PacketPtr pkt, media::AllocPacket());
    ASSIGN_OR_RETURN(decoded_, media::AllocFrame());
    ASSIGN_OR_RETURN(out_pkt_, media::AllocPacket());
    int err = 0;
    while ((err = av_read_frame(in_.get(), pkt.get())) >= 0) {
      if (pkt->stream_index == stream_) err = avcodec_send_packet(dec_.get(), pkt.get());
      av_packet_unref(pkt.get());
      if (err < 0) return FfmpegError(err, "avcodec_send_packet");
      RETURN_IF_ERROR(DrainDecoder());
    }
    if (err != AVERROR_EOF) return FfmpegError(err, "av_read_frame");
    if ((err = avcodec_send_packet(dec_.get(), nullptr)) < 0) return FfmpegError(err, "avcodec_send_packet(flush)");
    RETURN_IF_ERROR(DrainDecoder());
    if (!enc_) return InvalidArgument(o_.input + ": no video frame decoded");
    if ((err = avcodec_send_frame(enc_.get(), nullptr)) < 0) return FfmpegError(err, "avcodec_send_frame(flush)");
    return DrainEncoder();
  }

 private:
  Status OpenInput() {
    AVFormatContext* raw = nullptr;
    int err = avformat_open_input(&raw, o_.input.c_str(), nullptr, nullptr);
    if (err < 0) return FfmpegError(err, ("avformat_open_input(" + o_.input + ")").c_str());
    in_.reset(raw);
    // The CLI probes every input the same way before it maps streams.
    if ((err = avformat_find_stream_info(in_.get(), nullptr)) < 0) return FfmpegError(err, "avformat_find_stream_info");
    const AVCodec* codec = nullptr;
    stream_ = av_find_best_stream(in_.get(), AVMEDIA_TYPE_VIDEO, -1, -1, &codec, 0);
    if (stream_ < 0) return FfmpegError(stream_, "av_find_best_stream(video)");
    // Unmapped streams are discarded at the demuxer (-an, and no other stream mapped).
    for (unsigned i = 0; i < in_->nb_streams; ++i) {
      if (static_cast<int>(i) != stream_) in_->streams[i]->discard = AVDISCARD_ALL;
    }
    AVStream* st = in_->streams[stream_];
    dec_.reset(avcodec_alloc_context3(codec));
    if (!dec_) return ResourceExhausted("avcodec_alloc_context3(decoder)");
    if ((err = avcodec_parameters_to_context(dec_.get(), st->codecpar)) < 0) {
      return FfmpegError(err, "avcodec_parameters_to_context");
    }
    dec_->pkt_timebase = st->time_base;
    // The CLI sets "threads" to "auto" unless -threads is given; libavcodec's own default
    // is 1. thread_type stays at its default, so frame threads where the codec has them.
    dec_->thread_count = o_.decoder_threads;
    if ((err = avcodec_open2(dec_.get(), codec, nullptr)) < 0) return FfmpegError(err, "avcodec_open2(decoder)");
    frame_rate_ = av_guess_frame_rate(in_.get(), st, nullptr);
    if (frame_rate_.num <= 0 || frame_rate_.den <= 0) frame_rate_ = {25, 1};  // the CLI's fallback
    r_->decoder = std::string(codec->name) + ", " + std::to_string(dec_->thread_count) + " thread(s)" +
                  (dec_->active_thread_type == FF_THREAD_FRAME ? " (frame)" : "");
    return OkStatus();
  }

  // The filter graph is configured from the first decoded frame, and the encoder from the
  // first filtered one; both happen here, as in the CLI, inside the timed run.
  Status OpenScalerAndEncoder(const AVFrame* f) {
    src_format_ = static_cast<AVPixelFormat>(f->format);
    format_ = NegotiatedFormat(src_format_);
    if (format_ == AV_PIX_FMT_NONE) return InvalidArgument("no mjpeg pixel format for the decoder's output");
    r_->width = f->width;
    r_->height = f->height;
    if (format_ != src_format_) {
      // The auto-inserted scale filter gets no sws_flags from the CLI ("auto_scale_0 ...
      // flags:''"), so swscale's own default, bicubic; its "threads" is the filter graph's
      // count, which is the same auto (CPUs + 1) that 0 asks swscale for.
      sws_.reset(sws_alloc_context());
      if (!sws_) return ResourceExhausted("sws_alloc_context");
      SwsContext* s = sws_.get();
      av_opt_set_int(s, "srcw", f->width, 0);
      av_opt_set_int(s, "srch", f->height, 0);
      av_opt_set_int(s, "src_format", src_format_, 0);
      av_opt_set_int(s, "dstw", f->width, 0);
      av_opt_set_int(s, "dsth", f->height, 0);
      av_opt_set_int(s, "dst_format", format_, 0);
      av_opt_set_int(s, "sws_flags", SWS_BICUBIC, 0);
      av_opt_set_int(s, "threads", 0, 0);
      int err = sws_init_context(s, nullptr, nullptr);
      if (err < 0) return FfmpegError(err, "sws_init_context");
      int64_t threads = 0;
      av_opt_get_int(s, "threads", 0, &threads);
      r_->scaler_threads = static_cast<int>(threads);
      // lavfi's video buffers come from a pool: a buffer returns to it when the
      // frame-threaded encoder lets go of the frame, so nothing is allocated per frame.
      const int size = av_image_get_buffer_size(format_, f->width, f->height, kAlign);
      if (size < 0) return FfmpegError(size, "av_image_get_buffer_size");
      pool_.reset(av_buffer_pool_init(size, av_buffer_allocz));
      if (!pool_) return ResourceExhausted("av_buffer_pool_init");
    }
    ASSIGN_OR_RETURN(scaled_, media::AllocFrame());

    const AVCodec* codec = avcodec_find_encoder_by_name("mjpeg");
    if (codec == nullptr) return FailedPrecondition("libavcodec has no mjpeg encoder");
    enc_.reset(avcodec_alloc_context3(codec));
    if (!enc_) return ResourceExhausted("avcodec_alloc_context3(mjpeg)");
    AVCodecContext* e = enc_.get();
    e->width = f->width;
    e->height = f->height;
    e->sample_aspect_ratio = f->sample_aspect_ratio;
    e->pix_fmt = format_;
    e->framerate = frame_rate_;
    e->time_base = av_inv_q(frame_rate_);
    e->bits_per_raw_sample = FFMIN(dec_->bits_per_raw_sample, av_pix_fmt_desc_get(format_)->comp[0].depth);
    // -q:v Q, exactly as ffmpeg_opt.c sets it.
    e->flags |= AV_CODEC_FLAG_QSCALE;
    e->global_quality = FF_QP2LAMBDA * o_.q;
    e->thread_count = 0;  // "threads auto", as for the decoder
    int err = avcodec_open2(e, codec, nullptr);
    if (err < 0) return FfmpegError(err, "avcodec_open2(mjpeg)");
    r_->encoder_threads = e->thread_count;
    return OkStatus();
  }

  Status DrainDecoder() {
    for (;;) {
      int err = avcodec_receive_frame(dec_.get(), decoded_.get());
      if (err == AVERROR(EAGAIN) || err == AVERROR_EOF) return OkStatus();
      if (err < 0) return FfmpegError(err, "avcodec_receive_frame");
      if (!enc_) RETURN_IF_ERROR(OpenScalerAndEncoder(decoded_.get()));
      if (decoded_->width != r_->width || decoded_->height != r_->height || decoded_->format != src_format_) {
        return Unimplemented("the stream changes size or format mid-way; the CLI would reconfigure");
      }
      Status st = EncodeOne(decoded_.get());
      av_frame_unref(decoded_.get());
      RETURN_IF_ERROR(st);
    }
  }

  Status Scale(AVFrame* in) {
    AVFrame* out = scaled_.get();
    out->buf[0] = av_buffer_pool_get(pool_.get());
    if (out->buf[0] == nullptr) return ResourceExhausted("av_buffer_pool_get");
    int err = av_image_fill_arrays(out->data, out->linesize, out->buf[0]->data, format_, in->width, in->height, kAlign);
    if (err < 0) return FfmpegError(err, "av_image_fill_arrays");
    out->width = in->width;
    out->height = in->height;
    out->format = format_;
    if ((err = av_frame_copy_props(out, in)) < 0) return FfmpegError(err, "av_frame_copy_props");
    // vf_scale re-reads the frame's matrix and range for every frame: its default
    // in_color_matrix is "auto", and the output matrix follows the input one.
    int *inv_table = nullptr, *table = nullptr;
    int in_full = 0, out_full = 0, brightness = 0, contrast = 0, saturation = 0;
    sws_getColorspaceDetails(sws_.get(), &inv_table, &in_full, &table, &out_full, &brightness, &contrast, &saturation);
    const int* coefficients = AutoCoefficients(in->colorspace);
    if (in->color_range != AVCOL_RANGE_UNSPECIFIED) in_full = in->color_range == AVCOL_RANGE_JPEG;
    sws_setColorspaceDetails(sws_.get(), coefficients, in_full, coefficients, out_full, brightness, contrast,
                             saturation);
    out->color_range = out_full ? AVCOL_RANGE_JPEG : AVCOL_RANGE_MPEG;
    if ((err = sws_scale_frame(sws_.get(), out, in)) < 0) return FfmpegError(err, "sws_scale_frame");
    return OkStatus();
  }

  Status EncodeOne(AVFrame* decoded) {
    AVFrame* frame = decoded;
    if (sws_) {
      RETURN_IF_ERROR(Scale(decoded));
      frame = scaled_.get();
    }
    // The CLI's do_video_out: quality carries -q:v per frame, the picture type is left to
    // the encoder. mjpeg is intra-only, so a frame counter serves as the pts (the encoder
    // only needs it to increase).
    frame->quality = enc_->global_quality;
    frame->pict_type = AV_PICTURE_TYPE_NONE;
    frame->pts = next_pts_++;
    int err = avcodec_send_frame(enc_.get(), frame);
    if (frame == scaled_.get()) av_frame_unref(frame);
    if (err < 0) return FfmpegError(err, "avcodec_send_frame");
    return DrainEncoder();
  }

  Status DrainEncoder() {
    for (;;) {
      int err = avcodec_receive_packet(enc_.get(), out_pkt_.get());
      if (err == AVERROR(EAGAIN) || err == AVERROR_EOF) return OkStatus();
      if (err < 0) return FfmpegError(err, "avcodec_receive_packet");
      r_->frames++;
      r_->bytes += out_pkt_->size;
      if (output_ != nullptr &&
          std::fwrite(out_pkt_->data, 1, out_pkt_->size, output_) != static_cast<size_t>(out_pkt_->size)) {
        av_packet_unref(out_pkt_.get());
        return Internal("writing " + o_.output);
      }
      av_packet_unref(out_pkt_.get());
    }
  }

  static constexpr int kAlign = 64;  // lavfi's buffers are aligned for the widest SIMD

  const LibavMjpegOptions& o_;
  FILE* output_;
  LibavMjpegResult* r_;
  InputFormatPtr in_;
  int stream_ = -1;
  CodecContextPtr dec_, enc_;
  AVRational frame_rate_{0, 1};
  AVPixelFormat src_format_ = AV_PIX_FMT_NONE, format_ = AV_PIX_FMT_NONE;
  SwsContextPtr sws_;
  BufferPoolPtr pool_;
  FramePtr decoded_, scaled_;
  PacketPtr out_pkt_;
  int64_t next_pts_ = 0;
};

}  // namespace

StatusOr<LibavMjpegResult> TranscodeToMjpeg(const LibavMjpegOptions& options) {
  if (options.q < 1 || options.q > 31) return InvalidArgument("q must be in 1..31 (mjpeg's qscale range)");
  FilePtr out;
  if (!options.output.empty()) {
    out.reset(std::fopen(options.output.c_str(), "wb"));
    if (!out) return InvalidArgument("cannot open " + options.output + " for writing");
  }
  LibavMjpegResult result;
  const auto t0 = std::chrono::steady_clock::now();
  {
    Pipeline p(options, out.get(), &result);
    RETURN_IF_ERROR(p.Run());
  }  // the CLI's timing also covers tearing down its threads
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return result;
}

}  // namespace conveyor::bench
